"""Shared setup of the termination end-to-end tests: a small cluster in the simulator whose Nodes point at
real moto EC2 instances, and an in-process worker (plus deletion watcher) on a unique task queue."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from temporalio.client import Client

from api import labels
from worker import Deps, Settings, run_worker

POOL = "default"


def launch_instances(ec2: Any, count: int) -> list[str]:
    resp = ec2.run_instances(ImageId="ami-12c6146b", MinCount=count, MaxCount=count, InstanceType="m5.large",
                             Placement={"AvailabilityZone": "us-east-1a"})
    return [i["InstanceId"] for i in resp["Instances"]]


def instance_state(ec2: Any, instance_id: str) -> str:
    resp = ec2.describe_instances(InstanceIds=[instance_id])
    return resp["Reservations"][0]["Instances"][0]["State"]["Name"]


@dataclass
class PodSpec:
    """`count` pods of ReplicaSet `name` on `node` (recreated elsewhere when evicted)."""

    name: str
    node: str
    count: int = 1
    grace: int = 30
    daemonset: bool = False
    critical: bool = False
    annotations: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, Any]] = field(default_factory=list)


def cluster_objects(nodes: dict[str, str], pods: list[PodSpec], pdbs: dict[str, int] | None = None,
                    pool: str = POOL, node_grace: str | None = None) -> list[dict[str, Any]]:
    """NodePool, one NodeClaim + Node per {node name: instance id}, controllers with their pods, PDBs
    (app -> minAvailable). Everything carries the finalizers the watcher would add."""
    objs: list[dict[str, Any]] = [{
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool",
        "metadata": {"name": pool, "uid": str(uuid.uuid4())},
        "spec": {"template": {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                         "name": "default"}, "requirements": []}}},
    }]
    for name, iid in nodes.items():
        provider = f"aws:///us-east-1a/{iid}"
        node_labels = {labels.NODEPOOL_LABEL: pool, labels.INSTANCE_TYPE_LABEL: "m5.large",
                       labels.CAPACITY_TYPE_LABEL: "on-demand", labels.ZONE_LABEL: "us-east-1a",
                       labels.INITIALIZED_LABEL: "true", labels.HOSTNAME_LABEL: name}
        claim_spec: dict[str, Any] = {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                       "name": "default"}, "requirements": []}
        if node_grace:
            claim_spec["terminationGracePeriod"] = node_grace
        objs.append({
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": f"{name}-claim", "uid": str(uuid.uuid4()), "labels": dict(node_labels),
                         "finalizers": [labels.TERMINATION_FINALIZER]},
            "spec": claim_spec,
            "status": {"nodeName": name, "providerID": provider},
        })
        objs.append({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": str(uuid.uuid4()), "labels": node_labels,
                         "finalizers": [labels.TERMINATION_FINALIZER]},
            "spec": {"providerID": provider},
            "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "29"},
                       "capacity": {"cpu": "2", "memory": "8Gi", "pods": "29"}},
        })
    for spec in pods:
        owner_uid = str(uuid.uuid4())
        kind = "DaemonSet" if spec.daemonset else "ReplicaSet"
        template_spec: dict[str, Any] = {"terminationGracePeriodSeconds": spec.grace,
                                         "containers": [{"name": "main", "image": "pause",
                                                         "resources": {"requests": {"cpu": "100m"}}}],
                                         "tolerations": spec.tolerations}
        if spec.critical:
            template_spec["priorityClassName"] = "system-node-critical"
        if spec.daemonset:
            template_spec["nodeSelector"] = {labels.HOSTNAME_LABEL: spec.node}
        owner: dict[str, Any] = {
            "apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": spec.name, "namespace": "default", "uid": owner_uid},
            "spec": {"selector": {"matchLabels": {"app": spec.name}},
                     "template": {"metadata": {"labels": {"app": spec.name}, "annotations": spec.annotations},
                                  "spec": template_spec}},
        }
        if not spec.daemonset:
            owner["spec"]["replicas"] = spec.count
        objs.append(owner)
        for i in range(1 if spec.daemonset else spec.count):
            objs.append({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"{spec.name}-{i}", "namespace": "default", "uid": str(uuid.uuid4()),
                             "labels": {"app": spec.name}, "annotations": dict(spec.annotations),
                             "ownerReferences": [{"apiVersion": "apps/v1", "kind": kind, "name": spec.name,
                                                  "uid": owner_uid, "controller": True}]},
                "spec": {**template_spec, "nodeName": spec.node},
            })
    for app, min_available in (pdbs or {}).items():
        objs.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                     "metadata": {"name": app, "namespace": "default"},
                     "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": app}}}})
    return objs


def ec2_client(endpoint: str) -> Any:
    return boto3.client("ec2", region_name="us-east-1", endpoint_url=endpoint)


@contextlib.asynccontextmanager
async def running_worker(client: Client, sim: Any, moto_endpoint: str, watch: bool = True,
                         resync: float = 2.0) -> AsyncIterator[str]:
    """A worker + watcher in this process on a fresh task queue; yields the task queue."""
    tq = f"tq-{uuid.uuid4()}"
    api = sim.api_client()
    api.configuration.connection_pool_maxsize = 32
    deps = Deps(kube_api=api, ec2=ec2_client(moto_endpoint), temporal=client,
                settings=Settings(task_queue=tq, watch=watch, resync_seconds=resync))
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
