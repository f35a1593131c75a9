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

from workflows import search_attributes as sa
from workflows.models import TerminationInput
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
    """Start (or join) `terminate-<uid>`. With `signal` (e.g. "force_signal") it is signal-with-start."""
    kwargs: dict[str, Any] = {}
    if signal:
        kwargs["start_signal"] = signal
        kwargs["start_signal_args"] = [signal_arg] if signal_arg is not None else []
    return await client.start_workflow(
        TerminationWorkflow.run, inp, id=workflow_id(inp.node_uid), task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        search_attributes=search_attributes_for(inp),
        static_summary=f"terminate {inp.node_name} ({inp.reason})"[:200],
        static_details=(f"node `{inp.node_name}` uid `{inp.node_uid}`, claim `{inp.node_claim_name}`, "
                        f"pool `{inp.node_pool}`, provider `{inp.provider_id}`, requested by `{inp.requested_by}`"),
        **kwargs,
    )
