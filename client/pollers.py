"""Which task queues a worker polls now, so a status read does not wait out a query no worker can answer.

A query to a workflow whose worker is gone blocks until its timeout (5 s in `nodeflow status`): with one such
workflow in the namespace every `status` call, and every refresh of `status --watch`, took those 5 s. The task
queue's poller list says it at once. A worker in a long poll shows the time that poll began (a poll lasts up to a
minute), so a poller seen within `RECENT` counts as live; one stopped moments ago still does, and its query then
times out as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime, timedelta

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

RECENT = timedelta(seconds=90)


async def unpolled(client: Client, queues: Iterable[str | None], now: datetime | None = None) -> set[str]:
    """The task queues among `queues` that no workflow worker has polled within RECENT.

    A queue whose pollers cannot be read counts as polled: the query then tries, and says what went wrong itself.
    """
    names = sorted({q for q in queues if q})
    at = now or datetime.now(UTC)
    found = await asyncio.gather(*(_last_poll(client, q) for q in names), return_exceptions=True)
    return {q for q, last in zip(names, found, strict=True)
            if not isinstance(last, BaseException) and (last is None or at - last > RECENT)}


async def _last_poll(client: Client, queue: str) -> datetime | None:
    """When a workflow worker last polled `queue`; None if none is on record."""
    response = await client.workflow_service.describe_task_queue(DescribeTaskQueueRequest(
        namespace=client.namespace, task_queue=TaskQueue(name=queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW))
    times = [p.last_access_time.ToDatetime(tzinfo=UTC) for p in response.pollers if p.HasField("last_access_time")]
    return max(times, default=None)


async def query_where_polled(client: Client, items: Iterable[tuple[str | None, Callable[[], Awaitable[None]],
                                                                   Callable[[str], None]]]) -> None:
    """Run each item's query at once, except where no worker polls its task queue: there call its `unanswered`
    with the reason instead. Items: (task queue, query, unanswered)."""
    items = list(items)
    idle = await unpolled(client, (queue for queue, _, _ in items))
    for queue, _, unanswered in items:
        if queue in idle:
            unanswered(no_worker_message(queue or ""))
    await asyncio.gather(*(query() for queue, query, _ in items if queue not in idle))


def no_worker_message(queue: str) -> str:
    """What a row says instead of its query's answer."""
    return f"no worker polls task queue {queue!r}: start a worker on it (the row shows the search attributes' view)"
