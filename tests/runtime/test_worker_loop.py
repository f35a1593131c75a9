"""run_worker against the dev server: the fleet's worker polls its queue beside the cluster's, both shut down when
`stop` is set, a worker that dies ends run_worker with its error, and the lifecycle's own watch cache feeds the
Karpenter state gauges until the worker stops (runtime/worker_loop.py)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

from runtime import karpenter_state
from runtime.build_id import default_build_id
from runtime.cloud_clients import ec2_client
from runtime.settings import Deps, Settings
from runtime.worker_loop import run_worker

QUIET = {"watch": False, "provisioning": False, "lifecycle": False, "cluster_cache": False, "activity_threads": 2,
         "max_concurrent_activities": 4, "io_threads": 4}


async def _polled(client: Client, queue: str, timeout: float = 20) -> None:
    """Wait until a worker polls `queue` for workflow tasks."""
    req = DescribeTaskQueueRequest(namespace=client.namespace, task_queue=TaskQueue(name=queue),
                                   task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW)
    end = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < end:
        if (await client.workflow_service.describe_task_queue(req)).pollers:
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"no worker polled {queue} within {timeout} s")


def _deps(settings: Settings, moto_endpoint: str, api: Any = None) -> Deps:
    """The activities are built (their EC2 client needs a region) but none runs here."""
    return Deps(kube_api=api, ec2=ec2_client("us-east-1", moto_endpoint), settings=settings)


def _worker_tasks() -> list[str]:
    return [t.get_name() for t in asyncio.all_tasks() if t.get_name() in ("temporal-worker", "fleet-worker")]


@pytest.mark.timeout(90)
async def test_the_fleet_worker_runs_beside_the_cluster_worker_and_both_stop(temporal_client: Client,
                                                                              moto_endpoint: str) -> None:
    tag = uuid.uuid4().hex[:8]
    settings = Settings(task_queue=f"loop-{tag}", fleet_task_queue=f"loop-fleet-{tag}", **QUIET)
    stop = asyncio.Event()
    task = asyncio.create_task(run_worker(temporal_client, _deps(settings, moto_endpoint), stop))
    try:
        await _polled(temporal_client, settings.task_queue)
        await _polled(temporal_client, f"loop-fleet-{tag}")
        assert sorted(_worker_tasks()) == ["fleet-worker", "temporal-worker"]
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
    assert _worker_tasks() == []


@pytest.mark.timeout(90)
async def test_a_worker_that_dies_ends_run_worker_with_its_error(temporal_client: Client, moto_endpoint: str) -> None:
    """A namespace the server does not know: each worker's run() fails its validation, and run_worker raises that
    instead of waiting for `stop` (which is never set here)."""
    tag = uuid.uuid4().hex[:8]
    lost = Client(temporal_client.service_client, namespace=f"no-such-namespace-{tag}",
                  data_converter=temporal_client.data_converter)
    settings = Settings(task_queue=f"loop-{tag}", fleet_task_queue=f"loop-fleet-{tag}", **QUIET)
    with pytest.raises(RuntimeError, match=r"(?i)namespace"):
        await asyncio.wait_for(run_worker(lost, _deps(settings, moto_endpoint), asyncio.Event()), 30)
    assert _worker_tasks() == []


@pytest.mark.timeout(120)
async def test_the_lifecycle_own_cache_feeds_the_state_gauges_until_stop(temporal_client: Client,
                                                                          sim_ec2: Any, moto_endpoint: str) -> None:
    """Without the worker's cluster cache the lifecycle controllers list and watch with their own, and the
    Karpenter state gauges read that one; stopping detaches the gauges and stops the cache."""
    api = sim_ec2.api_client()
    settings = Settings(task_queue=f"loop-{uuid.uuid4().hex[:8]}", **{**QUIET, "lifecycle": True})
    settings.ami_id = sim_ec2.world.ec2.image_id()
    before = karpenter_state.STATE._source()
    stop = asyncio.Event()
    task = asyncio.create_task(run_worker(temporal_client, _deps(settings, moto_endpoint, api), stop))
    try:
        await _polled(temporal_client, settings.task_queue)
        attached = karpenter_state.STATE._source()
        assert attached is not None and attached is not before
        names = {t.get_name() for t in asyncio.all_tasks()}
        assert {"nodeclaim-lifecycle", "nodeclaim-gc", "karpenter-state", "event-loop-lag"} <= names, names
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
        api.close()
    assert karpenter_state.STATE._source() is before
    left = {t.get_name() for t in asyncio.all_tasks()} & {"nodeclaim-lifecycle", "nodeclaim-gc", "karpenter-state",
                                                         "event-loop-lag"}
    assert left == set()


async def _poller_build_ids(client: Client, queue: str) -> set[str]:
    req = DescribeTaskQueueRequest(namespace=client.namespace, task_queue=TaskQueue(name=queue),
                                   task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW)
    pollers = (await client.workflow_service.describe_task_queue(req)).pollers
    return {p.worker_version_capabilities.build_id for p in pollers}


@pytest.mark.timeout(90)
@pytest.mark.parametrize("build_id", [None, "release-2026.11.30"])
async def test_both_workers_poll_with_the_build_id_given_else_the_named_default(temporal_client: Client,
                                                                                 moto_endpoint: str,
                                                                                 build_id: str | None) -> None:
    """What Temporal shows as the pollers' build id: `--build-id`, else runtime/build_id.py's default (not the SDK's
    hash of every loaded module)."""
    tag = uuid.uuid4().hex[:8]
    settings = Settings(task_queue=f"bid-{tag}", fleet_task_queue=f"bid-fleet-{tag}", build_id=build_id, **QUIET)
    stop = asyncio.Event()
    task = asyncio.create_task(run_worker(temporal_client, _deps(settings, moto_endpoint), stop))
    try:
        await _polled(temporal_client, settings.task_queue)
        await _polled(temporal_client, f"bid-fleet-{tag}")
        want = build_id or default_build_id()
        assert await _poller_build_ids(temporal_client, settings.task_queue) == {want}
        assert await _poller_build_ids(temporal_client, f"bid-fleet-{tag}") == {want}
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
