"""The `nodeflow-planner` Temporal Schedule: one PlannerWorkflow pass every 10 s, overlap SKIP.

`ensure_planner_schedule` is idempotent (create, or update in place keeping the paused state), so the
worker can call it on every start. Pausing the schedule is the global pause of voluntary disruption.
"""

from __future__ import annotations

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

from workflows.disruption_models import DisruptionSettings, PlannerInput
from workflows.planner import PlannerWorkflow
from workflows.search_attributes import TASK_QUEUE

PLANNER_SCHEDULE_ID = "nodeflow-planner"
PLANNER_WORKFLOW_ID = "nodeflow-planner-pass"
DEFAULT_EVERY = timedelta(seconds=10)


def planner_schedule(every: timedelta = DEFAULT_EVERY, task_queue: str = TASK_QUEUE,
                     settings: DisruptionSettings | None = None, paused: bool = False,
                     note: str = "") -> Schedule:
    """The schedule: a pass every `every`; missed ticks older than one interval are dropped, not replayed."""
    return Schedule(
        action=ScheduleActionStartWorkflow(
            PlannerWorkflow.run, PlannerInput(settings=settings or DisruptionSettings()),
            id=PLANNER_WORKFLOW_ID, task_queue=task_queue,
            execution_timeout=max(every * 30, timedelta(minutes=10)),
        ),
        spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=every)]),
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP, catchup_window=max(every, timedelta(seconds=10))),
        state=ScheduleState(paused=paused, note=note),
    )


async def ensure_planner_schedule(client: Client, every: timedelta = DEFAULT_EVERY, task_queue: str = TASK_QUEUE,
                                  settings: DisruptionSettings | None = None,
                                  schedule_id: str = PLANNER_SCHEDULE_ID) -> ScheduleHandle:
    """Create the planner schedule, or update an existing one in place (its paused state is kept)."""
    try:
        return await client.create_schedule(schedule_id, planner_schedule(every, task_queue, settings))
    except ScheduleAlreadyRunningError:
        handle = client.get_schedule_handle(schedule_id)

        def update(inp: ScheduleUpdateInput) -> ScheduleUpdate:
            state = inp.description.schedule.state
            return ScheduleUpdate(schedule=planner_schedule(every, task_queue, settings, paused=state.paused,
                                                            note=state.note or ""))

        await handle.update(update)
        return handle


async def set_planner_paused(client: Client, paused: bool, note: str = "",
                             schedule_id: str = PLANNER_SCHEDULE_ID) -> bool:
    """Pause or resume every planner pass; returns the previous paused state."""
    handle = client.get_schedule_handle(schedule_id)
    desc = await handle.describe()
    was = desc.schedule.state.paused
    if paused:
        await handle.pause(note=note or "paused by nodeflow pause")
    else:
        await handle.unpause(note=note or "resumed by nodeflow resume")
    return was


async def planner_paused(client: Client, schedule_id: str = PLANNER_SCHEDULE_ID) -> bool:
    return (await client.get_schedule_handle(schedule_id).describe()).schedule.state.paused
