"""A replacement's launch lost with its worker (SIGKILL, OOM, a node drained under it) is retried after the launch's
heartbeat timeout (workflows/retries.py LONG_CALL_HEARTBEAT), not its two-minute start-to-close: in the chaos
scenario a drift replacement's launch on a killed replica held its disruption for two minutes. Time-skipping server
(which skips no activity timeout: the test shortens the heartbeat timeout to keep its run short), fake activities."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from support.disruption_fakes import Fakes, command
from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from contracts.disruption import DisruptionInput, DisruptionPhase, DisruptionSettings
from workflows import retries
from workflows.disruption import LAUNCH, DisruptionWorkflow

SHORTENED = timedelta(seconds=1)


def test_the_heartbeat_timeout_is_well_inside_a_launchs_start_to_close() -> None:
    assert retries.LONG_CALL_HEARTBEAT * 4 <= LAUNCH


async def test_a_launch_lost_with_its_worker_is_retried_after_the_heartbeat_timeout(
        ts_env: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retries, "LONG_CALL_HEARTBEAT", SHORTENED)  # read when the sandbox imports the workflow
    fakes = Fakes(launch_lost=1)
    tq = f"tq-{uuid.uuid4()}"
    inp = DisruptionInput(command=command(reason="Drifted", method="Drift", pool="a", replacements=1),
                          settings=DisruptionSettings(ready_timeout_seconds=60, ready_poll_seconds=10))
    async with Worker(ts_env.client, task_queue=tq, workflows=[DisruptionWorkflow], activities=fakes.activities()):
        handle = await ts_env.client.start_workflow(DisruptionWorkflow.run, inp, id=f"disrupt-{uuid.uuid4()}",
                                                    task_queue=tq)
        assert (await handle.result()).outcome == DisruptionPhase.SUCCEEDED
        history = await handle.fetch_history()

    (first, at1), (second, at2) = fakes.launch_attempts
    assert (first, second) == (1, 2)
    assert SHORTENED <= at2 - at1 < SHORTENED + timedelta(seconds=10), at2 - at1
    launches = [e.activity_task_scheduled_event_attributes for e in history.events
                if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
                and e.activity_task_scheduled_event_attributes.activity_type.name == "disruption_launch_replacement"]
    assert [a.heartbeat_timeout.ToTimedelta() for a in launches] == [SHORTENED]
