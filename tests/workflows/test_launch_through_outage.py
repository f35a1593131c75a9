"""A replacement's launch rides out an API outage (behind patch `launch-retries-through-outage`): its transient
failures are retried until the read limit, not five times (~15 s), so a 30 s outage no longer rolls a drift back
as LaunchFailed and holds its pool's drift back-off. The typed LaunchFailed still ends it at once.
Time-skipping server, fake activities."""

from __future__ import annotations

import uuid

from support.disruption_fakes import Fakes, command
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from contracts.disruption import DisruptionInput, DisruptionPhase, DisruptionSettings
from workflows.disruption import DisruptionWorkflow


async def _run(env: WorkflowEnvironment, fakes: Fakes) -> DisruptionPhase:
    tq = f"tq-{uuid.uuid4()}"
    inp = DisruptionInput(command=command(reason="Drifted", method="Drift", pool="a", replacements=1),
                          settings=DisruptionSettings(ready_timeout_seconds=60, ready_poll_seconds=10))
    async with Worker(env.client, task_queue=tq, workflows=[DisruptionWorkflow], activities=fakes.activities()):
        handle = await env.client.start_workflow(DisruptionWorkflow.run, inp, id=f"disrupt-{uuid.uuid4()}",
                                                 task_queue=tq)
        return (await handle.result()).outcome


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
