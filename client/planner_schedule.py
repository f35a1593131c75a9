"""The `nodeflow-planner` Temporal Schedule: one PlannerWorkflow pass every 10 s, overlap SKIP.

`ensure_planner_schedule` is idempotent (create, or update in place keeping the paused state), so the
worker can call it on every start. Pausing the schedule is the global pause of voluntary disruption.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.client import Client, Schedule, ScheduleActionStartWorkflow, ScheduleHandle

from client.schedules import ensure_schedule, interval_schedule
from contracts.disruption import DisruptionSettings, PlannerInput
from contracts.search_attributes import TASK_QUEUE, queue_scoped
from workflows import summaries
from workflows.planner import PlannerWorkflow

PLANNER_SCHEDULE_ID = "nodeflow-planner"
PLANNER_WORKFLOW_ID = "nodeflow-planner-pass"
DEFAULT_EVERY = timedelta(seconds=10)


def planner_schedule_id(task_queue: str = TASK_QUEUE) -> str:
    """`nodeflow-planner` for the production queue; one per cluster queue in a fleet (docs/fleet.md)."""
    return queue_scoped(PLANNER_SCHEDULE_ID, task_queue)


def planner_schedule(every: timedelta = DEFAULT_EVERY, task_queue: str = TASK_QUEUE,
                     settings: DisruptionSettings | None = None, paused: bool = False,
                     note: str = "") -> Schedule:
    """The schedule: a planner pass every `every`."""
    action = ScheduleActionStartWorkflow(PlannerWorkflow.run, PlannerInput(settings=settings or DisruptionSettings()),
                                         id=queue_scoped(PLANNER_WORKFLOW_ID, task_queue), task_queue=task_queue,
                                         execution_timeout=max(every * 30, timedelta(minutes=10)),
                                         **summaries.planner_pass(every, task_queue).kwargs())
    return interval_schedule(action, every, paused, note)


async def ensure_planner_schedule(client: Client, every: timedelta = DEFAULT_EVERY, task_queue: str = TASK_QUEUE,
                                  settings: DisruptionSettings | None = None,
                                  schedule_id: str | None = None) -> ScheduleHandle:
    """Create the planner schedule, or update an existing one in place (its paused state is kept)."""
    return await ensure_schedule(client, schedule_id or planner_schedule_id(task_queue),
                                 lambda paused, note: planner_schedule(every, task_queue, settings, paused, note))


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
