"""Shared setup of the termination end-to-end tests: a small cluster in the simulator whose Nodes point at
real moto EC2 instances, and an in-process worker (plus deletion watcher) on a unique task queue."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import boto3
from temporalio.client import Client

from bench.termination_cluster import POOL, PodSpec, cluster_objects  # noqa: F401 - re-exported
from runtime.settings import Deps, Settings
from runtime.worker_loop import run_worker
from simulator.ec2 import DEFAULT_AMI


def launch_instances(ec2: Any, count: int) -> list[str]:
    resp = ec2.run_instances(ImageId="ami-12c6146b", MinCount=count, MaxCount=count, InstanceType="m5.large",
                             Placement={"AvailabilityZone": "us-east-1a"})
    return [i["InstanceId"] for i in resp["Instances"]]


def instance_state(ec2: Any, instance_id: str) -> str:
    resp = ec2.describe_instances(InstanceIds=[instance_id])
    return resp["Reservations"][0]["Instances"][0]["State"]["Name"]


def ec2_client(endpoint: str) -> Any:
    return boto3.client("ec2", region_name="us-east-1", endpoint_url=endpoint)


# Karpenter's MinDrainTime is 5 s of wall clock per termination of a node with a NodeClaim (the drain runs again
# when it is up, workflows/termination.py); a test whose point is not that wait passes this as `min_drain`, so the
# second drain still runs, 0.5 s after the first (tests/workflows/test_v114_min_drain_time.py checks the 5 s).
QUICK_DRAIN = 0.5
QUICK_WORKER = {"min_drain_seconds": QUICK_DRAIN}  # the same as more worker Settings (disruption_stack(worker=...))


@contextlib.asynccontextmanager
async def running_worker(client: Client, sim: Any, moto_endpoint: str, watch: bool = True,
                         resync: float = 2.0, min_drain: float | None = None) -> AsyncIterator[str]:
    """A worker + watcher in this process on a fresh task queue; yields the task queue. `min_drain`: the worker's
    MinDrainTime in seconds (None: Karpenter's 5 s)."""
    tq = f"tq-{uuid.uuid4()}"
    api = sim.api_client()
    api.configuration.connection_pool_maxsize = 32
    deps = Deps(kube_api=api, ec2=ec2_client(moto_endpoint), temporal=client,
                settings=Settings(task_queue=tq, watch=watch, resync_seconds=resync, min_drain_seconds=min_drain,
                                  ami_id=DEFAULT_AMI))  # launches for drained pods: no EC2NodeClass
    stop = asyncio.Event()
    task = asyncio.create_task(run_worker(client, deps, stop, task_queue=tq))
    try:
        yield tq
    finally:
        stop.set()
        await asyncio.wait_for(task, timeout=20)
        api.close()


async def eventually(check: Callable[[], Any], timeout: float = 30.0, interval: float = 0.1,
                     what: str = "condition") -> Any:
    """Poll `check` (run in a thread: it may do blocking I/O) until it returns something truthy."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = await asyncio.to_thread(check)
        if last:
            return last
        await asyncio.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


HISTORIES = Path(__file__).resolve().parents[1] / "histories"


async def record_history(handle: Any, scenario: str) -> None:
    """With RECORD_HISTORIES=1, keep this run's history for tests/test_replay.py (replayed against new code)."""
    if os.environ.get("RECORD_HISTORIES") != "1":
        return
    history = await handle.fetch_history()
    HISTORIES.mkdir(parents=True, exist_ok=True)
    (HISTORIES / f"TerminationWorkflow__{scenario}.json").write_text(history.to_json(), encoding="utf-8")
