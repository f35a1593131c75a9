"""runtime/activity_intake.py: activity slots are granted only while few granted ones wait to begin, so Temporal
keeps what the worker cannot begin yet (no attempt clock runs there), without bounding how many run at once."""

from __future__ import annotations

import asyncio
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker

from runtime.activity_intake import ActivityIntake, IntakeGate
from telemetry.metrics import REGISTRY

CTX: Any = None  # the supplier reads nothing from the SDK's contexts


async def _reserved_within(intake: ActivityIntake, seconds: float) -> bool:
    try:
        await asyncio.wait_for(intake.reserve_slot(CTX), seconds)
        return True
    except TimeoutError:
        return False


async def test_a_slot_waits_while_enough_granted_ones_have_not_begun() -> None:
    intake = ActivityIntake(max_slots=10, max_waiting=2)
    assert await _reserved_within(intake, 1) and await _reserved_within(intake, 1)
    assert intake.try_reserve_slot(CTX) is None and not await _reserved_within(intake, 0.2)
    waiter = asyncio.create_task(intake.reserve_slot(CTX))
    await asyncio.sleep(0.05)
    assert not waiter.done()
    intake.begin()  # the loop took one task in: one more may be polled
    await asyncio.wait_for(waiter, 1)
    assert (intake.reserved, intake.running, intake.waiting) == (3, 1, 2)
    assert _slots("running") == 1 and _slots("waiting") == 2  # nodeflow_activity_slots
    intake.end()
    intake.release_slot(CTX)
    assert _slots("running") == 0 and _slots("waiting") == 2


def _slots(state: str) -> float | None:
    return REGISTRY.get_sample_value("nodeflow_activity_slots", {"state": state})


async def test_a_release_from_another_thread_wakes_a_waiting_reservation() -> None:
    intake = ActivityIntake(max_slots=1, max_waiting=5)
    await intake.reserve_slot(CTX)
    waiter = asyncio.create_task(intake.reserve_slot(CTX))
    await asyncio.sleep(0.05)
    assert not waiter.done()  # max_slots
    threading.Thread(target=intake.release_slot, args=(CTX,)).start()  # the core releases from its threads
    await asyncio.wait_for(waiter, 1)
    assert intake.reserved == 1


def test_bounds_below_one_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ActivityIntake(max_slots=0)
    with pytest.raises(ValueError, match="at least 1"):
        ActivityIntake(max_slots=5, max_waiting=0)


_RUNNING: dict[str, int] = {}
_PEAK: dict[str, int] = {}
_LOCK = threading.Lock()


@activity.defn(name="intake_probe.hold")
async def hold(queue: str) -> None:
    with _LOCK:
        _RUNNING[queue] = _RUNNING.get(queue, 0) + 1
        _PEAK[queue] = max(_PEAK.get(queue, 0), _RUNNING[queue])
    await asyncio.sleep(1.0)
    with _LOCK:
        _RUNNING[queue] -= 1


@activity.defn(name="intake_probe.local")
async def local_hold(queue: str) -> None:
    await asyncio.sleep(0.1)


@workflow.defn(name="IntakeProbe", sandboxed=False)
class IntakeProbe:
    @workflow.run
    async def run(self, queue: str, n: int) -> None:
        opts = {"start_to_close_timeout": timedelta(seconds=30)}
        await workflow.execute_local_activity(local_hold, queue, **opts)
        await asyncio.gather(*(workflow.execute_activity(hold, queue, **opts) for _ in range(n)))


class _Watched(ActivityIntake):
    """Records the most granted slots that had not begun, at each grant."""

    def __init__(self, max_slots: int, max_waiting: int) -> None:
        super().__init__(max_slots, max_waiting)
        self.most_waiting = 0

    def _grant(self) -> bool:
        granted = super()._grant()
        self.most_waiting = max(self.most_waiting, self.waiting)
        return granted


async def test_a_burst_runs_together_while_few_granted_slots_wait(temporal_client: Client) -> None:
    intake = _Watched(max_slots=50, max_waiting=6)
    queue = f"intake-{uuid.uuid4().hex[:8]}"
    with ThreadPoolExecutor(max_workers=2) as threads:
        async with Worker(temporal_client, task_queue=queue, workflows=[IntakeProbe], activities=[hold, local_hold],
                          activity_executor=threads, tuner=intake.tuner(workflow_slots=10),
                          interceptors=[IntakeGate(intake)]):
            await temporal_client.execute_workflow(IntakeProbe.run, args=[queue, 30], id=queue, task_queue=queue)
    # 30 activities ran, most of them at once, through 6 slots ahead: each one begun let the next be polled (had
    # the gate not heard of them, 6 grants would have been all and the workflow would not have ended)
    assert _PEAK[queue] >= 20, _PEAK[queue]
    assert intake.most_waiting == 6 and intake.running == 0  # the bound was reached, and every begin has its end
