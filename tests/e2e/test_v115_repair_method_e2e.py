"""v1.15 node repair as a budgeted method, end to end (docs/semantics.md §13; kubernetes-sigs/karpenter#3311): dev
server + simulator (wired to moto) + the real worker with a short toleration, the default (non-legacy) path.

- a node NotReady past the toleration gets a Repair command (reason Unhealthy): a replacement is launched first,
  then the node drains and goes, and the counters say so;
- a node annotated karpenter.sh/do-not-repair is vetoed: no command, an Event on the node, a metric;
- a zone where most nodes turned NotReady at once is an outage: nothing repaired there, an Event on the NodePool,
  a metric (kubernetes-sigs/karpenter#3031).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from e2e.test_node_repair_e2e import bound_pods, running_on
from kubernetes import client as k8s
from support.disruption_stack import disruption_stack, fresh, replica_set, wait_for

from api import labels
from bench.clusters import node_objects, node_pool
from contracts.disruption import DisruptionPhase
from telemetry.metrics import REGISTRY

pytestmark = pytest.mark.e2e
TOLERATION = 4.0  # seconds; the simulator writes lastTransitionTime to the second
WORKER = {"node_repair_toleration_seconds": TOLERATION, "provisioning": True, "batch_idle_seconds": 0.5,
          "batch_max_seconds": 3.0, "min_drain_seconds": 0.5}
ON_DEMAND = [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
             {"key": labels.ARCH_LABEL, "operator": "In", "values": ["amd64"]},
             {"key": labels.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large"]}]
ONLY_REPAIR = [{"nodes": "0", "reasons": ["Empty", "Drifted", "Underutilized"]}]  # Unhealthy: no budget applies


def cluster(nodes: dict[str, str], web_on: str, filler_cpu: str = "1800m",
            veto: str | None = None) -> list[dict[str, Any]]:
    """m5.large nodes (name -> zone), each but `web_on` nearly full with a `filler` pod; the `web` pod on `web_on`."""
    objs: list[dict[str, Any]] = [node_pool("default", requirements=ON_DEMAND, consolidate_after="Never",
                                            budgets=ONLY_REPAIR)]
    for name, zone in nodes.items():
        made = node_objects(name, "m5.large", zone=zone)
        if name == veto:
            made[1]["metadata"].setdefault("annotations", {})[labels.DO_NOT_REPAIR_ANNOTATION] = "true"  # the Node
        objs += made
    others = [n for n in nodes if n != web_on]
    filler, web = replica_set("filler", len(others), filler_cpu), replica_set("web", 1, "500m")
    return fresh([*objs, filler, web, *bound_pods(filler, others), *bound_pods(web, [web_on])])


def _value(name: str, **labels_: str) -> float:
    return REGISTRY.get_sample_value(name, labels_) or 0.0


def _summed(name: str, **match: str) -> float:
    """A counter's samples summed over the labels not in `match`."""
    return sum(s.value for m in REGISTRY.collect() for s in m.samples
               if s.name == name and all(s.labels.get(k) == v for k, v in match.items()))


async def test_a_sick_node_is_replaced_first_then_drained(temporal_client, sim_ec2, moto_endpoint) -> None:
    names = {"sick": "us-east-1a", "ok-0": "us-east-1b", "ok-1": "us-east-1b", "ok-2": "us-east-1c",
             "ok-3": "us-east-1c"}
    sim_ec2.load_objects(cluster(names, "sick"))
    decisions = {"decision": "replace", "reason": "unhealthy", "consolidation_type": ""}
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=WORKER) as stack:
        await wait_for(lambda: running_on(stack, "web") == ["sick"], what="web running on sick")
        before = _value("karpenter_voluntary_disruption_decisions_total", **decisions)
        pods_before = _summed("karpenter_pods_disruption_initiated_total", reason="unhealthy", nodepool="default")
        sim_ec2.world.set_node_ready("sick", False)
        await asyncio.sleep(TOLERATION + 0.5)
        result = await stack.planner_pass()
        assert result.repairs == [] and result.terminations == [] and len(result.started) == 1
        outcome = await stack.outcome(result.started[0], timeout=90)
        assert outcome.outcome == DisruptionPhase.SUCCEEDED, outcome.message
        assert "sick" not in [n["metadata"]["name"] for n in stack.nodes()]
        where = await wait_for(lambda: (w := running_on(stack, "web")) and "sick" not in w and w, timeout=60,
                               what="web running on the replacement")
        assert set(where).isdisjoint(names)  # on the pre-spun node: no ok-* node had room
        assert _value("karpenter_voluntary_disruption_decisions_total", **decisions) == before + 1
        # v1.15's pods counter (kubernetes-sigs/karpenter#3015): the one reschedulable pod of the repaired node
        assert _summed("karpenter_pods_disruption_initiated_total", reason="unhealthy",
                       nodepool="default") == pods_before + 1
        on_sick = [e for e in stack.events() if e["involvedObject"]["name"] == "sick"]
        assert "NodeRepair" not in {e["reason"] for e in on_sick}  # the forceful (legacy) Event is not the method's
        terminating = [e for e in on_sick if e["reason"] == "DisruptionTerminating"]
        assert terminating and "Unhealthy" in terminating[0]["message"], on_sick


async def test_a_vetoed_node_is_left_and_says_why(temporal_client, sim_ec2, moto_endpoint) -> None:
    names = {"sick": "us-east-1a", "ok-0": "us-east-1b", "ok-1": "us-east-1b", "ok-2": "us-east-1c"}
    sim_ec2.load_objects(cluster(names, "sick", filler_cpu="500m", veto="sick"))
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=WORKER) as stack:
        await wait_for(lambda: running_on(stack, "web") == ["sick"], what="web running on sick")
        before = _value("nodeflow_node_repairs_vetoed_total", nodepool="default")
        sim_ec2.world.set_node_ready("sick", False)
        await asyncio.sleep(TOLERATION + 0.5)
        result = await stack.planner_pass()
        assert result.started == [] and result.repairs == [] and result.terminations == []
        held = [e for e in stack.events() if e["reason"] == "NodeRepairBlocked"]
        assert [(e["involvedObject"]["kind"], e["involvedObject"]["name"]) for e in held] == [("Node", "sick")]
        assert labels.DO_NOT_REPAIR_ANNOTATION in held[0]["message"]
        assert _value("nodeflow_node_repairs_vetoed_total", nodepool="default") == before + 1
        k8s.CoreV1Api(stack.api).patch_node("sick", {"metadata": {"annotations": {
            labels.DO_NOT_REPAIR_ANNOTATION: None}}})  # the veto lifted: the next passes repair it
        started = await wait_for_start(stack)
        assert len(started) == 1


async def test_a_zone_outage_holds_repairs_there(temporal_client, sim_ec2, moto_endpoint) -> None:
    """Two of the three nodes of us-east-1a NotReady at once: 2 of the pool's 10 is within its 20% valve, but the
    zone is 67% unhealthy, over the worker's 50%: an outage, not two node faults."""
    names = {"a-0": "us-east-1a", "a-1": "us-east-1a", "a-2": "us-east-1a",
             **{f"b-{i}": "us-east-1b" for i in range(7)}}
    sim_ec2.load_objects(cluster(names, "a-0", filler_cpu="500m"))
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=WORKER) as stack:
        await wait_for(lambda: running_on(stack, "web") == ["a-0"], what="web running on a-0")
        before = _value("nodeflow_node_repairs_zone_outage_total", nodepool="default", zone="us-east-1a")
        for name in ("a-0", "a-1"):
            sim_ec2.world.set_node_ready(name, False)
        await asyncio.sleep(TOLERATION + 0.5)
        result = await stack.planner_pass()
        assert result.started == [] and result.repairs_blocked == ["default"]
        pool = [e for e in stack.events() if e["reason"] == "NodeRepairBlocked"
                and e["involvedObject"]["kind"] == "NodePool"]
        assert len(pool) == 1 and "zone us-east-1a looks like an outage" in pool[0]["message"]
        assert _value("nodeflow_node_repairs_zone_outage_total", nodepool="default", zone="us-east-1a") == before + 1
        assert sorted(n["metadata"]["name"] for n in stack.nodes()) == sorted(names)


async def wait_for_start(stack: Any, attempts: int = 20) -> list[str]:
    """Planner passes until one starts a command (the worker's cache must first see the change)."""
    for _ in range(attempts):
        result = await stack.planner_pass()
        if result.started:
            return list(result.started)
        await asyncio.sleep(0.25)
    return []
