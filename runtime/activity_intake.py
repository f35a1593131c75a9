"""Activity slots handed to Temporal only as fast as this worker's event loop takes tasks in.

Temporal starts an attempt's clocks (start-to-close, heartbeat) when a poll takes its task. The SDK's core polls
as long as it holds free slots and queues what it gets until the Python side, one task per turn of the event loop,
begins it. With 500 slots free at a burst of 1,000 deleted nodes, hundreds of drain tasks were taken at once and
waited their turn in that queue: on a busy loop (each turn tens of milliseconds) the last ones began 15 s and more
after their start, past their heartbeat timeout, and were tried again (docs/benchmarks.md, termination burst).
The SDK alone showed it too: 500 one-activity workflows on a loop that turns every 10 ms lost 50 attempts (start
delay p95 17 s).

`ActivityIntake` grants a slot only while fewer than `max_waiting` granted slots are not yet running an activity
function (`IntakeGate`, the interceptor, tells it when one begins and ends), besides the usual bound of
`max_slots` at once. What the worker cannot begin yet stays scheduled in Temporal, where no attempt clock runs, and
another worker may take it. `max_waiting` covers the core's idle pollers (5 by default), each of which holds a
slot while it waits.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from temporalio import activity
from temporalio.worker import (
    ActivityInboundInterceptor,
    CustomSlotSupplier,
    ExecuteActivityInput,
    FixedSizeSlotSupplier,
    Interceptor,
    SlotMarkUsedContext,
    SlotPermit,
    SlotReleaseContext,
    SlotReserveContext,
    WorkerTuner,
)

from telemetry.metrics import ACTIVITY_SLOTS

MAX_WAITING = 16  # slots granted ahead of the loop: the core's 5 idle pollers and a few tasks in hand


class ActivityIntake(CustomSlotSupplier):
    """At most `max_slots` activity slots, and at most `max_waiting` of them not yet running their function."""

    def __init__(self, max_slots: int, max_waiting: int = MAX_WAITING) -> None:
        if max_slots < 1 or max_waiting < 1:
            raise ValueError(f"activity slots ({max_slots}) and slots ahead ({max_waiting}) must be at least 1")
        self.max_slots, self.max_waiting = max_slots, max_waiting
        self._lock = threading.Lock()  # the core releases slots from its own threads, sync activities begin in theirs
        self.reserved = 0  # permits granted and not released
        self.running = 0  # activity functions running
        self._changed: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # the gauge's two children, resolved once: they are set four times per activity
        self._running_gauge = ACTIVITY_SLOTS.labels(state="running")
        self._waiting_gauge = ACTIVITY_SLOTS.labels(state="waiting")

    @property
    def waiting(self) -> int:
        """Slots granted whose task has not begun (an idle poller's, or a task the loop has not taken in yet)."""
        return self.reserved - self.running

    def _grant(self) -> bool:
        with self._lock:
            if self.reserved >= self.max_slots or self.waiting >= self.max_waiting:
                return False
            self.reserved += 1
            self._report()
            return True

    async def reserve_slot(self, ctx: SlotReserveContext) -> SlotPermit:
        if self._changed is None:
            self._loop, self._changed = asyncio.get_running_loop(), asyncio.Event()
        while not self._grant():
            self._changed.clear()
            if self._grant():  # a release between the check and the clear woke nobody
                break
            await self._changed.wait()
        return SlotPermit()

    def try_reserve_slot(self, ctx: SlotReserveContext) -> SlotPermit | None:
        return SlotPermit() if self._grant() else None

    def mark_slot_used(self, ctx: SlotMarkUsedContext) -> None:
        return None  # the core took a task for the slot; `begin` is when the worker takes it in

    def release_slot(self, ctx: SlotReleaseContext) -> None:
        with self._lock:
            self.reserved = max(0, self.reserved - 1)
            self._report()
        self._wake()

    def begin(self) -> None:
        with self._lock:
            self.running += 1
            self._report()
        self._wake()

    def end(self) -> None:
        with self._lock:
            self.running = max(0, self.running - 1)
            self._report()

    def _report(self) -> None:
        """`nodeflow_activity_slots` (called under the lock, so the two states are read together)."""
        self._running_gauge.set(self.running)
        self._waiting_gauge.set(max(0, self.waiting))

    def _wake(self) -> None:
        loop, changed = self._loop, self._changed
        if loop is not None and changed is not None and not loop.is_closed():
            loop.call_soon_threadsafe(changed.set)

    def tuner(self, workflow_slots: int, local_activity_slots: int = 100, nexus_slots: int = 100) -> WorkerTuner:
        """A Worker's tuner with these activity slots and fixed ones for the rest (the SDK's defaults)."""
        return WorkerTuner.create_composite(
            workflow_supplier=FixedSizeSlotSupplier(workflow_slots), activity_supplier=self,
            local_activity_supplier=FixedSizeSlotSupplier(local_activity_slots),
            nexus_supplier=FixedSizeSlotSupplier(nexus_slots))


class IntakeGate(Interceptor):
    """Tells `intake` when each (non-local) activity function begins and ends."""

    def __init__(self, intake: ActivityIntake) -> None:
        self.intake = intake

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Gate(next, self.intake)


class _Gate(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, intake: ActivityIntake) -> None:
        super().__init__(next)
        self.intake = intake

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        if activity.info().is_local:  # local activities have slots of their own
            return await super().execute_activity(input)
        self.intake.begin()
        try:
            return await super().execute_activity(input)
        finally:
            self.intake.end()
