"""The Temporal SDK's failure counters reach nodeflow's registry: a failed workflow, a failing workflow task and
a failed activity attempt, as the SDK core reports them from a real worker on the dev server; and the planner
schedule's paused state."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
import pytest_asyncio
from temporalio import activity, workflow
from temporalio.client import Client, WorkflowFailureError
from temporalio.common import RetryPolicy
from temporalio.runtime import MetricBuffer, Runtime, TelemetryConfig
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from client.planner_schedule import ensure_planner_schedule, set_planner_paused
from devstack.binaries import find_binary
from runtime.temporal_metrics import copy_failures, new_buffer, pump, track_planner_pause
from telemetry.metrics import REGISTRY


@activity.defn(name="metrics_probe.fails")
async def fails() -> None:
    raise RuntimeError("the probe activity fails")


@workflow.defn(name="MetricsProbeFails", sandboxed=False)
class FailsWorkflow:
    @workflow.run
    async def run(self) -> None:
        await workflow.execute_activity(fails, start_to_close_timeout=timedelta(seconds=5),
                                        retry_policy=RetryPolicy(maximum_attempts=2,
                                                                 initial_interval=timedelta(milliseconds=50)))


@workflow.defn(name="MetricsProbeBroken", sandboxed=False)
class BrokenWorkflow:
    @workflow.run
    async def run(self) -> None:
        raise KeyError("a bug: the workflow task fails and Temporal retries it")


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest_asyncio.fixture
async def buffered() -> AsyncIterator[tuple[WorkflowEnvironment, MetricBuffer]]:
    """A dev server and a client on their own SDK runtime whose metrics go to a buffer (as the worker's do)."""
    buffer = new_buffer()
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=find_binary("temporal"),
                                                runtime=Runtime(telemetry=TelemetryConfig(metrics=buffer)))
    try:
        yield env, buffer
    finally:
        await env.shutdown()


async def test_sdk_failures_are_copied_into_the_registry(
        buffered: tuple[WorkflowEnvironment, MetricBuffer]) -> None:
    env, buffer = buffered
    before = (value("nodeflow_workflow_failures_total", workflow_type="MetricsProbeFails"),
              value("nodeflow_activity_failures_total", activity_type="metrics_probe.fails"),
              value("nodeflow_workflow_task_failures_total", workflow_type="MetricsProbeBroken",
                    failure_reason="WorkflowError"))
    tq = f"tq-{uuid.uuid4()}"
    stop = asyncio.Event()
    pumping = asyncio.create_task(pump(buffer, stop, every=0.05))
    async with Worker(env.client, task_queue=tq, workflows=[FailsWorkflow, BrokenWorkflow], activities=[fails]):
        with pytest.raises(WorkflowFailureError):
            await env.client.execute_workflow(FailsWorkflow.run, id=f"fails-{uuid.uuid4()}", task_queue=tq)
        broken = await env.client.start_workflow(BrokenWorkflow.run, id=f"broken-{uuid.uuid4()}", task_queue=tq)
        for _ in range(100):
            if value("nodeflow_workflow_task_failures_total", workflow_type="MetricsProbeBroken",
                     failure_reason="WorkflowError") > before[2]:
                break
            await asyncio.sleep(0.05)
        await broken.terminate()
    stop.set()
    await asyncio.wait_for(pumping, 5)
    assert value("nodeflow_workflow_failures_total", workflow_type="MetricsProbeFails") == before[0] + 1
    assert value("nodeflow_activity_failures_total", activity_type="metrics_probe.fails") == before[1] + 2
    assert value("nodeflow_workflow_task_failures_total", workflow_type="MetricsProbeBroken",
                 failure_reason="WorkflowError") > before[2]
    assert copy_failures(buffer.retrieve_updates()) == 0  # the pump drained everything on its last round


async def test_the_planner_pause_is_tracked_from_the_schedule(temporal_client: Client) -> None:
    """nodeflow_planner_paused follows `nodeflow pause` / `resume` (the schedule's state) within one interval."""
    schedule_id = f"planner-pause-{uuid.uuid4()}"
    handle = await ensure_planner_schedule(temporal_client, task_queue=f"tq-{uuid.uuid4()}", schedule_id=schedule_id)
    stop = asyncio.Event()
    tracking = asyncio.create_task(track_planner_pause(temporal_client, stop, every=0.05, schedule_id=schedule_id))
    try:
        for paused in (True, False, True):
            await set_planner_paused(temporal_client, paused, schedule_id=schedule_id)
            for _ in range(100):
                if value("nodeflow_planner_paused") == float(paused):
                    break
                await asyncio.sleep(0.05)
            assert value("nodeflow_planner_paused") == float(paused)
    finally:
        stop.set()
        await asyncio.wait_for(tracking, 5)
        await handle.delete()
