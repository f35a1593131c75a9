"""TerminationWorkflow with drain.jobs Wait (docs/semantics.md §15.8) on the time-skipping server, with test-only
activities under the real names: the drain leaves Job pods alone until maxWait (or the deadline), then evicts."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from support.termination_fakes import after_drain
from temporalio import activity
from temporalio.worker import Worker

from contracts.termination import (
    WAITING_FOR_COMPLETION,
    CompletionWait,
    DrainInput,
    DrainResult,
    PodState,
    PrepareInput,
    PrepareResult,
    TerminationInput,
    TerminationPhase,
)
from workflows.termination import (
    COMPLETION_WAIT_PATCH,
    DRAIN_HEARTBEAT,
    DRAIN_HEARTBEAT_PATCH,
    HEARTBEAT,
    TerminationWorkflow,
    workflow_id,
)

JOB = PodState(namespace="batch", name="report-1", runs_to_completion=True)


@dataclass
class JobNode:
    """A node with one Job pod that runs for `run_for` of workflow time (None: for ever)."""

    run_for: timedelta | None
    drains: list[tuple[datetime, bool, datetime | None]] = field(default_factory=list)  # (at, waiting, return_by)
    evicted_at: datetime | None = None
    finished_at: datetime | None = None
    started: datetime | None = None
    heartbeat_timeouts: list[timedelta] = field(default_factory=list)  # of the drain activities the history scheduled

    def activities(self, clock: object) -> list:
        node = self

        @activity.defn(name="termination.prepare")
        async def prepare(inp: PrepareInput) -> PrepareResult:
            return PrepareResult(node_exists=True, node_claim_name="c", node_claim_exists=True, node_pool="default",
                                 provider_id="aws:///us-east-1a/i-0abc", pods=[JOB])

        @activity.defn(name="termination.drain")
        async def drain(inp: DrainInput) -> DrainResult:
            now = await clock.get_current_time()  # type: ignore[attr-defined]
            node.started = node.started or now
            node.drains.append((now, inp.wait_for_completion, inp.return_by))
            if node.run_for is not None and now - node.started >= node.run_for:
                node.finished_at = node.finished_at or now
                return DrainResult(drained=True)
            if node.evicted_at is not None:  # evicted by an earlier drain: gone
                return DrainResult(drained=True)
            if inp.wait_for_completion:
                return DrainResult(drained=False, pods=[JOB.model_copy(update={"status": WAITING_FOR_COMPLETION})])
            node.evicted_at = now
            return DrainResult(drained=True, evicted=1)

        return [prepare, drain, *after_drain()]


async def _run(ts_env, node: JobNode, wait: CompletionWait | None, grace: timedelta | None = None):
    uid = str(uuid.uuid4())
    inp = TerminationInput(node_name=f"n-{uid[:6]}", node_uid=uid, node_claim_name="c", node_pool="default",
                           provider_id="aws:///us-east-1a/i-0abc", reason="Drifted", requested_by="disrupt-x",
                           completion_wait=wait, grace_period=grace)
    tq = f"tq-{uuid.uuid4()}"
    async with Worker(ts_env.client, task_queue=tq, workflows=[TerminationWorkflow],
                      activities=node.activities(ts_env)):
        handle = await ts_env.client.start_workflow(TerminationWorkflow.run, inp, id=workflow_id(uid), task_queue=tq)
        result = await handle.result()
        history = await handle.fetch_history()
    scheduled = [e.activity_task_scheduled_event_attributes for e in history.events
                 if e.HasField("activity_task_scheduled_event_attributes")]
    node.heartbeat_timeouts = [a.heartbeat_timeout.ToTimedelta() for a in scheduled
                               if a.activity_type.name == "termination.drain"]
    markers = [e.marker_recorded_event_attributes for e in history.events
               if e.HasField("marker_recorded_event_attributes")]
    # the one marker stands for the completion-wait patch too: whether the hold applies is the input's
    patched = {p for p in (COMPLETION_WAIT_PATCH, DRAIN_HEARTBEAT_PATCH) if any(p in str(m.details) for m in markers)}
    return result, patched


async def test_the_job_finishes_on_the_tainted_node_before_it_goes(ts_env) -> None:
    node = JobNode(run_for=timedelta(minutes=14))
    result, patched = await _run(ts_env, node, CompletionWait(max_wait=timedelta(hours=2), policy="batch"))
    assert result.phase == TerminationPhase.TERMINATED and result.pods_evicted == 0
    assert node.evicted_at is None and node.finished_at is not None and patched == {DRAIN_HEARTBEAT_PATCH}
    assert all(waiting for _, waiting, _ in node.drains)
    assert timedelta(minutes=14) <= node.finished_at - node.started < timedelta(minutes=25)


async def test_max_wait_passes_and_the_job_pod_is_evicted(ts_env) -> None:
    node = JobNode(run_for=None)
    result, _ = await _run(ts_env, node, CompletionWait(max_wait=timedelta(minutes=30)))
    assert result.phase == TerminationPhase.TERMINATED and result.pods_evicted == 1
    assert node.evicted_at is not None and node.finished_at is None
    waited = node.evicted_at - node.started
    assert timedelta(minutes=29, seconds=59) <= waited < timedelta(minutes=31), waited  # from the first drain
    held = [return_by for _, waiting, return_by in node.drains if waiting]
    assert held and max(r for r in held if r) - node.started <= timedelta(minutes=30, seconds=1)


async def test_the_grace_period_deadline_ends_the_wait_first(ts_env) -> None:
    node = JobNode(run_for=None)
    result, _ = await _run(ts_env, node, CompletionWait(max_wait=timedelta(hours=2)), grace=timedelta(minutes=20))
    assert result.phase == TerminationPhase.TERMINATED
    assert node.evicted_at is not None and node.evicted_at - node.started < timedelta(minutes=21)


async def test_without_a_completion_wait_the_job_pod_is_evicted_at_once(ts_env) -> None:
    node = JobNode(run_for=timedelta(minutes=14))
    result, patched = await _run(ts_env, node, None)
    assert result.pods_evicted == 1 and node.evicted_at == node.started and patched == {DRAIN_HEARTBEAT_PATCH}
    # a new execution gives its drain the burst-proof heartbeat timeout (decisions §2); older histories keep 5 s
    assert node.heartbeat_timeouts == [DRAIN_HEARTBEAT] and DRAIN_HEARTBEAT > HEARTBEAT
    assert [waiting for _, waiting, _ in node.drains] == [False]  # MinDrainTime (§9.5) is the activity's wait
