"""Provisioning end to end: dev server + simulator (wired to moto) + the real worker.

- pending pods of a scaled-up ReplicaSet: NodeClaims launched, every pod Running, none pending;
- a pod no NodePool serves: a FailedScheduling Event naming the pool and the requirement, no launch;
- the cheapest type out of capacity in every zone (ICE): the launch falls back to the next type;
- no capacity anywhere: backs off, says so on the NodePool, and the batch ends;
- a NodePool at its limits: what fits under them launches, the rest gets Events (pod and NodePool);
- a node that never becomes Ready: deleted with its instance at the timeout, and the batch ends.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from support.disruption_stack import disruption_stack, fresh, record_history, replica_set, wait_for

from api import labels
from bench.clusters import node_pool
from contracts.provisioning import (
    PodRef,
    ProvisioningInput,
    ProvisioningPhase,
    ProvisioningResult,
    ProvisioningSettings,
)
from simulator.ec2 import IceInjector
from workflows.provisioning import ProvisioningWorkflow

pytestmark = pytest.mark.e2e  # any xdist worker: the "demo" group is test_demo.py's shared run (and the disruption e2e)
FAST = ProvisioningSettings(ready_timeout_seconds=30, ready_poll_seconds=1, ice_backoff_seconds=1, ice_attempts=2)
ON_DEMAND_AMD64 = [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
                   {"key": labels.ARCH_LABEL, "operator": "In", "values": ["amd64"]}]


def pods(stack: Any, app: str | None = None) -> list[dict[str, Any]]:
    from kubernetes import client as k8s

    items = k8s.CoreV1Api(stack.api).list_namespaced_pod("default", label_selector=f"app={app}" if app else None)
    return stack.api.sanitize_for_serialization(items.items)


def unschedulable(stack: Any, app: str | None = None) -> list[PodRef]:
    """Pods the simulator's scheduler marked PodScheduled=False/Unschedulable."""
    out = []
    for p in pods(stack, app):
        conds = (p.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable" for c in conds):
            out.append(PodRef(key=f"default/{p['metadata']['name']}", uid=p["metadata"]["uid"]))
    return out


def running(stack: Any, app: str) -> int:
    return sum(1 for p in pods(stack, app) if (p.get("status") or {}).get("phase") == "Running"
               and (p.get("spec") or {}).get("nodeName"))


async def provision(stack: Any, refs: list[PodRef], settings: ProvisioningSettings = FAST,
                    scenario: str | None = None) -> ProvisioningResult:
    handle = await stack.client.start_workflow(
        ProvisioningWorkflow.run, ProvisioningInput(pods=refs, settings=settings),
        id=f"provision-test-{uuid.uuid4()}", task_queue=stack.task_queue)
    result = await asyncio.wait_for(handle.result(), 90)
    if scenario:
        await record_history(handle, "ProvisioningWorkflow", scenario)
    return result


async def test_pending_pods_of_a_scaled_up_replicaset_get_nodes(temporal_client, sim_ec2, moto_endpoint) -> None:
    sim_ec2.load_objects(fresh([node_pool("default", requirements=ON_DEMAND_AMD64, consolidate_after="Never"),
                                replica_set("web", 6, "1500m")]))
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint) as stack:
        refs = await wait_for(lambda: (r := unschedulable(stack, "web")) and len(r) == 6 and r, what="6 pending")
        result = await provision(stack, refs, scenario="scale_up")
        assert result.outcome == ProvisioningPhase.SUCCEEDED, result.message
        assert 1 <= len(result.launched) <= 3 and len(result.ready) == len(result.launched)
        await wait_for(lambda: running(stack, "web") == 6, what="6 web pods running")
        assert unschedulable(stack, "web") == []
        assert len(stack.nodes()) == len(result.launched)
        # Karpenter's provisioner nominates each pod to the NodeClaim launched for it (scheduling/events.go)
        nominated = {e["involvedObject"]["name"]: e["message"] for e in stack.events() if e["reason"] == "Nominated"}
        assert set(nominated) == {r.key.split("/")[1] for r in refs}
        assert all(m.startswith("Pod should schedule on: nodeclaim/") for m in nominated.values()), nominated
        # the same batch again (a worker restarted mid-batch): the pods are bound, nothing launches twice
        again = await provision(stack, refs)
        assert again.outcome == ProvisioningPhase.SUCCEEDED and again.launched == []
        assert len(stack.node_claims()) == len(result.launched)


async def test_a_pod_no_pool_serves_gets_an_event_and_no_launch(temporal_client, sim_ec2, moto_endpoint) -> None:
    rs = replica_set("mars", 1, "500m")
    rs["spec"]["template"]["spec"]["nodeSelector"] = {labels.ZONE_LABEL: "mars-1a"}
    sim_ec2.load_objects(fresh([node_pool("default", requirements=ON_DEMAND_AMD64), rs]))
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint) as stack:
        refs = await wait_for(lambda: unschedulable(stack, "mars"), what="the pending pod")
        result = await provision(stack, refs)
        assert result.launched == [] and result.unservable == [refs[0].key]
        assert stack.node_claims() == [] and stack.nodes() == []
        (event,) = [e for e in stack.events() if e["involvedObject"]["kind"] == "Pod"  # kube-scheduler's has its own
                    and e["reason"] == "FailedScheduling" and e["source"]["component"] == "nodeflow"]
        assert event["involvedObject"]["name"] == refs[0].key.split("/")[1] and event["type"] == "Warning"
        assert "nodepool default" in event["message"] and f"nodeSelector {labels.ZONE_LABEL}=mars-1a" in \
            event["message"]


async def test_no_capacity_for_the_cheapest_type_falls_back_to_the_next(temporal_client, sim_ec2,
                                                                        moto_endpoint) -> None:
    reqs = [*ON_DEMAND_AMD64, {"key": labels.INSTANCE_TYPE_LABEL, "operator": "In",
                               "values": ["m5.large", "m5.xlarge"]}]
    sim_ec2.load_objects(fresh([node_pool("default", requirements=reqs), replica_set("api", 1, "1")]))
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint) as stack:
        ice = IceInjector().install(stack.ec2)
        ice.exhaust("m5.large")  # every zone
        refs = await wait_for(lambda: unschedulable(stack, "api"), what="the pending pod")
        result = await provision(stack, refs)
        assert result.outcome == ProvisioningPhase.SUCCEEDED, result.message
        (launched,) = result.launched
        assert launched.instance_type == "m5.xlarge"
        assert {t for t, _ in ice.refused} == {"m5.large"} and len(ice.refused) == 3  # one per zone, then m5.xlarge
        await wait_for(lambda: running(stack, "api") == 1, what="the api pod running")


async def test_no_capacity_anywhere_backs_off_says_so_and_ends(temporal_client, sim_ec2, moto_endpoint) -> None:
    reqs = [*ON_DEMAND_AMD64, {"key": labels.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large"]}]
    sim_ec2.load_objects(fresh([node_pool("default", requirements=reqs), replica_set("api", 1, "1")]))
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint) as stack:
        IceInjector().install(stack.ec2).exhaust("m5.large")
        refs = await wait_for(lambda: unschedulable(stack, "api"), what="the pending pod")
        result = await provision(stack, refs)
        assert result.outcome == ProvisioningPhase.FAILED and result.no_capacity == ["default"]
        assert stack.node_claims() == [] and stack.nodes() == []  # the refused NodeClaims were deleted
        ice = [e for e in stack.events() if e["reason"] == "InsufficientCapacityError"]
        messages = [e["message"] for e in ice if e["involvedObject"]["kind"] == "NodePool"]
        assert any("retrying in 1s" in m for m in messages) and any("giving up" in m for m in messages)
        on_pod = [e for e in ice if e["involvedObject"]["kind"] == "Pod"]  # v1.15, kubernetes-sigs/karpenter#3143
        assert on_pod and all(e["involvedObject"]["uid"] == refs[0].uid and e["type"] == "Warning" for e in on_pod)
        assert all(e["message"].startswith("NodeClaim ")
                   and ", nominated for this pod failed to launch: InsufficientInstanceCapacity" in e["message"]
                   for e in on_pod), on_pod


async def test_a_pool_at_its_limits_launches_what_fits_under_them_and_says_so(temporal_client, sim_ec2,
                                                                               moto_endpoint) -> None:
    """limits cpu=2 and m5.large (2 cpu) only: one node for one of the two pods; the other pod gets FailedScheduling
    naming the limit, the NodePool gets NodePoolLimitsReached, and nothing launches past the limit."""
    reqs = [*ON_DEMAND_AMD64, {"key": labels.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large"]}]
    pool = node_pool("default", requirements=reqs, consolidate_after="Never")
    pool["spec"]["limits"] = {"cpu": "2"}
    sim_ec2.load_objects(fresh([pool, replica_set("api", 2, "1500m")]))
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint) as stack:
        refs = await wait_for(lambda: (r := unschedulable(stack, "api")) and len(r) == 2 and r, what="2 pending")
        result = await provision(stack, refs)
        assert result.outcome == ProvisioningPhase.SUCCEEDED and len(result.launched) == 1, result.message
        (waiting,) = result.unservable
        await wait_for(lambda: running(stack, "api") == 1, what="one api pod running")
        assert len(stack.node_claims()) == 1
        evs = stack.events()
        (on_pool,) = [e for e in evs if e["reason"] == "NodePoolLimitsReached"]
        assert on_pool["involvedObject"]["kind"] == "NodePool" and on_pool["involvedObject"]["name"] == "default"
        assert on_pool["message"] == "NodePool default cannot launch for 1 pending pod(s): limits cpu=2 reached"
        (on_pod,) = [e for e in evs if e["reason"] == "FailedScheduling" and e["source"]["component"] == "nodeflow"]
        assert on_pod["involvedObject"]["name"] == waiting.split("/")[1]
        assert "nodepool default: limits cpu=2 reached" in on_pod["message"]


async def test_a_node_that_never_becomes_ready_is_deleted_and_the_batch_ends(temporal_client, sim_ec2,
                                                                             moto_endpoint) -> None:
    reqs = [*ON_DEMAND_AMD64, {"key": labels.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large"]}]
    sim_ec2.world.mark_never_ready("m5.large")
    sim_ec2.load_objects(fresh([node_pool("default", requirements=reqs, consolidate_after="Never"),
                                replica_set("api", 1, "1")]))
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint) as stack:
        refs = await wait_for(lambda: unschedulable(stack, "api"), what="the pending pod")
        # never Ready (the simulator's kubelet never reports it), however long the wait: 2 s show the deadline
        result = await provision(stack, refs, FAST.model_copy(update={"ready_timeout_seconds": 2}))
        assert result.outcome == ProvisioningPhase.FAILED and result.ready == []
        (launched,) = result.launched
        assert result.deleted == [launched.node_claim]
        await wait_for(lambda: not stack.node_claims(), what="the NodeClaim gone")
        assert stack.instances(ids=[launched.instance_id]) == []  # terminated: nothing leaks


async def test_the_intake_batches_a_scale_up_into_one_provisioning(temporal_client, sim_ec2, moto_endpoint) -> None:
    """The worker's pending-pod intake (watch cache) sees the Unschedulable pods of a ReplicaSet scaled from 1 to 8,
    batches them, and the one ProvisioningWorkflow gets every pod Running."""
    from kubernetes import client as k8s

    from client.provisioning import RUNNING_QUERY
    from runtime.cloud_clients import ec2_client
    from runtime.settings import Deps, Settings
    from runtime.worker_loop import run_worker

    sim_ec2.load_objects(fresh([node_pool("default", requirements=ON_DEMAND_AMD64, consolidate_after="Never"),
                                replica_set("web", 1, "1500m")]))
    tq = f"e2e-provision-{uuid.uuid4()}"
    api = sim_ec2.api_client()
    settings = Settings(task_queue=tq, watch=False, provisioning=True, batch_idle_seconds=0.5, batch_max_seconds=5)
    settings.ami_id = sim_ec2.world.ec2.image_id()
    stop = asyncio.Event()
    ec2 = ec2_client("us-east-1", moto_endpoint)
    before = _instance_ids(ec2)
    deps = Deps(kube_api=api, ec2=ec2, temporal=temporal_client, settings=settings)
    task = asyncio.create_task(run_worker(temporal_client, deps, stop, tq))
    try:
        stack = type("S", (), {"api": api})()
        await wait_for(lambda: running(stack, "web") == 1, timeout=60, what="the first web pod running")
        k8s.AppsV1Api(api).patch_namespaced_replica_set("web", "default", {"spec": {"replicas": 8}})
        await wait_for(lambda: running(stack, "web") == 8, timeout=90, what="8 web pods running")
        assert unschedulable(stack, "web") == []
        ids = {w.id async for w in temporal_client.list_workflows(
            RUNNING_QUERY.replace("ExecutionStatus = 'Running' AND ", "") + f" AND TaskQueue = '{tq}'")}
        assert 1 <= len(ids) <= 2, ids  # one batch (a second only if the scheduler marked pods across windows)
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
        api.close()
        leftover = sorted(_instance_ids(ec2) - before)  # moto is shared: leave nothing for the next test to adopt
        if leftover:
            ec2.terminate_instances(InstanceIds=leftover)


def _instance_ids(ec2: Any) -> set[str]:
    resp = ec2.describe_instances(Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]}])
    return {i["InstanceId"] for r in resp["Reservations"] for i in r["Instances"]}
