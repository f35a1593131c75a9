"""Node repair end to end (docs/semantics.md §13): dev server + simulator (wired to moto) + the real worker with a
short toleration, the legacy (forceful) repair path and the pending-pod intake on; planner passes are driven directly.
The v1.15 method (pre-spin, then drain) is the DisruptionWorkflow's replace path, tested in tests/workflows.

- a node NotReady past the toleration is terminated (reason Unhealthy) and its pods, which fit nowhere else,
  run on a node the provisioner launches for them;
- with more than 20% of the pool NotReady nothing is repaired, and the NodePool says why;
- a DisruptionPolicy's `repair.enabled: false` holds the pool's repairs (Event, metric, `nodeflow plan`) until the
  policy goes.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest
from support.disruption_stack import disruption_stack, fresh, record_history, replica_set, wait_for

from api import labels
from bench.clusters import node_objects, node_pool
from contracts import search_attributes as sa
from contracts.disruption import PlannerInput
from starter.cli import run
from telemetry import metrics
from workflows.planner import PlannerWorkflow
from workflows.termination import TerminationWorkflow

pytestmark = pytest.mark.e2e  # any xdist worker: the "demo" group is test_demo.py's shared run (and the disruption e2e)
TOLERATION = 4.0  # seconds; the simulator writes lastTransitionTime to the second
WORKER = {"node_repair_toleration_seconds": TOLERATION, "legacy_node_repair": True, "provisioning": True,
          "batch_idle_seconds": 0.5, "batch_max_seconds": 3.0}
ON_DEMAND = [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
             {"key": labels.ARCH_LABEL, "operator": "In", "values": ["amd64"]},
             {"key": labels.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large"]}]


def bound_pods(rs: dict[str, Any], nodes: list[str]) -> list[dict[str, Any]]:
    """The ReplicaSet's pods, already running on the given nodes (one each)."""
    template = rs["spec"]["template"]
    return [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"{rs['metadata']['name']}-{i}", "namespace": "default",
                          "labels": dict(template["metadata"]["labels"]),
                          "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "controller": True,
                                               "name": rs["metadata"]["name"], "uid": rs["metadata"]["uid"]}]},
             "spec": {**template["spec"], "nodeName": node}} for i, node in enumerate(nodes)]


def cluster(nodes: list[str], filler_cpu: str, web_on: list[str]) -> list[dict[str, Any]]:
    """m5.large nodes, each but `web_on`'s nearly full with a `filler` pod; the `web` pods on `web_on`."""
    objs: list[dict[str, Any]] = [node_pool("default", requirements=ON_DEMAND, consolidate_after="Never",
                                            budgets=[{"nodes": "0"}])]
    for name in nodes:
        objs += node_objects(name, "m5.large")
    others = [n for n in nodes if n not in web_on]
    filler, web = replica_set("filler", len(others), filler_cpu), replica_set("web", len(web_on), "500m")
    objs += [filler, web, *bound_pods(filler, others), *bound_pods(web, web_on)]
    return fresh(objs)


def pods(stack: Any, app: str) -> list[dict[str, Any]]:
    from kubernetes import client as k8s

    items = k8s.CoreV1Api(stack.api).list_namespaced_pod("default", label_selector=f"app={app}").items
    return stack.api.sanitize_for_serialization(items)


def running_on(stack: Any, app: str) -> list[str]:
    return sorted(p["spec"].get("nodeName", "") for p in pods(stack, app)
                  if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp"))


def node_uid(stack: Any, name: str) -> str:
    return next(n["metadata"]["uid"] for n in stack.nodes() if n["metadata"]["name"] == name)


def repairs_counted(pool: str) -> float:
    return metrics.REGISTRY.get_sample_value("nodeflow_node_repairs_total",
                                             {"nodepool": pool, "condition": "Ready"}) or 0.0


async def test_a_node_not_ready_past_its_toleration_is_replaced_and_its_pods_run_elsewhere(
        temporal_client, sim_ec2, moto_endpoint) -> None:
    names = ["sick", "ok-0", "ok-1", "ok-2", "ok-3"]
    sim_ec2.load_objects(cluster(names, "1800m", web_on=["sick"]))
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=WORKER) as stack:
        await wait_for(lambda: running_on(stack, "web") == ["sick"], what="web running on sick")
        uid = node_uid(stack, "sick")
        before = repairs_counted("default")
        sim_ec2.world.set_node_ready("sick", False)
        early = await stack.planner_pass()
        assert early.repairs == [] and early.terminations == []  # within the toleration
        await asyncio.sleep(TOLERATION + 0.5)
        planner = await stack.client.start_workflow(PlannerWorkflow.run, PlannerInput(settings=stack.settings),
                                                    id=f"planner-{uuid.uuid4()}", task_queue=stack.task_queue)
        result = await planner.result()
        await record_history(planner, "PlannerWorkflow", "node_repair")
        assert result.repairs == [f"terminate-{uid}"] and result.started == [] and result.repairs_blocked == []
        handle = temporal_client.get_workflow_handle_for(TerminationWorkflow.run, result.repairs[0])
        assert (await handle.describe()).typed_search_attributes.get(sa.REASON) == "Unhealthy"
        await asyncio.wait_for(handle.result(), 60)
        assert "sick" not in [n["metadata"]["name"] for n in stack.nodes()]
        # the web pod fits on no ok-* node: the provisioner launches one and it runs there
        where = await wait_for(lambda: (w := running_on(stack, "web")) and "sick" not in w and w, timeout=60,
                               what="web running again elsewhere")
        assert set(where).isdisjoint(names) and len(stack.node_claims()) == len(names)
        repaired = [e for e in stack.events() if e["reason"] == "NodeRepair"]
        assert [(e["involvedObject"]["name"], e["type"]) for e in repaired] == [("sick", "Warning")]
        assert "condition Ready has been False" in repaired[0]["message"]
        assert repairs_counted("default") == before + 1


async def test_more_than_20_percent_unhealthy_repairs_nothing(temporal_client, sim_ec2, moto_endpoint) -> None:
    names = ["a", "b", "c", "d"]  # one of four may be repaired (20%, rounded up); two may not
    sim_ec2.load_objects(cluster(names, "500m", web_on=["a"]))
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=WORKER) as stack:
        await wait_for(lambda: running_on(stack, "web") == ["a"], what="web running on a")
        for name in ("a", "b"):
            sim_ec2.world.set_node_ready(name, False)
        await asyncio.sleep(TOLERATION + 0.5)
        result = await stack.planner_pass()
        assert result.repairs == [] and result.terminations == [] and result.repairs_blocked == ["default"]
        assert sorted(n["metadata"]["name"] for n in stack.nodes()) == names
        held = [e for e in stack.events() if e["reason"] == "NodeRepairBlocked"]
        on = {(e["involvedObject"]["kind"], e["involvedObject"]["name"]) for e in held}
        assert on == {("NodePool", "default"), ("Node", "a"), ("Node", "b")}
        assert "2 of 4 nodes of NodePool default are unhealthy" in held[0]["message"]
        # one node recovers: one unhealthy of four is within the valve, and that one is repaired
        sim_ec2.world.set_node_ready("b", True)
        await asyncio.sleep(0.5)
        again = await stack.planner_pass()
        assert again.repairs == [f"terminate-{node_uid(stack, 'a')}"] and again.repairs_blocked == []


def _repair_off() -> dict[str, Any]:
    return {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": "no-repair"},
            "spec": {"nodePools": ["default"], "repair": {"enabled": False}}}


def disabled_counted(pool: str) -> float:
    return metrics.REGISTRY.get_sample_value("nodeflow_node_repairs_disabled_total", {"nodepool": pool}) or 0.0


async def test_a_policy_that_switches_repair_off_holds_the_pool_until_it_goes(temporal_client, sim_ec2, moto_endpoint,
                                                                             capsys) -> None:
    """Per-pool repair settings (kubernetes-sigs/karpenter#2811; docs/semantics.md §13)."""
    from kubernetes import client as k8s

    names = ["a", "b", "c", "d", "e"]
    sim_ec2.load_objects([*cluster(names, "500m", web_on=["a"]), _repair_off()])
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=WORKER) as stack:
        await wait_for(lambda: running_on(stack, "web") == ["a"], what="web running on a")
        before = disabled_counted("default")
        sim_ec2.world.set_node_ready("a", False)
        await asyncio.sleep(TOLERATION + 0.5)
        result = await stack.planner_pass()
        assert result.repairs == [] and result.terminations == [] and result.repairs_blocked == ["default"]
        held = [e for e in stack.events() if e["reason"] == "NodeRepairBlocked"]
        assert {(e["involvedObject"]["kind"], e["involvedObject"]["name"]) for e in held} == {
            ("NodePool", "default"), ("Node", "a")}
        assert "disabled for NodePool default by DisruptionPolicy no-repair" in held[0]["message"]
        assert disabled_counted("default") == before + 1

        assert run(["plan", "--kubeconfig", sim_ec2.kubeconfig_path, "-o", "json",
                    "--node-repair-toleration", f"{int(TOLERATION)}s", "--legacy-node-repair"]) == 0
        (blocked,) = json.loads(capsys.readouterr().out)["repairsBlocked"]
        assert (blocked["reason"], blocked["held"], blocked["disruptionPolicy"]) == ("RepairDisabled", ["a"],
                                                                                     "no-repair")

        k8s.CustomObjectsApi(stack.api).delete_cluster_custom_object("nodeflow.dev", "v1alpha1",
                                                                     "disruptionpolicies", "no-repair")
        again = await wait_for_repair(stack)
        assert again.repairs == [f"terminate-{node_uid(stack, 'a')}"] and again.repairs_blocked == []


async def wait_for_repair(stack: Any, attempts: int = 20) -> Any:
    """Planner passes until the worker's cache has seen the policy go and one repairs (each pass reads the cache)."""
    for _ in range(attempts):
        result = await stack.planner_pass()
        if result.repairs:
            return result
        await asyncio.sleep(0.25)
    return result
