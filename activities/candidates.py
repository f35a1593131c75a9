"""Activities on a disruption's candidate nodes: mark them (taint), unmark them, hand them to termination.

The taint `karpenter.sh/disrupted:NoSchedule` keeps new pods off a node while its replacement comes up;
removing it is the rollback. Deleting a candidate means starting its TerminationWorkflow.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from temporalio import activity
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.exceptions import ApplicationError

from activities.kube_util import api_status, to_dict
from api import labels
from workflows.disruption_models import AwaitTerminationsInput, NodeRef, TaintInput, TerminationsInput

DISRUPTED_TAINT = {"key": labels.DISRUPTED_TAINT_KEY, "effect": labels.DISRUPTED_TAINT_EFFECT}
CONFLICT_RETRIES = 5

# Starts (or joins) one node's TerminationWorkflow on a task queue and returns its workflow id; the worker's
# wiring binds it to `client.termination.start_termination`, so this module never imports the client side.
StartTermination = Callable[[Any, str], Awaitable[str]]


def with_disrupted_taint(taints: list[dict[str, Any]], now: datetime | None = None) -> list[dict[str, Any]]:
    """The taint list with exactly one disrupted taint (a same-key taint with other effect is replaced).

    `timeAdded` lets the planner tell a taint left behind by a failed disruption from a fresh one.
    """
    ours = [t for t in taints if t.get("key") == labels.DISRUPTED_TAINT_KEY
            and t.get("effect") == labels.DISRUPTED_TAINT_EFFECT and not t.get("value")]
    if ours:
        return [t for t in taints if t.get("key") != labels.DISRUPTED_TAINT_KEY or t is ours[0]]
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return [t for t in taints if t.get("key") != labels.DISRUPTED_TAINT_KEY] + [dict(DISRUPTED_TAINT,
                                                                                     timeAdded=stamp)]


def without_disrupted_taint(taints: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [t for t in taints if t.get("key") != labels.DISRUPTED_TAINT_KEY]


class CandidateActivities:
    """Taint/untaint through CoreV1Api; start and await terminations through the Temporal client."""

    def __init__(self, core_v1: Any, start_termination: StartTermination,
                 temporal_client: Client | None = None) -> None:
        self._core = core_v1
        self._start_termination = start_termination
        self._client = temporal_client

    def release(self, name: str) -> bool:
        """Untaint one node (blocking); used by the planner for taints no disruption owns any more."""
        return self._retaint(name, without_disrupted_taint, True)

    def _retaint(self, name: str, change: Any, skip_deleting: bool) -> bool:
        """Read-modify-patch with the resourceVersion as precondition; retried on 409. False if gone."""
        for _ in range(CONFLICT_RETRIES):
            try:
                node = to_dict(self._core.api_client, self._core.read_node(name))
            except Exception as exc:
                if api_status(exc) == 404:
                    return False
                raise
            meta = node.get("metadata") or {}
            if skip_deleting and meta.get("deletionTimestamp"):
                return True  # never untaint a node that is already being deleted (Karpenter does the same)
            taints = (node.get("spec") or {}).get("taints") or []
            new = change(taints)
            if new == taints:
                return True
            body = {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "spec": {"taints": new}}
            try:
                self._core.patch_node(name, body)
                return True
            except Exception as exc:
                if api_status(exc) == 409:
                    continue
                if api_status(exc) == 404:
                    return False
                raise
        raise ApplicationError(f"node {name}: too many update conflicts")

    @activity.defn(name="disruption_taint_candidates")
    async def taint_candidates(self, inp: TaintInput) -> list[str]:
        """Taint every candidate; a candidate that vanished fails the command (its replacement plan is void)."""
        missing = []
        for n in inp.nodes:
            if not await asyncio.to_thread(self._retaint, n.name, with_disrupted_taint, False):
                missing.append(n.name)
        if missing:
            raise ApplicationError(f"candidate node(s) gone: {', '.join(missing)}", type="CandidateGone",
                                   non_retryable=True)
        return [n.name for n in inp.nodes]

    @activity.defn(name="disruption_untaint_candidates")
    async def untaint_candidates(self, inp: TaintInput) -> list[str]:
        done = []
        for n in inp.nodes:
            if await asyncio.to_thread(self._retaint, n.name, without_disrupted_taint, True):
                done.append(n.name)
        return done

    @activity.defn(name="disruption_start_terminations")
    async def start_terminations(self, inp: TerminationsInput) -> list[str]:
        """One TerminationWorkflow per candidate (idempotent: an existing one is reused)."""
        return [await self._start_termination(termination_input(n, inp.reason, inp.requested_by), inp.task_queue)
                for n in inp.nodes]

    @activity.defn(name="disruption_await_terminations")
    async def await_terminations(self, inp: AwaitTerminationsInput) -> list[str]:
        """Wait until every termination closed; a failed one fails this activity (and is retried)."""
        client = self._client or activity.client()
        pending = list(inp.workflow_ids)
        started = time.monotonic()
        while pending:
            still = []
            for wid in pending:
                desc = await client.get_workflow_handle(wid).describe()
                if desc.status == WorkflowExecutionStatus.RUNNING:
                    still.append(wid)
                elif desc.status not in (WorkflowExecutionStatus.COMPLETED, WorkflowExecutionStatus.CONTINUED_AS_NEW):
                    raise ApplicationError(f"termination {wid} ended {desc.status.name}", type="TerminationFailed",
                                           non_retryable=True)
            pending = still
            activity.heartbeat({"pending": pending, "waited": round(time.monotonic() - started)})
            if pending:
                await asyncio.sleep(inp.poll_seconds)
        return list(inp.workflow_ids)


def termination_input(node: NodeRef, reason: str, requested_by: str) -> Any:
    """The termination area's input model for one candidate."""
    from workflows.models import TerminationInput

    return TerminationInput(node_name=node.name, node_uid=node.uid, node_claim_name=node.node_claim,
                            node_pool=node.node_pool, provider_id=node.provider_id, reason=reason,
                            requested_by=requested_by)
