"""Temporal helpers of `nodeflow status|force|cancel`: connect with an actionable error, find a node's drain."""

from __future__ import annotations

import os
from typing import Any

from temporalio.client import Client, WorkflowHandle

from client.connection import DEFAULT_ADDRESS, connect
from client.termination import termination_query
from starter.output import CliError
from workflows.termination import TerminationWorkflow, workflow_id


async def connect_from_args(args: Any) -> Client:
    try:
        return await connect(args.address, args.namespace, api_key=getattr(args, "api_key", None))
    except Exception as exc:
        where = args.address or os.environ.get("NODEFLOW_TEMPORAL_ADDRESS") or DEFAULT_ADDRESS
        raise CliError(f"cannot reach Temporal at {where}: {exc} (set --address or NODEFLOW_TEMPORAL_ADDRESS)") from exc


def node_uid_from_cluster(kubeconfig: str, node: str) -> str | None:
    from kubernetes import client as k8s
    from kubernetes import config as k8s_config

    api = k8s_config.new_client_from_config(config_file=kubeconfig)
    try:
        return k8s.CoreV1Api(api).read_node(node).metadata.uid
    except k8s.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    finally:
        api.close()


async def find_termination(client: Client, node: str, kubeconfig: str | None = None
                           ) -> WorkflowHandle[TerminationWorkflow, Any]:
    """The running termination of `node`: by uid from the cluster, else by the NodeflowNode search attribute."""
    if kubeconfig:
        uid = node_uid_from_cluster(kubeconfig, node)
        if uid is None:
            raise CliError(f"node {node} not found in the cluster (already terminated?)")
        handle = client.get_workflow_handle_for(TerminationWorkflow.run, workflow_id(uid))
        try:
            desc = await handle.describe()
        except Exception as exc:
            raise CliError(f"no termination for node {node} (workflow {workflow_id(uid)}): {exc}") from exc
        if desc.status is None or desc.status.name != "RUNNING":
            status = desc.status.name if desc.status else "?"
            raise CliError(f"the termination of node {node} is not running (status {status})")
        return handle
    async for wf in client.list_workflows(termination_query(node)):
        return client.get_workflow_handle_for(TerminationWorkflow.run, wf.id, run_id=wf.run_id)
    raise CliError(f"no termination in flight for node {node}; start one with `kubectl delete node {node}`")
