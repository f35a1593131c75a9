"""Shared setup of the interruption end-to-end tests: a cluster in the simulator whose Nodes are real moto
EC2 instances, an SQS queue on moto, EventBridge-shaped messages, and an in-process worker with the intake."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import boto3
from kubernetes import client as k8s
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowQueryFailedError
from temporalio.service import RPCError, RPCStatusCode

from api import interruption_events as events
from api import labels
from client.interruption import ensure_interruption_poller, poller_workflow_id
from contracts.interruption import PollInput
from runtime.settings import Deps, Settings
from runtime.worker_loop import run_worker
from simulator.server import Simulator

TEST_AMI = "ami-0a1b2c3d4e5f60718"  # moto accepts any id; discovering one (DescribeImages) takes seconds
FAST_POLL = PollInput(run_seconds=30, wait_seconds=1, visibility_timeout_seconds=3, max_receives=3,
                      heartbeat_seconds=2)


@dataclass(frozen=True)
class NodeSpec:
    name: str
    pool: str
    capacity_type: str = labels.CAPACITY_ON_DEMAND
    instance_type: str = "m5.large"
    zone: str = "us-east-1a"


def nodepool(name: str, rebalance: str | None = None) -> dict[str, Any]:
    annotations = {labels.REBALANCE_ANNOTATION: rebalance} if rebalance else {}
    return {
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool",
        "metadata": {"name": name, "uid": str(uuid.uuid4()), "annotations": annotations},
        "spec": {"template": {"spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
            "requirements": [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["spot", "on-demand"]}],
        }}},
    }


def node_objects(spec: NodeSpec) -> list[dict[str, Any]]:
    """A NodeClaim and its Node (allocatable from the catalog, so pods can be placed on it); the simulator gives
    both a real EC2 instance (providerID) when loaded."""
    from api.catalog import load_default_catalog

    it = load_default_catalog().get(spec.instance_type)
    alloc = {"cpu": it.cpu, "memory": it.memory, "pods": str(it.pods)} if it else {}
    node_labels = {labels.NODEPOOL_LABEL: spec.pool, labels.INSTANCE_TYPE_LABEL: spec.instance_type,
                   labels.CAPACITY_TYPE_LABEL: spec.capacity_type, labels.ZONE_LABEL: spec.zone,
                   labels.ARCH_LABEL: "amd64", labels.INITIALIZED_LABEL: "true", labels.REGISTERED_LABEL: "true"}
    claim = f"{spec.name}-claim"
    return [
        {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
         "metadata": {"name": claim, "labels": dict(node_labels), "finalizers": [labels.TERMINATION_FINALIZER]},
         "spec": {"requirements": [], "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                       "name": "default"}},
         "status": {"nodeName": spec.name}},
        {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": spec.name, "labels": {**node_labels, labels.HOSTNAME_LABEL: spec.name},
                      "finalizers": [labels.TERMINATION_FINALIZER]},
         "spec": {}, "status": {"capacity": dict(alloc), "allocatable": dict(alloc)}},
    ]


def load_cluster(sim: Simulator, pools: list[dict[str, Any]], nodes: list[NodeSpec]) -> dict[str, dict[str, Any]]:
    """Load the objects; returns node name -> {uid, instance, provider_id} as the API server reports them."""
    objs = list(pools)
    for spec in nodes:
        objs += node_objects(spec)
    sim.load_objects(objs)
    api = sim.api_client()
    try:
        out = {}
        for node in k8s.CoreV1Api(api).list_node().items:
            pid = node.spec.provider_id
            out[node.metadata.name] = {"uid": node.metadata.uid, "provider_id": pid, "instance": pid.rsplit("/", 1)[-1]}
        return out
    finally:
        api.close()


def spot_warning(instance: str, time_: datetime | None = None) -> str:
    return events.spot_warning(instance, at=time_)


def rebalance(instance: str) -> str:
    return events.rebalance_recommendation(instance)


def state_change(instance: str, state: str, message_id: str | None = None) -> str:
    return events.state_change(instance, state, message_id=message_id)


def scheduled_change(instance: str) -> str:
    return events.scheduled_change([instance])


def new_queue(moto_endpoint: str) -> tuple[Any, str]:
    sqs = boto3.client("sqs", endpoint_url=moto_endpoint, region_name="us-east-1")
    url = sqs.create_queue(QueueName=f"interruption-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    return sqs, url


def queue_depth(sqs: Any, url: str) -> tuple[int, int]:
    """(visible, in flight) messages."""
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[
        "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
    return int(attrs["ApproximateNumberOfMessages"]), int(attrs["ApproximateNumberOfMessagesNotVisible"])


async def eventually(check: Callable[[], Any], timeout: float = 20.0, interval: float = 0.1) -> Any:
    """Await until `check()` (sync or async) returns something truthy; an exception counts as "not yet"
    (e.g. querying a workflow that is not started yet). Raises with the last value or error otherwise."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
            if asyncio.iscoroutine(last):
                last = await last
        except (AssertionError, RPCError, WorkflowQueryFailedError) as exc:
            last = exc
        else:
            if last:
                return last
        await asyncio.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s (last: {last!r})")


async def workflow_exists(client: Client, workflow_id: str) -> bool:
    try:
        await client.get_workflow_handle(workflow_id).describe()
        return True
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return False
        raise


@contextlib.asynccontextmanager
async def intake_worker(client: Client, sim: Simulator, moto_endpoint: str, sqs: Any, queue_url: str,
                        task_queue: str | None = None, poll: PollInput = FAST_POLL,
                        start_poller: bool = True, min_drain: float | None = None) -> AsyncIterator[str]:
    """Run an in-process worker with the interruption intake on a unique task queue; yields the task queue.
    `min_drain`: the worker's MinDrainTime in seconds (None: Karpenter's 5 s), for a test that waits for a
    termination to end without being about that wait."""
    tq = task_queue or f"interruption-{uuid.uuid4().hex[:10]}"
    if start_poller:
        await ensure_interruption_poller(client, tq, poll)
    ec2 = boto3.client("ec2", endpoint_url=moto_endpoint, region_name="us-east-1")
    api = sim.api_client()
    deps = Deps(kube_api=api, ec2=ec2, sqs=sqs, temporal=client,
                settings=Settings(task_queue=tq, watch=False, interruption_queue_url=queue_url,
                                  interruption_poll=poll, ami_id=TEST_AMI, min_drain_seconds=min_drain))
    stop = asyncio.Event()
    task = asyncio.create_task(run_worker(client, deps, stop))
    try:
        yield tq
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
        await stop_workflows(client, tq)
        api.close()


async def stop_workflows(client: Client, task_queue: str) -> None:
    """Terminate whatever the test left running on its task queue (the poller never ends by itself)."""
    with contextlib.suppress(RPCError):
        await client.get_workflow_handle(poller_workflow_id(task_queue)).terminate("test finished")
    async for wf in client.list_workflows(f'TaskQueue = "{task_queue}"'):
        if wf.status == WorkflowExecutionStatus.RUNNING:
            with contextlib.suppress(RPCError):
                await client.get_workflow_handle(wf.id, run_id=wf.run_id).terminate("test finished")
