"""The embedded stack for disruption e2e tests: the real worker (all workflows and activities) on a unique
task queue, against the simulator (wired to moto) and the dev server; planner passes are driven directly."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from temporalio.client import Client

from api import labels
from contracts.disruption import DisruptionResult, DisruptionSettings, PlannerInput, PlannerResult
from runtime.cloud_clients import ec2_client
from runtime.settings import Deps, Settings
from runtime.worker_loop import run_worker
from workflows.disruption import DisruptionWorkflow
from workflows.planner import PlannerWorkflow

FAST = DisruptionSettings(validation_delay_seconds=0, ready_timeout_seconds=20, ready_poll_seconds=2,
                          termination_poll_seconds=0.2)


@dataclass
class Stack:
    client: Client
    sim: Any
    task_queue: str
    api: Any
    ec2: Any
    settings: DisruptionSettings = field(default_factory=lambda: FAST.model_copy())
    started: list[str] = field(default_factory=list)
    deps: Deps | None = None  # the worker's clients and caches (e.g. its discovered catalog source)

    async def planner_pass(self) -> PlannerResult:
        handle = await self.client.start_workflow(
            PlannerWorkflow.run, PlannerInput(settings=self.settings), id=f"planner-{uuid.uuid4()}",
            task_queue=self.task_queue)
        result = await handle.result()
        if result.started:
            self.started += result.started
            await record_history(handle, "PlannerWorkflow", "starts_disruption")
        return result

    async def outcome(self, workflow_id: str, timeout: float = 60) -> DisruptionResult:
        handle = self.client.get_workflow_handle_for(DisruptionWorkflow.run, workflow_id)
        return await asyncio.wait_for(handle.result(), timeout)

    async def failures(self, workflow_id: str) -> list[str]:
        """Activity failure messages in a workflow's history (to explain a failing test)."""
        hist = await self.client.get_workflow_handle(workflow_id).fetch_history()
        return [e.activity_task_failed_event_attributes.failure.message for e in hist.events
                if e.HasField("activity_task_failed_event_attributes")]

    def nodes(self) -> list[dict[str, Any]]:
        from kubernetes import client as k8s

        return self.api.sanitize_for_serialization(k8s.CoreV1Api(self.api).list_node().items)

    def events(self) -> list[dict[str, Any]]:
        from kubernetes import client as k8s

        return self.api.sanitize_for_serialization(k8s.CoreV1Api(self.api).list_namespaced_event("default").items)

    def node_claims(self) -> list[dict[str, Any]]:
        from kubernetes import client as k8s

        return k8s.CustomObjectsApi(self.api).list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims")["items"]

    def cost_per_hour(self) -> float:
        """Sum of on-demand/spot prices of the live (not deleting) nodes, from the default catalog."""
        from api.catalog import load_default_catalog

        catalog = load_default_catalog()
        total = 0.0
        for n in self.nodes():
            if n["metadata"].get("deletionTimestamp"):
                continue
            lab = n["metadata"].get("labels") or {}
            it = catalog.get(lab.get(labels.INSTANCE_TYPE_LABEL, ""))
            off = it.offering(lab.get(labels.ZONE_LABEL, ""), lab.get(labels.CAPACITY_TYPE_LABEL, "on-demand")) \
                if it else None
            total += off.price if off else 0.0
        return round(total, 6)

    def instances(self, states: tuple[str, ...] = ("pending", "running"),
                  ids: list[str] | None = None) -> list[dict[str, Any]]:
        filters = [{"Name": "instance-state-name", "Values": list(states)}]
        if ids is not None:
            if not ids:
                return []
            filters.append({"Name": "instance-id", "Values": ids})
        resp = self.ec2.describe_instances(Filters=filters)
        return [i for r in resp["Reservations"] for i in r["Instances"]]

    def instance_ids(self) -> list[str]:
        """Instances of this cluster's Nodes (from their providerIDs)."""
        return [(n.get("spec") or {}).get("providerID", "").rsplit("/", 1)[-1] for n in self.nodes()]


@asynccontextmanager
async def disruption_stack(client: Client, sim: Any, moto_endpoint: str, settings: DisruptionSettings = FAST,
                           worker: dict[str, Any] | None = None, ssm: Any = None,
                           iam: Any = None, region: str = "us-east-1", pricing: Any = None) -> AsyncIterator[Stack]:
    """`worker`: more Settings of the worker (the cluster's name, endpoint and CA for EC2NodeClass launches);
    `ssm` / `iam`: the clients EC2NodeClass resolution uses (moto's); `region`: the EC2 client's (the simulator's
    must match); `pricing`: the worker's Pricing client (with `discover_instance_types` in `worker`)."""
    tq = f"e2e-disrupt-{uuid.uuid4()}"
    api = sim.api_client()
    ec2 = ec2_client(region, moto_endpoint)
    ws = Settings(**{"task_queue": tq, "watch": False, "activity_threads": 8, "max_concurrent_activities": 50,
                     **(worker or {})})
    ws.ami_id = sim.world.ec2.image_id()
    deps = Deps(kube_api=api, ec2=ec2, temporal=client, settings=ws, ssm=ssm, iam=iam, pricing=pricing)
    stop = asyncio.Event()
    task = asyncio.create_task(run_worker(client, deps, stop, tq))
    stack = Stack(client=client, sim=sim, task_queue=tq, api=api, ec2=ec2, settings=settings, deps=deps)
    before = {i["InstanceId"] for i in stack.instances()}
    try:
        yield stack
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
        if ws.discover_instance_types and not ws.catalog_path:  # the worker's discovery thread ends with it
            deps.catalog_source.provider.stop()
        api.close()
        # moto is shared by the session: leave no running instance for the next test's simulator to adopt
        leftover = [i["InstanceId"] for i in stack.instances() if i["InstanceId"] not in before]
        if leftover:
            ec2.terminate_instances(InstanceIds=leftover)


async def wait_for(predicate: Any, timeout: float = 30, interval: float = 0.1, what: str = "condition") -> Any:
    """Poll `predicate` (sync, run in a thread) until it returns something truthy."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = await asyncio.to_thread(predicate)
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(interval)


HISTORIES = Path(__file__).resolve().parents[1] / "histories"


async def record_history(handle: Any, workflow_type: str, scenario: str) -> None:
    """With RECORD_HISTORIES=1, keep this run's history for tests/test_replay.py (replayed against new code)."""
    if os.environ.get("RECORD_HISTORIES") != "1":
        return
    history = await handle.fetch_history()
    HISTORIES.mkdir(parents=True, exist_ok=True)
    (HISTORIES / f"{workflow_type}__{scenario}.json").write_text(history.to_json(), encoding="utf-8")


def replica_set(name: str, replicas: int, cpu: str, memory: str = "1Gi") -> dict:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-rs-{name}"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"terminationGracePeriodSeconds": 1, "containers": [{
                                      "name": "app", "image": "app",
                                      "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}}}}


def fresh(objs: list[dict]) -> list[dict]:
    """Created now, so expireAfter (720h) does not turn the test into an expiration test; unique uids."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for o in objs:
        if o["kind"] in ("Node", "NodeClaim"):
            o["metadata"]["creationTimestamp"] = now
        if o["kind"] == "Node":  # unique uids: the session's dev server may hold other tests' workflows
            o["metadata"]["uid"] = f"uid-{o['metadata']['name']}-{uuid.uuid4().hex[:8]}"
    return objs


def never_ready_drift(sim: Any) -> None:
    """One drifted m5.large (`old-0`, one pod) whose only cheaper replacement type never becomes Ready."""
    from bench.clusters import node_objects, node_pool

    sim.world.mark_never_ready("c5.large")
    sim.world.mark_never_ready("c6i.large")
    objs = [node_pool("default", budgets=[{"nodes": "1"}], consolidate_after="Never", requirements=[
        {"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
        {"key": labels.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["c5.large", "m5.large"]}])]
    objs += node_objects("old-0", "m5.large", annotations={labels.TEMPLATE_HASH_ANNOTATION: "stale-template"})
    objs.append(replica_set("api", 1, "1500m"))
    sim.load_objects(fresh(objs))
