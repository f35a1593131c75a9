"""Escalation of a graceful disruption whose drain stays blocked (DisruptionPolicy `escalation`), on the
time-skipping server: a notification and a Warning Event at notifyAfter, the drain forced at forceAfter
through the termination's own `force_signal`, recorded with the reason. The termination is a stand-in workflow
that drains only once forced; activities are fakes under the real names."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from support.disruption_fakes import Fakes, command
from temporalio import activity, workflow
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from contracts.disruption import DisruptionInput, DisruptionPhase, DisruptionSettings, EventsInput
from contracts.policy import Notification, TerminationBlocker, WatchInput
from contracts.policy_controls import EscalationSpec, PolicyControls
from contracts.termination import ForceRequest
from workflows.disruption import DisruptionWorkflow

FORCED: dict[str, tuple[datetime, str]] = {}  # termination id -> (when, reason) of its force_signal


@workflow.defn(name="TerminationWorkflow", sandboxed=False)
class BlockedTermination:
    """Drains only when forced, like a termination whose pods a PDB protects."""

    def __init__(self) -> None:
        self._forced = False

    @workflow.signal
    def force_signal(self, req: ForceRequest) -> None:
        FORCED[workflow.info().workflow_id] = (workflow.now(), req.reason)
        self._forced = True

    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: self._forced)


def _policy_fakes(notified: list[str], events: list[tuple[str, str, str]]) -> list:
    @activity.defn(name="policy_watch_terminations")
    async def watch(inp: WatchInput) -> list[TerminationBlocker]:
        return [TerminationBlocker(workflow_id=w, node=f"node-{w.rsplit('-', 1)[-1]}", pods=2,
                                   pdbs=["default/api"]) for w in inp.workflow_ids if w not in FORCED]

    @activity.defn(name="policy_notify")
    async def notify(n: Notification) -> int:
        notified.append(n.kind.value)
        return 200

    @activity.defn(name="disruption_record_events")
    async def record(inp: EventsInput) -> int:
        events.extend((e.kind, e.reason, e.message) for e in inp.events)
        return len(inp.events)

    return [watch, notify, record]


async def test_blocked_drain_is_escalated_then_forced_at_force_after(ts_env: WorkflowEnvironment) -> None:
    notified: list[str] = []
    events: list[tuple[str, str, str]] = []
    acts = [a for a in Fakes().activities() if a.__temporal_activity_definition.name != "disruption_record_events"]
    tq = f"tq-{uuid.uuid4()}"
    policy = PolicyControls(policy="general-rollout", notify_url="http://hooks.invalid/notify",
                            escalation=EscalationSpec(notify_after_seconds=2 * 3600, force_after_seconds=24 * 3600))
    async with Worker(ts_env.client, task_queue=tq, workflows=[DisruptionWorkflow, BlockedTermination],
                      activities=[*acts, *_policy_fakes(notified, events)]):
        term = await ts_env.client.start_workflow(BlockedTermination.run, id="terminate-uid-0", task_queue=tq)
        start = await ts_env.get_current_time()
        handle = await ts_env.client.start_workflow(
            DisruptionWorkflow.run, DisruptionInput(command=command(method="Drift", reason="Drifted"),
                                                    settings=DisruptionSettings(validation_delay_seconds=0),
                                                    policy=policy),
            id=f"disrupt-{uuid.uuid4()}", task_queue=tq)
        result = await handle.result()
        await term.result()

    assert result.outcome == DisruptionPhase.SUCCEEDED, result.message
    forced_at, reason = FORCED.pop("terminate-uid-0")
    assert forced_at - start >= timedelta(hours=24), "forced only at forceAfter"
    assert forced_at - start < timedelta(hours=24, minutes=11)
    assert "escalation" in reason and "general-rollout" in reason
    reasons = [(kind, r) for kind, r, _ in events if r in ("DisruptionEscalated", "DisruptionForced")]
    assert ("Node", "DisruptionEscalated") in reasons and ("Node", "DisruptionForced") in reasons
    escalated = next(m for _, r, m in events if r == "DisruptionEscalated")
    assert "Drain blocked for 2h0m0s" in escalated and "PDB default/api" in escalated
    assert notified == ["started", "blocked", "forced", "finished"]


async def test_drain_that_finishes_before_notify_after_is_not_escalated(ts_env: WorkflowEnvironment) -> None:
    notified: list[str] = []
    events: list[tuple[str, str, str]] = []
    acts = [a for a in Fakes().activities() if a.__temporal_activity_definition.name != "disruption_record_events"]
    FORCED["terminate-uid-0"] = (datetime.min, "")  # the watch sees it done at once
    tq = f"tq-{uuid.uuid4()}"
    policy = PolicyControls(policy="p", escalation=EscalationSpec(notify_after_seconds=3600))
    try:
        async with Worker(ts_env.client, task_queue=tq, workflows=[DisruptionWorkflow],
                          activities=[*acts, *_policy_fakes(notified, events)]):
            result = await ts_env.client.execute_workflow(
                DisruptionWorkflow.run, DisruptionInput(command=command(), settings=DisruptionSettings(
                    validation_delay_seconds=0), policy=policy), id=f"disrupt-{uuid.uuid4()}", task_queue=tq)
    finally:
        FORCED.pop("terminate-uid-0", None)
    assert result.outcome == DisruptionPhase.SUCCEEDED
    assert not [r for _, r, _ in events if r in ("DisruptionEscalated", "DisruptionForced")]
    assert notified == []  # no notify URL: nothing is sent
