"""DisruptionWorkflow on the time-skipping server (one test on the dev server) with fake activities: ordering, delays,
timeouts, rollback."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from support.disruption_fakes import Fakes, command
from support.disruption_stack import record_history
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.exceptions import CancelledError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from contracts.disruption import DisruptionInput, DisruptionPhase, DisruptionSettings
from workflows.disruption import DisruptionWorkflow


async def _run(env: WorkflowEnvironment, fakes: Fakes, inp: DisruptionInput):
    tq = f"tq-{uuid.uuid4()}"
    async with Worker(env.client, task_queue=tq, workflows=[DisruptionWorkflow], activities=fakes.activities()):
        handle = await env.client.start_workflow(DisruptionWorkflow.run, inp, id=f"disrupt-{uuid.uuid4()}",
                                                 task_queue=tq)
        start = await env.get_current_time()
        result = await handle.result()
        progress = await handle.query(DisruptionWorkflow.progress)
        return result, start, await env.get_current_time(), progress


async def test_validates_after_delay_then_replaces_and_terminates(ts_env: WorkflowEnvironment) -> None:
    fakes = Fakes(ready_after_polls=3)
    inp = DisruptionInput(command=command(n=2), settings=DisruptionSettings(validation_delay_seconds=15,
                                                                           ready_poll_seconds=5))
    result, start, _, progress = await _run(ts_env, fakes, inp)
    assert result.outcome == DisruptionPhase.SUCCEEDED
    assert fakes.calls == ["validate", "taint", "launch", "terminate"]
    # validation happened only after the 15 s delay (virtual time)
    assert (fakes.validate_scheduled[0] - start).total_seconds() >= 15
    assert fakes.polls == 3
    assert fakes.termination_reasons == ["Underutilized", "Underutilized"]
    assert fakes.outcomes == ["Succeeded"]
    assert len(result.replacements) == 1 and result.terminations == ["terminate-uid-0", "terminate-uid-1"]
    assert progress.phase == DisruptionPhase.SUCCEEDED and progress.nodes == ["node-0", "node-1"]


async def test_a_replacement_validation_finds_unneeded_is_not_launched(ts_env: WorkflowEnvironment) -> None:
    """Validation hands back the delete of the same candidates (their pods fit on the other nodes now,
    docs/semantics.md §5.8): nothing launches, the candidates terminate, the memo's placements become the delete's
    and the NodePool gets a ConsolidationWithoutReplacement Event."""
    fakes = Fakes(as_delete={"node-9": ["default/p-1", "default/p-2"]})
    inp = DisruptionInput(command=command(n=2), settings=DisruptionSettings(validation_delay_seconds=15))
    inp.command.placements = {"": ["default/p-1", "default/p-2"]}
    tq = f"tq-{uuid.uuid4()}"
    async with Worker(ts_env.client, task_queue=tq, workflows=[DisruptionWorkflow], activities=fakes.activities()):
        handle = await ts_env.client.start_workflow(DisruptionWorkflow.run, inp, id=f"disrupt-{uuid.uuid4()}",
                                                    task_queue=tq, memo={"placements": inp.command.placements})
        result = await handle.result()
        progress = await handle.query(DisruptionWorkflow.progress)
        memo = await (await handle.describe()).memo_value("placements")
        await record_history(handle, "DisruptionWorkflow", "validated_as_delete")
    assert result.outcome == DisruptionPhase.SUCCEEDED and result.replacements == []
    assert fakes.calls == ["validate", "taint", "terminate"] and fakes.polls == 0
    assert result.terminations == ["terminate-uid-0", "terminate-uid-1"]
    assert memo == {"node-9": ["default/p-1", "default/p-2"]}
    notes = [e for e in fakes.recorded if e.reason == "ConsolidationWithoutReplacement"]
    assert [(e.kind, e.name) for e in notes] == [("NodePool", "default")]
    assert notes[0].message.startswith("SingleNodeConsolidation deletes node-0, node-1 without the planned replacement")
    assert progress.phase == DisruptionPhase.SUCCEEDED and progress.replacements == []
    assert progress.note == "without the planned replacement: at validation their pods fit on the other nodes"


@pytest.mark.parametrize(("reason", "method", "history"), [("Drifted", "Drift", "drift_not_validated"),
                                                         ("Unhealthy", "Repair", "repair_prespin")])
async def test_drift_and_repair_are_not_validated_and_pre_spin_at_once(ts_env: WorkflowEnvironment, reason: str,
                                                                      method: str, history: str) -> None:
    """Karpenter validates consolidation commands only (docs/semantics.md §4.2): a drift command, and v1.15's node
    repair (kubernetes-sigs/karpenter#3311) on the same replace path, taint and launch at once, with no 15 s delay;
    the termination carries the command's reason and no deadline, so the drain honours PDBs and the grace period."""
    fakes = Fakes(ready_after_polls=2)
    inp = DisruptionInput(command=command(reason=reason, method=method),
                          settings=DisruptionSettings(validation_delay_seconds=15, ready_poll_seconds=5))
    tq = f"tq-{uuid.uuid4()}"
    async with Worker(ts_env.client, task_queue=tq, workflows=[DisruptionWorkflow], activities=fakes.activities()):
        handle = await ts_env.client.start_workflow(DisruptionWorkflow.run, inp, id=f"disrupt-{uuid.uuid4()}",
                                                    task_queue=tq)
        result = await handle.result()
        await record_history(handle, "DisruptionWorkflow", history)
    # no validation activity, so no 15 s delay before it (virtual time itself may jump while polling for Ready)
    assert result.outcome == DisruptionPhase.SUCCEEDED and fakes.validate_scheduled == []
    assert fakes.calls == ["taint", "launch", "terminate"] and fakes.polls == 2
    assert fakes.termination_reasons == [reason] and fakes.termination_deadlines == [None]
    assert len(result.replacements) == 1


async def test_ready_timeout_rolls_back(ts_env: WorkflowEnvironment) -> None:
    fakes = Fakes(ready_after_polls=None)
    inp = DisruptionInput(command=command(), settings=DisruptionSettings(ready_timeout_seconds=600,
                                                                        ready_poll_seconds=60))
    result, start, end, _ = await _run(ts_env, fakes, inp)
    assert result.outcome == DisruptionPhase.ROLLED_BACK
    assert "not ready within 600s" in result.message
    assert fakes.calls == ["validate", "taint", "launch", "delete_replacement", "untaint"]
    assert fakes.deleted == [result.replacements[0].node_claim]
    assert (end - start).total_seconds() >= 600 + 15
    assert "terminate" not in fakes.calls


async def test_invalid_command_touches_nothing(ts_env: WorkflowEnvironment) -> None:
    fakes = Fakes(valid=False)
    result, *_ = await _run(ts_env, fakes, DisruptionInput(command=command()))
    assert result.outcome == DisruptionPhase.INVALID and "candidates changed" in result.message
    assert fakes.calls == ["validate"]


async def test_launch_failure_untaints_without_terminating(ts_env: WorkflowEnvironment) -> None:
    fakes = Fakes(launch_error="InsufficientInstanceCapacity")
    result, *_ = await _run(ts_env, fakes, DisruptionInput(command=command()))
    assert result.outcome == DisruptionPhase.ROLLED_BACK and "InsufficientInstanceCapacity" in result.message
    assert fakes.calls == ["validate", "taint", "launch", "untaint"]


async def test_vanished_candidate_untaints_the_others(ts_env: WorkflowEnvironment) -> None:
    fakes = Fakes(taint_error="candidate node(s) gone: node-1")
    result, *_ = await _run(ts_env, fakes, DisruptionInput(command=command(n=2)))
    assert result.outcome == DisruptionPhase.ROLLED_BACK and "node-1" in result.message
    assert fakes.calls == ["validate", "taint", "untaint"]


async def test_delete_command_needs_no_replacement(ts_env: WorkflowEnvironment) -> None:
    fakes = Fakes()
    inp = DisruptionInput(command=command(n=3, replacements=0, reason="Empty", method="Emptiness"))
    result, *_ = await _run(ts_env, fakes, inp)
    assert result.outcome == DisruptionPhase.SUCCEEDED
    assert fakes.calls == ["validate", "taint", "terminate"] and fakes.polls == 0


@asynccontextmanager
async def _started(client: Client, fakes: Fakes, settings: DisruptionSettings) -> AsyncIterator[WorkflowHandle]:
    """A worker with the fake activities on a fresh task queue, and a DisruptionWorkflow started on it."""
    tq = f"tq-{uuid.uuid4()}"
    async with Worker(client, task_queue=tq, workflows=[DisruptionWorkflow], activities=fakes.activities()):
        yield await client.start_workflow(
            DisruptionWorkflow.run, DisruptionInput(command=command(), settings=settings),
            id=f"disrupt-{uuid.uuid4()}", task_queue=tq)


async def _wait_phase(handle, phase: DisruptionPhase, timeout: float = 10.0) -> None:
    async def poll() -> None:
        while (await handle.query(DisruptionWorkflow.progress)).phase != phase:
            await asyncio.sleep(0.05)
    await asyncio.wait_for(poll(), timeout)


async def test_cancel_while_waiting_ready_rolls_back(ts_env: WorkflowEnvironment) -> None:
    fakes = Fakes(ready_after_polls=None)
    settings = DisruptionSettings(validation_delay_seconds=0.01, ready_poll_seconds=3600, ready_timeout_seconds=7200)
    async with _started(ts_env.client, fakes, settings) as handle:
        with ts_env.auto_time_skipping_disabled():
            await _wait_phase(handle, DisruptionPhase.WAITING_READY)
            assert await handle.execute_update(DisruptionWorkflow.cancel, "operator said so") == "WaitingReady"
        result = await handle.result()
        await record_history(handle, "DisruptionWorkflow", "cancel_waiting_ready")
    assert result.outcome == DisruptionPhase.CANCELLED and "operator said so" in result.message
    assert fakes.calls[-2:] == ["delete_replacement", "untaint"]


async def test_cancel_rejected_once_terminating(ts_env: WorkflowEnvironment) -> None:
    gate = asyncio.Event()
    fakes = Fakes(block_terminations=gate)
    settings = DisruptionSettings(validation_delay_seconds=0.01, ready_poll_seconds=0.01)
    async with _started(ts_env.client, fakes, settings) as handle:
        with ts_env.auto_time_skipping_disabled():
            await _wait_phase(handle, DisruptionPhase.TERMINATING)
            with pytest.raises(WorkflowUpdateFailedError) as err:
                await handle.execute_update(DisruptionWorkflow.cancel, "too late")
            assert "cannot cancel" in str(err.value.cause)
        gate.set()
        result = await handle.result()
    assert result.outcome == DisruptionPhase.SUCCEEDED


async def test_temporal_cancel_rolls_back_before_ending_cancelled(temporal_client: Client) -> None:
    """On the dev server: the time-skipping test server once refused the workflow's cancellation of an activity that
    had just completed ("ACTIVITY_UNKNOWN for scheduledEventId=44", which Temporal's server accepts) and left the
    workflow stuck until the test's 300 s timeout. Nothing here needs time skipped: the cancel comes while the
    workflow waits, and the rollback has no timer."""
    fakes = Fakes(ready_after_polls=None)
    settings = DisruptionSettings(validation_delay_seconds=0.01, ready_poll_seconds=3600, ready_timeout_seconds=7200)
    async with _started(temporal_client, fakes, settings) as handle:
        await _wait_phase(handle, DisruptionPhase.WAITING_READY)
        await handle.cancel()
        with pytest.raises(WorkflowFailureError) as err:
            await asyncio.wait_for(handle.result(), 60)
    assert isinstance(err.value.cause, CancelledError)
    assert fakes.calls[-2:] == ["delete_replacement", "untaint"]
    assert fakes.outcomes == ["Cancelled"]


async def test_temporal_cancel_during_the_readiness_poll_rolls_back_and_ends_cancelled(temporal_client: Client) -> None:
    """The cancel comes while the readiness poll activity runs (the race the test above once met under load): the
    activity's cancellation is the workflow's, not a failed activity."""
    fakes = Fakes(ready_after_polls=None, status_polling=asyncio.Event())
    settings = DisruptionSettings(validation_delay_seconds=0.01, ready_poll_seconds=3600, ready_timeout_seconds=7200)
    async with _started(temporal_client, fakes, settings) as handle:
        await asyncio.wait_for(fakes.status_polling.wait(), 10)
        await handle.cancel()
        with pytest.raises(WorkflowFailureError) as err:
            await asyncio.wait_for(handle.result(), 60)
        await record_history(handle, "DisruptionWorkflow", "cancel_in_activity")
    assert isinstance(err.value.cause, CancelledError)
    assert fakes.calls[-2:] == ["delete_replacement", "untaint"]
    assert fakes.outcomes == ["Cancelled"]


async def test_failed_termination_is_reported_not_undone(ts_env: WorkflowEnvironment) -> None:
    fakes = Fakes(termination_error="termination terminate-uid-0 ended FAILED")
    result, *_ = await _run(ts_env, fakes, DisruptionInput(command=command()))
    assert result.outcome == DisruptionPhase.FAILED and "ended FAILED" in result.message
    assert "untaint" not in fakes.calls and "delete_replacement" not in fakes.calls
