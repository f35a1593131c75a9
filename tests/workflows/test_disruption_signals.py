"""DisruptionWorkflow's signals for the Web UI: `cancel` (the update's name; `request_cancel` still works), and
a misspelt one logged and listed in `progress` instead of silently doing nothing. A cancel holds the nodes from
re-planning for the cool-down (written by the untaint activity)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

from support.disruption_fakes import Fakes, command
from support.disruption_stack import record_history
from temporalio import activity
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from contracts.disruption import DisruptionInput, DisruptionPhase, DisruptionSettings, TaintInput
from workflows.disruption import DisruptionWorkflow

WAITING = DisruptionSettings(validation_delay_seconds=0.01, ready_poll_seconds=3600, ready_timeout_seconds=7200)


async def _progress_when(handle, check, timeout: float = 10.0):
    for _ in range(int(timeout / 0.05)):
        progress = await handle.query(DisruptionWorkflow.progress)
        if check(progress):
            return progress
        await asyncio.sleep(0.05)
    raise AssertionError(f"progress never matched: {progress}")


def _recording_untaint(fakes: Fakes, untaints: list[TaintInput]) -> list:
    """The fakes, with an untaint that also keeps its input (to see the hold)."""

    @activity.defn(name="disruption_untaint_candidates")
    async def untaint(inp: TaintInput) -> list[str]:
        fakes.calls.append("untaint")
        untaints.append(inp)
        return [n.name for n in inp.nodes]

    others = [a for a in fakes.activities()
              if activity._Definition.must_from_callable(a).name != "disruption_untaint_candidates"]
    return [*others, untaint]


async def _cancel_by_signal(env: WorkflowEnvironment, name: str, record: str | None = None,
                            settings: DisruptionSettings = WAITING):
    fakes, untaints = Fakes(ready_after_polls=None), []
    tq = f"tq-{uuid.uuid4()}"
    async with Worker(env.client, task_queue=tq, workflows=[DisruptionWorkflow],
                      activities=_recording_untaint(fakes, untaints)):
        handle = await env.client.start_workflow(DisruptionWorkflow.run,
                                                 DisruptionInput(command=command(), settings=settings),
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
    return result, fakes, untaints


async def test_cancel_signal_has_the_update_name(ts_env: WorkflowEnvironment) -> None:
    result, fakes, untaints = await _cancel_by_signal(ts_env, "cancel", record="cancel_signal")
    assert result.outcome == DisruptionPhase.CANCELLED and "from the Web UI" in result.message
    assert fakes.calls[-2:] == ["delete_replacement", "untaint"]
    (hold,) = [u.hold for u in untaints]
    assert hold is not None and hold.held_until - hold.cancelled_at == timedelta(minutes=30)  # the default


async def test_no_hold_when_the_cool_down_is_off(ts_env: WorkflowEnvironment) -> None:
    settings = WAITING.model_copy(update={"cancel_hold_seconds": 0})
    result, _, untaints = await _cancel_by_signal(ts_env, "cancel", settings=settings)
    assert result.outcome == DisruptionPhase.CANCELLED and [u.hold for u in untaints] == [None]


async def test_old_signal_name_still_cancels(ts_env: WorkflowEnvironment) -> None:
    result, *_ = await _cancel_by_signal(ts_env, "request_cancel")
    assert result.outcome == DisruptionPhase.CANCELLED
