"""runtime/activity_start_delay.py: each activity attempt's wait between Temporal's recorded start and its function
is observed by activity type, async and threaded activities alike; local activities, started by the worker itself,
are not."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker

from runtime.activity_start_delay import StartDelay
from telemetry.metrics import REGISTRY

DELAY = "nodeflow_activity_start_delay_seconds"


@activity.defn(name="start_delay_probe.async")
async def async_probe() -> str:
    return "async"


@activity.defn(name="start_delay_probe.threaded")
def threaded_probe() -> str:
    return "threaded"


@activity.defn(name="start_delay_probe.local")
async def local_probe() -> str:
    return "local"


@workflow.defn(name="StartDelayProbe", sandboxed=False)
class ProbeWorkflow:
    @workflow.run
    async def run(self) -> list[str]:
        opts = {"start_to_close_timeout": timedelta(seconds=10)}
        return [await workflow.execute_activity(async_probe, **opts),
                await workflow.execute_activity(threaded_probe, **opts),
                await workflow.execute_local_activity(local_probe, **opts)]


def _count(activity_type: str) -> float:
    return REGISTRY.get_sample_value(f"{DELAY}_count", {"activity_type": activity_type}) or 0.0


async def test_each_attempt_is_observed_by_type_and_local_ones_are_not(temporal_client: Client) -> None:
    types = ("start_delay_probe.async", "start_delay_probe.threaded", "start_delay_probe.local")
    before = {t: _count(t) for t in types}
    queue = f"start-delay-{uuid.uuid4().hex[:8]}"
    with ThreadPoolExecutor(max_workers=2) as threads:
        async with Worker(temporal_client, task_queue=queue, workflows=[ProbeWorkflow],
                          activities=[async_probe, threaded_probe, local_probe], activity_executor=threads,
                          interceptors=[StartDelay()]):
            result = await temporal_client.execute_workflow(ProbeWorkflow.run, id=queue, task_queue=queue)
    assert result == ["async", "threaded", "local"]
    assert {t: _count(t) - before[t] for t in types} == {types[0]: 1, types[1]: 1, types[2]: 0}
