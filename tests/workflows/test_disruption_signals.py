"""DisruptionWorkflow's signals for the Web UI: `cancel` (the update's name; `request_cancel` still works), and
a misspelt one logged and listed in `progress` instead of silently doing nothing."""

from __future__ import annotations

import asyncio
import uuid

from support.disruption_fakes import Fakes, command
from support.disruption_stack import record_history
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from workflows.disruption import DisruptionWorkflow
from workflows.disruption_models import DisruptionInput, DisruptionPhase, DisruptionSettings

WAITING = DisruptionSettings(validation_delay_seconds=0.01, ready_poll_seconds=3600, ready_timeout_seconds=7200)


async def _progress_when(handle, check, timeout: float = 10.0):
    for _ in range(int(timeout / 0.05)):
        progress = await handle.query(DisruptionWorkflow.progress)
        if check(progress):
            return progress
        await asyncio.sleep(0.05)
    raise AssertionError(f"progress never matched: {progress}")


async def _cancel_by_signal(env: WorkflowEnvironment, name: str, record: str | None = None):
    fakes = Fakes(ready_after_polls=None)
    tq = f"tq-{uuid.uuid4()}"
    async with Worker(env.client, task_queue=tq, workflows=[DisruptionWorkflow], activities=fakes.activities()):
        handle = await env.client.start_workflow(DisruptionWorkflow.run,
                                                 DisruptionInput(command=command(), settings=WAITING),
                                                 id=f"disrupt-{uuid.uuid4()}", task_queue=tq)
        with env.auto_time_skipping_disabled():
            await _progress_when(handle, lambda p: p.phase == DisruptionPhase.WAITING_READY)
            await handle.signal("cancle", "typo")
            progress = await _progress_when(handle, lambda p: p.unknown_signals)
            assert progress.unknown_signals == ["cancle"] and not progress.cancel_requested
            await handle.signal(name, "from the Web UI")
        result = await handle.result()
        if record:
            await record_history(handle, "DisruptionWorkflow", record)
    return result, fakes


async def test_cancel_signal_has_the_update_name(ts_env: WorkflowEnvironment) -> None:
    result, fakes = await _cancel_by_signal(ts_env, "cancel", record="cancel_signal")
    assert result.outcome == DisruptionPhase.CANCELLED and "from the Web UI" in result.message
    assert fakes.calls[-2:] == ["delete_replacement", "untaint"]


async def test_old_signal_name_still_cancels(ts_env: WorkflowEnvironment) -> None:
    result, _ = await _cancel_by_signal(ts_env, "request_cancel")
    assert result.outcome == DisruptionPhase.CANCELLED
