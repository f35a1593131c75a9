"""Connecting to Temporal and starting terminations: the one entry point every starter uses.

`connect()` reads flags or NODEFLOW_TEMPORAL_* env and always installs the pydantic data converter.
`start_termination()` is idempotent per node: id `terminate-<node uid>`, conflict policy USE_EXISTING,
so the watcher, a disruption and an interruption asking at once share one workflow.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from temporalio.client import Client, TLSConfig, WorkflowHandle
from temporalio.common import (
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import WorkflowAlreadyStartedError

from workflows import search_attributes as sa
from workflows.models import Phase, TerminationInput
from workflows.termination import TerminationWorkflow, workflow_id

DEFAULT_ADDRESS = "localhost:7233"
DEFAULT_NAMESPACE = "default"


def _read(path: str | None) -> bytes | None:
    return Path(path).read_bytes() if path else None


async def connect(address: str | None = None, namespace: str | None = None, *, tls: bool | None = None,
                  tls_cert: str | None = None, tls_key: str | None = None, tls_ca: str | None = None,
                  tls_server_name: str | None = None, api_key: str | None = None,
                  identity: str | None = None) -> Client:
    """A Temporal client. Unset arguments come from NODEFLOW_TEMPORAL_{ADDRESS,NAMESPACE,API_KEY,TLS,
    TLS_CERT,TLS_KEY,TLS_CA,TLS_SERVER_NAME}; an API key or any TLS file turns TLS on (Temporal Cloud)."""
    env = os.environ.get
    address = address or env("NODEFLOW_TEMPORAL_ADDRESS") or DEFAULT_ADDRESS
    namespace = namespace or env("NODEFLOW_TEMPORAL_NAMESPACE") or DEFAULT_NAMESPACE
    api_key = api_key or env("NODEFLOW_TEMPORAL_API_KEY") or None
    tls_cert = tls_cert or env("NODEFLOW_TEMPORAL_TLS_CERT") or None
    tls_key = tls_key or env("NODEFLOW_TEMPORAL_TLS_KEY") or None
    tls_ca = tls_ca or env("NODEFLOW_TEMPORAL_TLS_CA") or None
    tls_server_name = tls_server_name or env("NODEFLOW_TEMPORAL_TLS_SERVER_NAME") or None
    if tls is None:
        flag = (env("NODEFLOW_TEMPORAL_TLS") or "").lower()
        tls = flag in ("1", "true", "yes") or bool(api_key or tls_cert or tls_ca)
    tls_config: bool | TLSConfig = False
    if tls:
        if tls_cert or tls_key or tls_ca or tls_server_name:
            tls_config = TLSConfig(server_root_ca_cert=_read(tls_ca), client_cert=_read(tls_cert),
                                   client_private_key=_read(tls_key), domain=tls_server_name)
        else:
            tls_config = True
    kwargs: dict[str, Any] = {}
    if identity:
        kwargs["identity"] = identity
    return await Client.connect(address, namespace=namespace, tls=tls_config, api_key=api_key,
                                data_converter=pydantic_data_converter, **kwargs)


def search_attributes_for(inp: TerminationInput) -> TypedSearchAttributes:
    pairs = [SearchAttributePair(sa.NODE, inp.node_name), SearchAttributePair(sa.REASON, inp.reason),
             SearchAttributePair(sa.PHASE, "Pending")]
    if inp.node_pool:
        pairs.append(SearchAttributePair(sa.NODE_POOL, inp.node_pool))
    return TypedSearchAttributes(pairs)


async def start_termination(client: Client, inp: TerminationInput, signal: str | None = None,
                            signal_arg: Any = None, task_queue: str = sa.TASK_QUEUE
                            ) -> WorkflowHandle[TerminationWorkflow, Any]:
    """Start (or join) `terminate-<uid>`. With `signal` (e.g. "force_signal") it is signal-with-start.

    A running termination is joined (USE_EXISTING). A finished one is not run again, so a watcher pass that
    saw the node a moment before its finalizer went cannot start a second run; only a termination that ended
    Cancelled (the node lives on) may be started anew.
    """
    try:
        return await _start(client, inp, signal, signal_arg, task_queue,
                            WorkflowIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY)
    except WorkflowAlreadyStartedError:
        previous = client.get_workflow_handle_for(TerminationWorkflow.run, workflow_id(inp.node_uid))
        result = await previous.result()
        if result.phase != Phase.CANCELLED:
            return previous
        return await _start(client, inp, signal, signal_arg, task_queue, WorkflowIDReusePolicy.ALLOW_DUPLICATE)


async def _start(client: Client, inp: TerminationInput, signal: str | None, signal_arg: Any, task_queue: str,
                 reuse: WorkflowIDReusePolicy) -> WorkflowHandle[TerminationWorkflow, Any]:
    kwargs: dict[str, Any] = {}
    if signal:
        kwargs["start_signal"] = signal
        kwargs["start_signal_args"] = [signal_arg] if signal_arg is not None else []
    return await client.start_workflow(
        TerminationWorkflow.run, inp, id=workflow_id(inp.node_uid), task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING, id_reuse_policy=reuse,
        search_attributes=search_attributes_for(inp),
        static_summary=f"terminate {inp.node_name} ({inp.reason})"[:200],
        request_eager_start=not signal,  # the watcher shares the worker's client: first task without a poll
        static_details=(f"node `{inp.node_name}` uid `{inp.node_uid}`, claim `{inp.node_claim_name}`, "
                        f"pool `{inp.node_pool}`, provider `{inp.provider_id}`, requested by `{inp.requested_by}`"),
        **kwargs,
    )


# ---- helpers shared by `nodeflow status|force|cancel` ------------------------------------------------------


async def connect_from_args(args: Any) -> Client:
    from starter.output import CliError

    try:
        return await connect(args.address, args.namespace, api_key=getattr(args, "api_key", None))
    except Exception as exc:
        where = args.address or os.environ.get("NODEFLOW_TEMPORAL_ADDRESS") or DEFAULT_ADDRESS
        raise CliError(f"cannot reach Temporal at {where}: {exc} (set --address or NODEFLOW_TEMPORAL_ADDRESS)") from exc


def termination_query(node: str | None = None, running_only: bool = True) -> str:
    parts = ["WorkflowType = 'TerminationWorkflow'"]
    if running_only:
        parts.append("ExecutionStatus = 'Running'")
    if node:
        parts.append(f"{sa.NODE.name} = '{node.replace(chr(39), '')}'")
    return " AND ".join(parts)


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
    from starter.output import CliError

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
