"""Temporal helpers of `nodeflow status|force|cancel`: connect with an actionable error, find a node's drain."""

from __future__ import annotations

import os
import sys
from typing import Any

from temporalio.client import Client, WorkflowHandle

from client.connection import DEFAULT_ADDRESS, connect
from client.termination import termination_query
from starter.kubeconfig import api_client, resolve
from starter.output import CliError
from workflows.termination import TerminationWorkflow, workflow_id


async def connect_from_args(args: Any) -> Client:
    """A client for --address/--namespace/--api-key; `args.temporal_client`, when set (the watch loop's), is reused."""
    cached = getattr(args, "temporal_client", None)
    if cached is not None:
        return cached
    try:
        return await connect(args.address, args.namespace, api_key=getattr(args, "api_key", None))
    except Exception as exc:
        where = args.address or os.environ.get("NODEFLOW_TEMPORAL_ADDRESS") or DEFAULT_ADDRESS
        raise CliError(f"cannot reach Temporal at {where}: {exc} (set --address or NODEFLOW_TEMPORAL_ADDRESS)") from exc


class NoTerminationError(CliError):
    """NODE has no running termination (`nodeflow cancel` then looks for a disruption that includes it)."""


def node_uid_from_cluster(kubeconfig: str | None, node: str, context: str | None = None) -> str | None:
    """NODE's uid in the cluster; None when no kubeconfig is configured, the node is not there, or the cluster
    cannot be read (said on stderr: the caller then searches Temporal by name)."""
    from kubernetes import client as k8s

    if not kubeconfig:
        return None
    try:
        api = api_client(kubeconfig, context)
    except CliError as exc:
        print(f"warning: {exc}; searching Temporal by node name", file=sys.stderr)
        return None
    try:
        return k8s.CoreV1Api(api).read_node(node, _request_timeout=5).metadata.uid
    except k8s.ApiException as exc:
        if exc.status != 404:
            print(f"warning: reading node {node} from {api.configuration.host}: {exc.status} {exc.reason}; "
                  "searching Temporal by node name", file=sys.stderr)
        return None
    except Exception as exc:  # unreachable server, TLS, auth plugin: the name search still works
        print(f"warning: cannot reach the cluster at {api.configuration.host} ({type(exc).__name__}); "
              "searching Temporal by node name", file=sys.stderr)
        return None
    finally:
        api.close()


async def find_termination(client: Client, node: str, kubeconfig: str | None = None, context: str | None = None
                           ) -> WorkflowHandle[TerminationWorkflow, Any]:
    """The running termination of `node`: by its uid when the resolved kubeconfig's cluster has the node (exact,
    and visible before Temporal's search index is), else by the NodeflowNode search attribute."""
    uid = node_uid_from_cluster(resolve(kubeconfig), node, context)
    if uid is not None:
        handle = client.get_workflow_handle_for(TerminationWorkflow.run, workflow_id(uid))
        try:
            desc = await handle.describe()
        except Exception as exc:
            raise NoTerminationError(f"no termination for node {node} (workflow {workflow_id(uid)}): {exc}") from exc
        if desc.status is None or desc.status.name != "RUNNING":
            status = desc.status.name if desc.status else "?"
            raise NoTerminationError(f"the termination of node {node} is not running (status {status})")
        return handle
    async for wf in client.list_workflows(termination_query(node)):
        return client.get_workflow_handle_for(TerminationWorkflow.run, wf.id, run_id=wf.run_id)
    raise NoTerminationError(f"no termination in flight for node {node}; "
                             f"start one with `kubectl delete node {node} --wait=false`")
