"""A replacement's launch rides out an API outage (behind patch `launch-retries-through-outage`): its transient
failures are retried until the read limit, not five times (~15 s), so a 30 s outage no longer rolls a drift back
as LaunchFailed and holds its pool's drift back-off. The typed LaunchFailed still ends it at once. A launch lost
with its worker is retried after its heartbeat timeout. Time-skipping server, fake activities."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from support.disruption_fakes import Fakes, command
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from contracts.disruption import DisruptionInput, DisruptionPhase, DisruptionSettings
from workflows import retries
from workflows.disruption import LAUNCH, DisruptionWorkflow


async def _run(env: WorkflowEnvironment, fakes: Fakes, history: list[WorkflowHistory] | None = None) -> DisruptionPhase:
    """One drift with one replacement; its history is appended to `history` when one is given."""
    tq = f"tq-{uuid.uuid4()}"
    inp = DisruptionInput(command=command(reason="Drifted", method="Drift", pool="a", replacements=1),
                          settings=DisruptionSettings(ready_timeout_seconds=60, ready_poll_seconds=10))
    async with Worker(env.client, task_queue=tq, workflows=[DisruptionWorkflow], activities=fakes.activities()):
        handle = await env.client.start_workflow(DisruptionWorkflow.run, inp, id=f"disrupt-{uuid.uuid4()}",
                                                 task_queue=tq)
        outcome = (await handle.result()).outcome
        if history is not None:
            history.append(await handle.fetch_history())
        return outcome


async def test_a_launch_failing_longer_than_five_attempts_through_an_outage_succeeds(
        ts_env: WorkflowEnvironment) -> None:
    fakes = Fakes(launch_transient_failures=8)  # 8 x 503, about a minute of back-off: more than the old 5 attempts
    assert await _run(ts_env, fakes) == DisruptionPhase.SUCCEEDED
    assert fakes.calls.count("launch") == 9
    assert [o.failed for o in fakes.drift_outcomes] == [False]  # no back-off recorded for the outage


async def test_a_typed_launch_failure_still_rolls_back_at_once(ts_env: WorkflowEnvironment) -> None:
    fakes = Fakes(launch_error="no available offering")
    assert await _run(ts_env, fakes) == DisruptionPhase.ROLLED_BACK
    assert fakes.calls.count("launch") == 1


# A launch lost with its worker (SIGKILL, OOM, a node drained under it) is retried after the launch's heartbeat
# timeout (workflows/retries.py LONG_CALL_HEARTBEAT), not its two-minute start-to-close: in the chaos scenario a drift
# launch on a killed replica held its disruption for two minutes. The time-skipping server skips no activity timeout,
# so the test shortens the heartbeat timeout to keep its run short.
SHORTENED = timedelta(seconds=1)


def test_the_heartbeat_timeout_is_well_inside_a_launchs_start_to_close() -> None:
    assert retries.LONG_CALL_HEARTBEAT * 4 <= LAUNCH


async def test_a_launch_lost_with_its_worker_is_retried_after_the_heartbeat_timeout(
        ts_env: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retries, "LONG_CALL_HEARTBEAT", SHORTENED)  # read when the sandbox imports the workflow
    fakes, history = Fakes(launch_lost=1), list[WorkflowHistory]()
    assert await _run(ts_env, fakes, history) == DisruptionPhase.SUCCEEDED

    (first, at1), (second, at2) = fakes.launch_attempts
    assert (first, second) == (1, 2)
    assert SHORTENED <= at2 - at1 < SHORTENED + timedelta(seconds=10), at2 - at1
    launches = [e.activity_task_scheduled_event_attributes for e in history[0].events
                if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
                and e.activity_task_scheduled_event_attributes.activity_type.name == "disruption_launch_replacement"]
    assert [a.heartbeat_timeout.ToTimedelta() for a in launches] == [SHORTENED]
