"""Activities on a disruption's candidate nodes: mark them (taint), unmark them, hand them to termination.

The taint `karpenter.sh/disrupted:NoSchedule` keeps new pods off a node while its replacement comes up;
removing it is the rollback. Deleting a candidate means starting its TerminationWorkflow.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from kubernetes.client.rest import ApiException
from temporalio import activity
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.exceptions import ApplicationError

from activities.fan_out import each, each_async
from activities.karpenter_metrics import DISRUPTED_ONCE, record_disrupted
from api import labels
from api.timestamps import format_seconds
from contracts.disruption import AwaitTerminationsInput, DriftOutcomeInput, NodeRef, TaintInput, TerminationsInput
from contracts.errors import ErrorType
from contracts.termination import CompletionWait, TerminationInput
from gateways.kube import Conflict, KubeClient
from planning.lifecycle.disruption_conditions import Change, disruption_reason, no_disruption_reason
from planning.policies.drift_backoff import after_failure, backoff_of, backoff_patch
from telemetry import karpenter_metrics as km

log = logging.getLogger(__name__)

# Starts (or joins) one node's TerminationWorkflow on a task queue and returns its workflow id; the worker's
# wiring binds it to `client.termination.start_termination`, so this module never imports the client side.
StartTermination = Callable[[Any, str], Awaitable[str]]


class CandidateActivities:
    """Taint/untaint through the Kubernetes gateway; start and await terminations through the Temporal client."""

    def __init__(self, kube: KubeClient, start_termination: StartTermination,
                 temporal_client: Client | None = None) -> None:
        self._kube = kube
        self._start_termination = start_termination
        self._client = temporal_client

    @activity.defn(name="disruption_taint_candidates")
    async def taint_candidates(self, inp: TaintInput) -> list[str]:
        """Taint every candidate (many at once: activities/fan_out.py); a candidate that vanished fails the command
        (its replacement plan is void)."""
        tainted = await asyncio.to_thread(each, self._kube.taint, [n.name for n in inp.nodes])
        missing = [n.name for n, ok in zip(inp.nodes, tainted, strict=True) if not ok]
        if missing:
            raise ApplicationError(f"candidate node(s) gone: {', '.join(missing)}", type=ErrorType.CANDIDATE_GONE.value,
                                   non_retryable=True)
        await asyncio.to_thread(self._mark_claims, inp.nodes, disruption_reason(inp.reason, datetime.now(UTC)))
        return [n.name for n in inp.nodes]

    def _mark_claims(self, nodes: list[NodeRef], change: Change) -> None:
        """The candidates' NodeClaims' DisruptionReason (docs/semantics.md §18): a marker for users and tools, so a
        claim that is gone or refuses the write never fails the command."""
        def mark(claim: str) -> None:
            try:
                self._kube.update("NodeClaim", claim, change, status=True)
            except (ApiException, Conflict) as exc:
                log.warning("NodeClaim %s: DisruptionReason not written: %s", claim, exc)

        each(mark, [n.node_claim for n in nodes if n.node_claim])

    @activity.defn(name="disruption_untaint_candidates")
    async def untaint_candidates(self, inp: TaintInput) -> list[str]:
        """Untaint the candidates; with `hold` (a cancel) also annotate them so the planner leaves them alone for
        the cool-down (idempotent: the same times on a retry)."""
        hold = inp.hold

        def release(name: str) -> bool:
            done = self._kube.untaint(name)
            if hold is not None:
                self._kube.patch_node(name, {"metadata": {"annotations": {
                    labels.DISRUPTION_CANCELLED_AT_ANNOTATION: format_seconds(hold.cancelled_at),
                    labels.DISRUPTION_HELD_UNTIL_ANNOTATION: format_seconds(hold.held_until)}}})
            return done

        names = [n.name for n in inp.nodes]
        released = await asyncio.to_thread(each, release, names)
        await asyncio.to_thread(self._mark_claims, inp.nodes, no_disruption_reason())
        return [name for name, done in zip(names, released, strict=True) if done]

    @activity.defn(name="disruption_drift_outcome")
    async def drift_outcome(self, inp: DriftOutcomeInput) -> str:
        """Advance (a failed replacement) or clear (a Ready one) the pool's drift back-off on its NodePool
        (planning/policies/drift_backoff.py); answers the hold's message, "" when nothing is held. A retry reads
        its own write: the pool is held at `at`, so the failure is not counted twice."""
        return await asyncio.to_thread(self._drift_outcome, inp)

    def _drift_outcome(self, inp: DriftOutcomeInput) -> str:
        pool = self._kube.get_node_pool(inp.node_pool)
        if pool is None:
            return ""
        current = backoff_of((pool.get("metadata") or {}).get("annotations") or {})
        if not inp.failed:
            if current is not None:
                self._kube.patch_node_pool(inp.node_pool, backoff_patch(None))
            return ""
        record = after_failure(inp.node_pool, current, inp.at)
        if record is None:
            return current.message(inp.node_pool) if current is not None else ""
        self._kube.patch_node_pool(inp.node_pool, backoff_patch(record))
        km.DRIFT_BACKOFFS.labels(nodepool=inp.node_pool).inc()
        return record.message(inp.node_pool)

    @activity.defn(name="disruption_start_terminations")
    async def start_terminations(self, inp: TerminationsInput) -> list[str]:
        """One TerminationWorkflow per candidate (idempotent: an existing one is reused); each one started is a
        NodeClaim disrupted in Karpenter's metrics (activities/karpenter_metrics.py). Many are started at once
        (activities/fan_out.py)."""
        async def start(n: NodeRef) -> str:
            wid = await self._start_termination(termination_input(n, inp.reason, inp.requested_by, inp.deadline,
                                                                  inp.drain), inp.task_queue)
            if DISRUPTED_ONCE.first(wid):
                await asyncio.to_thread(record_disrupted, self._kube, n.name, n.node_claim, n.node_pool, inp.reason)
            return wid

        return await each_async(start, inp.nodes)

    @activity.defn(name="disruption_await_terminations")
    async def await_terminations(self, inp: AwaitTerminationsInput) -> list[str]:
        """Wait until every termination closed (each poll describes them all at once: activities/fan_out.py); a
        failed one fails this activity (and is retried)."""
        client = self._client or activity.client()
        pending = list(inp.workflow_ids)
        started = time.monotonic()
        while pending:
            statuses = await each_async(lambda wid: client.get_workflow_handle(wid).describe(), pending)
            still = []
            for wid, desc in zip(pending, statuses, strict=True):
                if desc.status == WorkflowExecutionStatus.RUNNING:
                    still.append(wid)
                elif desc.status not in (WorkflowExecutionStatus.COMPLETED, WorkflowExecutionStatus.CONTINUED_AS_NEW):
                    raise ApplicationError(f"termination {wid} ended {desc.status.name}",
                                           type=ErrorType.TERMINATION_FAILED.value, non_retryable=True)
            pending = still
            activity.heartbeat({"pending": pending, "waited": round(time.monotonic() - started)})
            if pending:
                await asyncio.sleep(inp.poll_seconds)
        return list(inp.workflow_ids)


def termination_input(node: NodeRef, reason: str, requested_by: str, deadline: Any = None, drain: Any = None) -> Any:
    """The termination area's input model for one candidate (`deadline`: forceful, e.g. node repair's now;
    `drain`: the pool policy's drain.jobs Wait, a contracts.policy_controls.DrainSpec)."""
    wait = None
    if drain is not None and drain.wait_for_completion:
        seconds = drain.max_wait_seconds
        wait = CompletionWait(max_wait=timedelta(seconds=seconds) if seconds is not None else None, policy=drain.policy)
    return TerminationInput(node_name=node.name, node_uid=node.uid, node_claim_name=node.node_claim,
                            node_pool=node.node_pool, provider_id=node.provider_id, reason=reason,
                            requested_by=requested_by, deadline=deadline, completion_wait=wait)
