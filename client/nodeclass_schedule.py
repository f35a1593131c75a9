"""The `nodeflow-nodeclass` Temporal Schedule: one NodeClassWorkflow every 60 s, overlap SKIP.

Like the planner's schedule, `ensure_nodeclass_schedule` is idempotent (create, or update in place keeping a
pause), so every worker start calls it.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.client import Client, Schedule, ScheduleActionStartWorkflow, ScheduleHandle

from client.schedules import ensure_schedule, interval_schedule
from contracts.nodeclass import NodeClassInput
from contracts.search_attributes import TASK_QUEUE, queue_scoped
from workflows import summaries
from workflows.nodeclass import NodeClassWorkflow

NODECLASS_SCHEDULE_ID = "nodeflow-nodeclass"
NODECLASS_WORKFLOW_ID = "nodeflow-nodeclass-pass"
DEFAULT_EVERY = timedelta(seconds=60)


def nodeclass_schedule(every: timedelta = DEFAULT_EVERY, task_queue: str = TASK_QUEUE, paused: bool = False,
                       note: str = "") -> Schedule:
    """A resolution every `every`; a missed tick is dropped (the next one resolves the same)."""
    action = ScheduleActionStartWorkflow(NodeClassWorkflow.run, NodeClassInput(),
                                         id=queue_scoped(NODECLASS_WORKFLOW_ID, task_queue),
                                         task_queue=task_queue, execution_timeout=max(every * 5, timedelta(minutes=10)),
                                         **summaries.nodeclass_pass(every).kwargs())
    return interval_schedule(action, every, paused, note)


async def ensure_nodeclass_schedule(client: Client, every: timedelta = DEFAULT_EVERY, task_queue: str = TASK_QUEUE,
                                    schedule_id: str | None = None) -> ScheduleHandle:
    """Create the schedule, or update an existing one in place (its paused state is kept)."""
    return await ensure_schedule(client, schedule_id or queue_scoped(NODECLASS_SCHEDULE_ID, task_queue),
                                 lambda paused, note: nodeclass_schedule(every, task_queue, paused, note))
