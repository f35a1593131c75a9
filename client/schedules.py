"""What every nodeflow Temporal Schedule shares: a fixed interval with overlap SKIP, and an idempotent
create-or-update that keeps a pause, so each worker start can ensure its schedules without undoing an operator."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleHandle,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
    ScheduleUpdate,
    ScheduleUpdateInput,
)

# (paused, note) -> the schedule to create or to update to
ScheduleBuilder = Callable[[bool, str], Schedule]


def interval_schedule(action: ScheduleActionStartWorkflow, every: timedelta, paused: bool, note: str) -> Schedule:
    """One run every `every`; a tick missed for longer than one interval is dropped, not replayed, and a run
    still going when the next tick comes makes that tick a no-op (SKIP)."""
    return Schedule(
        action=action,
        spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=every)]),
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP, catchup_window=max(every, timedelta(seconds=10))),
        state=ScheduleState(paused=paused, note=note),
    )


async def ensure_schedule(client: Client, schedule_id: str, build: ScheduleBuilder) -> ScheduleHandle:
    """Create the schedule, or update an existing one in place keeping its paused state and note."""
    try:
        return await client.create_schedule(schedule_id, build(False, ""))
    except ScheduleAlreadyRunningError:
        handle = client.get_schedule_handle(schedule_id)

        def update(inp: ScheduleUpdateInput) -> ScheduleUpdate:
            state = inp.description.schedule.state
            return ScheduleUpdate(schedule=build(state.paused, state.note or ""))

        await handle.update(update)
        return handle
