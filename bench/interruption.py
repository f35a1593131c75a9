"""Spot warning -> replacement RunInstances latency (docs/decisions.md §9: under 5 s).

Real pieces: moto_server (SQS + EC2), a Temporal dev server, the Kubernetes simulator with EC2-backed
spot nodes, and the worker in-process with production poll settings (20 s long poll). The clock starts
just before SendMessage and stops when the provisioning activity issues RunInstances for that node's
pre-spin NodeClaim (seen by wrapping the worker's EC2 client). Each node runs one pod that fits on no other node
(`app`), so every pre-spin, sized from the node's pods, launches one NodeClaim; the clock includes that sizing.

    .venv/bin/python -m bench.interruption [--nodes 10] [--burst 10] [-o json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import threading
import time
import uuid
from typing import Any

import boto3
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from activities.provisioning import nodeclaim_name
from api import interruption_events, labels
from client.interruption import poller_workflow_id
from contracts.interruption import PollInput, prespin_workflow_id
from devstack.processes import MotoServer, TemporalDevServer
from runtime.settings import Deps, Settings
from runtime.worker_loop import run_worker
from simulator.server import Simulator

POOL = "spot"
AMI = "ami-0a1b2c3d4e5f60718"
TARGET_SECONDS = 5.0
ALLOCATABLE = {"cpu": "2", "memory": "8Gi", "pods": "29"}  # m5.large


class RecordingEc2:
    """The worker's EC2 client, noting when RunInstances is called for each NodeClaim tag."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.calls: dict[str, float] = {}
        self._lock = threading.Lock()

    def run_instances(self, **params: Any) -> Any:
        now = time.time()
        for spec in params.get("TagSpecifications", []):
            for tag in spec.get("Tags", []):
                if tag["Key"] == "karpenter.sh/nodeclaim":
                    with self._lock:
                        self.calls.setdefault(tag["Value"], now)
        return self._inner.run_instances(**params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def cluster(count: int) -> list[dict[str, Any]]:
    ref = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
    objs: list[dict[str, Any]] = [{
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": POOL},
        "spec": {"template": {"spec": {"nodeClassRef": ref, "requirements": [
            {"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["spot", "on-demand"]}]}}},
    }]
    for i in range(count):
        name = f"spot-{i:03d}"
        node_labels = {labels.NODEPOOL_LABEL: POOL, labels.INSTANCE_TYPE_LABEL: "m5.large",
                       labels.CAPACITY_TYPE_LABEL: labels.CAPACITY_SPOT, labels.ZONE_LABEL: "us-east-1a",
                       labels.ARCH_LABEL: "amd64", labels.INITIALIZED_LABEL: "true"}
        objs += [
            {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
             "metadata": {"name": f"{name}-claim", "labels": dict(node_labels),
                          "finalizers": [labels.TERMINATION_FINALIZER]},
             "spec": {"requirements": [], "nodeClassRef": ref}, "status": {"nodeName": name}},
            {"apiVersion": "v1", "kind": "Node",
             "metadata": {"name": name, "labels": node_labels, "finalizers": [labels.TERMINATION_FINALIZER]},
             "spec": {}, "status": {"capacity": dict(ALLOCATABLE), "allocatable": dict(ALLOCATABLE)}},
            *app(name),
        ]
    return objs


def app(node: str) -> list[dict[str, Any]]:
    """One ReplicaSet per node whose pod fits on no other node: the pre-spin, sized from the node's pods, launches one
    NodeClaim, and the evicted pod's pending successor keeps that room taken for the next warning's sizing."""
    name = f"{node}-app"
    template = {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{
        "name": "app", "image": "app", "resources": {"requests": {"cpu": "1500m", "memory": "4Gi"}}}]}}
    return [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name, "namespace": "default"},
             "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}}, "template": template}},
            {"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"{name}-0", "namespace": "default", "labels": {"app": name},
                          "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name,
                                               "controller": True}]},
             "spec": {**template["spec"], "nodeName": node}}]


def nodes_by_instance(sim: Simulator) -> dict[str, str]:
    """instance id -> node uid."""
    from kubernetes import client as k8s

    api = sim.api_client()
    try:
        return {n.spec.provider_id.rsplit("/", 1)[-1]: n.metadata.uid for n in k8s.CoreV1Api(api).list_node().items}
    finally:
        api.close()


async def wait_for_call(ec2: RecordingEc2, claim: str, timeout: float) -> float | None:
    """Polls on the event loop: a thread per waiter would starve the worker's own `to_thread` calls."""
    end = time.monotonic() + timeout
    while claim not in ec2.calls and time.monotonic() < end:
        await asyncio.sleep(0.005)
    return ec2.calls.get(claim)


async def measure(nodes: int, burst: int, timeout: float) -> dict[str, Any]:
    with MotoServer() as moto, TemporalDevServer(headless=True) as temporal:
        client = await Client.connect(temporal.address, data_converter=pydantic_data_converter)
        sqs = boto3.client("sqs", endpoint_url=moto.endpoint, region_name="us-east-1")
        url = sqs.create_queue(QueueName=f"bench-{uuid.uuid4().hex[:8]}")["QueueUrl"]
        ec2 = RecordingEc2(boto3.client("ec2", endpoint_url=moto.endpoint, region_name="us-east-1"))
        with Simulator(time_scale=0.05, ready_delay=2.0, ec2_endpoint=moto.endpoint, ec2_poll_seconds=0.5,
                       objects=cluster(nodes + burst)) as sim:
            instances = nodes_by_instance(sim)
            order = sorted(instances)
            tq = f"bench-{uuid.uuid4().hex[:8]}"
            api = sim.api_client()
            deps = Deps(kube_api=api, ec2=ec2, sqs=sqs, temporal=client,
                        settings=Settings(task_queue=tq, watch=False, interruption_queue_url=url,
                                          interruption_poll=PollInput(), ami_id=AMI))
            stop = asyncio.Event()
            worker = asyncio.create_task(run_worker(client, deps, stop))
            await asyncio.sleep(2.0)  # the poller's first long poll is in flight, as in steady state

            dispatch: list[float] = []

            async def one(instance: str) -> float | None:
                wf_id = prespin_workflow_id(instances[instance])
                claim = nodeclaim_name(POOL, wf_id)
                body = interruption_events.spot_warning(instance)
                t0 = time.time()
                await asyncio.to_thread(sqs.send_message, QueueUrl=url, MessageBody=body)
                t1 = await wait_for_call(ec2, claim, timeout)
                if t1 is not None:  # how much of it was the intake (queue -> pre-spin workflow started)
                    started = (await client.get_workflow_handle(wf_id).describe()).start_time
                    dispatch.append(started.timestamp() - t0)
                return None if t1 is None else t1 - t0

            sequential = []
            for instance in order[:nodes]:
                sequential.append(await one(instance))
                await asyncio.sleep(0.5)
            sequential_dispatch, dispatch = dispatch, []
            bursted = list(await asyncio.gather(*(one(i) for i in order[nodes:nodes + burst])))
            stop.set()
            await asyncio.wait_for(worker, 60)
            await client.get_workflow_handle(poller_workflow_id(tq)).terminate("bench finished")
            api.close()
    return {"sequential": summary(sequential), "burst": summary(bursted), "targetSeconds": TARGET_SECONDS,
            "intakeOnly": {"sequential": summary(sequential_dispatch), "burst": summary(dispatch)}}


def summary(samples: list[float | None]) -> dict[str, Any]:
    ok = sorted(s for s in samples if s is not None)
    if not ok:
        return {"count": len(samples), "missed": len(samples)}
    return {"count": len(samples), "missed": len(samples) - len(ok), "min": round(ok[0], 3),
            "p50": round(statistics.median(ok), 3), "p95": round(ok[min(len(ok) - 1, int(0.95 * len(ok)))], 3),
            "max": round(ok[-1], 3), "underTarget": all(s < TARGET_SECONDS for s in ok) and len(ok) == len(samples)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=10, help="warnings sent one at a time")
    p.add_argument("--burst", type=int, default=10, help="warnings sent at once afterwards")
    p.add_argument("--timeout", type=float, default=30.0, help="give up on one warning after this long")
    p.add_argument("-o", "--output", choices=["table", "json"], default="table")
    args = p.parse_args(argv)
    for key, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                       ("AWS_DEFAULT_REGION", "us-east-1")):
        os.environ.setdefault(key, value)
    result = asyncio.run(measure(args.nodes, args.burst, args.timeout))
    if args.output == "json":
        print(json.dumps(result, indent=2))
    else:
        print(f"spot warning on the queue -> replacement RunInstances (target < {TARGET_SECONDS:.0f} s)")
        for name in ("sequential", "burst"):
            r = result[name]
            stats = " ".join(f"{k}={r[k]}s" for k in ("min", "p50", "p95", "max") if k in r)
            print(f"  {name:<10} n={r['count']:<3} missed={r['missed']} {stats}  under target: {r.get('underTarget')}")
        print("of which the intake (queue -> pre-spin workflow started):")
        for name in ("sequential", "burst"):
            r = result["intakeOnly"][name]
            print(f"  {name:<10} " + " ".join(f"{k}={r[k]}s" for k in ("min", "p50", "p95", "max") if k in r))
    ok = all(result[k].get("underTarget") for k in ("sequential", "burst"))
    sys.stdout.flush()
    return 0 if ok else 1


if __name__ == "__main__":
    code = main()
    sys.stderr.flush()
    os._exit(code)  # the Temporal SDK can crash at interpreter exit (temporalio/sdk-python#300)
