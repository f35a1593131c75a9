"""The fleet's own worker: FleetRolloutWorkflows on the fleet task queue (docs/fleet.md).

Any cluster's worker may run it beside its own (`--fleet-task-queue`); several may, for availability. It holds no
cluster credentials: everything that touches a cluster is an activity on that cluster's queue.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio.client import Client
from temporalio.worker import Worker

from activities.fleet import prometheus_gate
from runtime.build_id import default_build_id
from workflows.fleet import FleetRolloutWorkflow


def build_fleet_worker(client: Client, task_queue: str, sticky_queue_timeout_seconds: float = 10.0,
                       build_id: str | None = None) -> Worker:
    """`sticky_queue_timeout_seconds`: as the cluster worker's (`--sticky-queue-timeout`): how long a rollout cached
    by a fleet worker that died waits before another worker takes its next task (a bake's timer, an observation).
    `build_id`: `--build-id`, else runtime/build_id.py's default."""
    return Worker(client, task_queue=task_queue, workflows=[FleetRolloutWorkflow], activities=[prometheus_gate],
                  graceful_shutdown_timeout=timedelta(seconds=5),
                  sticky_queue_schedule_to_start_timeout=timedelta(seconds=sticky_queue_timeout_seconds),
                  build_id=build_id or default_build_id())


async def run_fleet_worker(client: Client, task_queue: str, stop: asyncio.Event,
                           sticky_queue_timeout_seconds: float = 10.0, build_id: str | None = None) -> None:
    """Run only the fleet's worker until `stop` is set (`worker.py --fleet-only`)."""
    worker = build_fleet_worker(client, task_queue, sticky_queue_timeout_seconds, build_id)
    task = asyncio.create_task(worker.run(), name="fleet-worker")
    stopping = asyncio.create_task(stop.wait())
    done, _ = await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        task.result()  # the worker died: surface why
    stopping.cancel()
    await worker.shutdown()
    await asyncio.gather(task, return_exceptions=True)
