"""DisruptionWorkflow records a drift command's replacement outcome for the pool's drift back-off (behind patch
`drift-backoff`, kubernetes-sigs/karpenter#3080): a failed launch or a replacement never Ready counts, a Ready one
clears it; consolidation and a delete-only command record nothing. Time-skipping server, fake activities."""

from __future__ import annotations

import uuid

from support.disruption_fakes import Fakes, command
from support.disruption_stack import record_history
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from contracts.disruption import DisruptionInput, DisruptionPhase, DisruptionSettings
from workflows.disruption import DisruptionWorkflow


async def _run(env: WorkflowEnvironment, fakes: Fakes, inp: DisruptionInput, history: str = "") -> DisruptionPhase:
    tq = f"tq-{uuid.uuid4()}"
    async with Worker(env.client, task_queue=tq, workflows=[DisruptionWorkflow], activities=fakes.activities()):
        handle = await env.client.start_workflow(DisruptionWorkflow.run, inp, id=f"disrupt-{uuid.uuid4()}",
                                                 task_queue=tq)
        result = await handle.result()
        if history:
            await record_history(handle, "DisruptionWorkflow", history)
    return result.outcome


def _drift(replacements: int = 1) -> DisruptionInput:
    return DisruptionInput(command=command(reason="Drifted", method="Drift", pool="a", replacements=replacements),
                           settings=DisruptionSettings(ready_timeout_seconds=60, ready_poll_seconds=10))


async def test_v115_a_failed_drift_launch_records_a_backoff(ts_env: WorkflowEnvironment) -> None:
    fakes = Fakes(launch_error="InsufficientInstanceCapacity")
    assert await _run(ts_env, fakes, _drift(), "drift_backoff") == DisruptionPhase.ROLLED_BACK
    assert [(o.node_pool, o.failed) for o in fakes.drift_outcomes] == [("a", True)]


async def test_v115_a_drift_replacement_never_ready_records_a_backoff(ts_env: WorkflowEnvironment) -> None:
    fakes = Fakes(ready_after_polls=None)
    assert await _run(ts_env, fakes, _drift()) == DisruptionPhase.ROLLED_BACK
    assert [o.failed for o in fakes.drift_outcomes] == [True]


async def test_v115_a_ready_drift_replacement_clears_the_backoff(ts_env: WorkflowEnvironment) -> None:
    fakes = Fakes(ready_after_polls=1)
    assert await _run(ts_env, fakes, _drift()) == DisruptionPhase.SUCCEEDED
    assert [o.failed for o in fakes.drift_outcomes] == [False]


async def test_v115_consolidation_and_delete_only_drift_record_nothing(ts_env: WorkflowEnvironment) -> None:
    fakes = Fakes(launch_error="InsufficientInstanceCapacity")
    assert await _run(ts_env, fakes, DisruptionInput(command=command())) == DisruptionPhase.ROLLED_BACK
    deleting = Fakes()
    assert await _run(ts_env, deleting, _drift(replacements=0)) == DisruptionPhase.SUCCEEDED
    assert fakes.drift_outcomes == [] and deleting.drift_outcomes == []
    assert deleting.calls == ["taint", "terminate"]  # terminate-first: drain and delete, as for Emptiness
