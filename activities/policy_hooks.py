"""The HTTP side of a DisruptionPolicy: the pre-disruption hook, notifications, and the watch over a disruption's
terminations that escalation acts on (docs/semantics.md §15).

A hook answer other than 2xx fails the attempt (retryable), so Temporal's retry policy is the backoff; the
workflow bounds the whole by ackTimeout. Notifications are best effort: the workflow gives them few attempts.

The POST is the standard library's (`urllib.request`, in a thread): aiohttp's client cost every worker start 0.18
CPU-s to import (its TLS contexts are built at import) for a call only pools with a DisruptionPolicy hook make.
Redirects are followed as before (a 301/302/303 answer turns the POST into a GET, as aiohttp did).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import time
import urllib.error
import urllib.request
from typing import Any

from temporalio import activity
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.exceptions import ApplicationError

from contracts.errors import ErrorType
from contracts.policy import HookCall, Notification, TerminationBlocker, WatchInput
from gateways.kube import KubeClient
from telemetry import metrics

HTTP_TIMEOUT = 10.0  # seconds, for the connection and for each read of the answer
UNREACHABLE = (urllib.error.URLError, http.client.HTTPException, OSError)  # no HTTP answer (TimeoutError: an OSError)
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no HTTP(S)_PROXY, as aiohttp's default
DO_NOT_DISRUPT = "DoNotDisrupt"  # PodState.status of a pod the drain leaves for its annotation


def _pod_names(pods: list[dict[str, Any]]) -> list[str]:
    out = []
    for p in pods:
        meta = p.get("metadata") or {}
        owners = meta.get("ownerReferences") or []
        if any(o.get("kind") == "DaemonSet" for o in owners):
            continue  # not displaced: a DaemonSet pod goes with its node
        out.append(f"{meta.get('namespace', '')}/{meta.get('name', '')}")
    return sorted(out)


def _post_json(url: str, body: dict[str, Any]) -> int:
    """POST `body` as JSON; the answer's status, a non-2xx one included (it is an answer, not an outage)."""
    if not url.lower().startswith(("http://", "https://")):  # the API admits no other; urllib would open file:
        raise urllib.error.URLError(f"{url!r} is not an http:// or https:// URL")
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json", "Accept": "application/json"})
    try:
        with _OPENER.open(req, timeout=HTTP_TIMEOUT) as resp:
            resp.read()
            return int(resp.status)
    except urllib.error.HTTPError as exc:  # a URLError that carries an answer: the caller judges its status
        exc.read()
        return int(exc.code)


class PolicyHookActivities:
    """Clients come in: the Kubernetes gateway (the pods in a hook's body) and the Temporal client (the watch)."""

    def __init__(self, kube: KubeClient, temporal_client: Client | None = None) -> None:
        self._kube = kube
        self._client = temporal_client

    async def _post(self, url: str, body: dict[str, Any], hook: str) -> int:
        try:
            status = await asyncio.to_thread(_post_json, url, body)
        except UNREACHABLE:
            metrics.POLICY_HOOK_CALLS.labels(hook=hook, result="unreachable").inc()
            raise
        metrics.POLICY_HOOK_CALLS.labels(hook=hook, result="ok" if 200 <= status < 300 else "refused").inc()
        return status

    @activity.defn(name="policy_pre_disruption_hook")
    async def pre_disruption_hook(self, call: HookCall) -> int:
        """POST {node, pool, reason, pods, deadline}; a non-2xx answer or no answer fails the attempt (retried)."""
        pods = _pod_names(await asyncio.to_thread(self._kube.list_node_pods, call.node))
        body = {"node": call.node, "pool": call.pool, "reason": call.reason, "pods": pods,
                "deadline": call.deadline.isoformat() if call.deadline else None, "workflowId": call.workflow_id}
        try:
            status = await self._post(call.url, body, "preDisruption")
        except UNREACHABLE as exc:
            raise ApplicationError(f"pre-disruption hook {call.url} unreachable: {exc}",
                                   type=ErrorType.HOOK_REFUSED.value) from exc
        if not 200 <= status < 300:
            raise ApplicationError(f"pre-disruption hook {call.url} answered {status}",
                                   type=ErrorType.HOOK_REFUSED.value)
        return status

    @activity.defn(name="policy_notify")
    async def notify(self, n: Notification) -> int:
        """POST one post-event notification (started, finished, failed, blocked, forced)."""
        body = {"event": n.kind.value, "nodes": n.nodes, "pool": n.pool, "reason": n.reason, "message": n.message,
                "workflowId": n.workflow_id, "policy": n.policy}
        try:
            status = await self._post(n.url, body, "notify")
        except UNREACHABLE as exc:
            raise ApplicationError(f"notify {n.url} unreachable: {exc}") from exc
        if not 200 <= status < 300:
            raise ApplicationError(f"notify {n.url} answered {status}")
        return status

    @activity.defn(name="policy_watch_terminations")
    async def watch_terminations(self, inp: WatchInput) -> list[TerminationBlocker]:
        """Wait up to `return_after_seconds` for the terminations to close; describe those still draining."""
        client = self._client or activity.client()
        end = time.monotonic() + max(inp.return_after_seconds, 0.0)
        pending = list(inp.workflow_ids)
        while True:
            pending = [wid for wid in pending if await _running(client, wid)]
            activity.heartbeat(len(pending))
            if not pending or time.monotonic() >= end:
                break
            await asyncio.sleep(min(inp.poll_seconds, max(end - time.monotonic(), 0.0)))
        return [await _blocker(client, wid) for wid in pending]


async def _running(client: Client, wid: str) -> bool:
    desc = await client.get_workflow_handle(wid).describe()
    if desc.status == WorkflowExecutionStatus.RUNNING:
        return True
    if desc.status not in (WorkflowExecutionStatus.COMPLETED, WorkflowExecutionStatus.CONTINUED_AS_NEW):
        raise ApplicationError(f"termination {wid} ended {desc.status.name}",
                               type=ErrorType.TERMINATION_FAILED.value, non_retryable=True)
    return False


async def _blocker(client: Client, wid: str) -> TerminationBlocker:
    """What keeps a termination from finishing, from its `progress` query (a failed query still names it)."""
    try:
        p = await client.get_workflow_handle(wid).query("progress")
    except Exception as exc:  # e.g. it closed meanwhile: nothing to report but its id
        activity.logger.info("progress of %s unavailable: %s", wid, exc)
        return TerminationBlocker(workflow_id=wid)
    pods = p.get("pods") or [] if isinstance(p, dict) else []
    return TerminationBlocker(workflow_id=wid, node=(p or {}).get("node_name", ""), pods=len(pods),
                              pdbs=sorted((p or {}).get("blocking_pdbs") or []),
                              do_not_disrupt=sum(1 for x in pods if x.get("status") == DO_NOT_DISRUPT))

