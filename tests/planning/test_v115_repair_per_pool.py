"""Per-pool node repair settings in the DisruptionPolicy (`spec.repair`; kubernetes-sigs/karpenter#2811, the zone
breaker of kubernetes-sigs/karpenter#3031; docs/semantics.md §13): off for one pool, its own toleration, its own
zone-outage share, with the worker's settings for every pool the policy does not select."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from planning_factory import AT, node_and_claim, nodepool, pod, snapshot, ts
from pydantic import ValidationError

from api.disruption_policy import DisruptionPolicy
from planning.disruption.repair import (
    DEFAULT_POLICIES,
    Condition,
    NodeHealth,
    PoolRepair,
    RepairBlockReason,
    RepairPolicies,
    decide_repairs,
)
from planning.planner.plan import plan

LEGACY = RepairPolicies(DEFAULT_POLICIES, legacy=True)


def policy(pools: list[str], repair: dict[str, Any], name: str = "gpu-repair") -> dict[str, Any]:
    return {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": name},
            "spec": {"nodePools": pools, "repair": repair}}


def sick(name: str, pool: str = "default", since: timedelta = timedelta(hours=1),
         zone: str = "us-east-1a") -> list[dict[str, Any]]:
    objs = node_and_claim(name, pool=pool, zone=zone)
    objs[0]["status"]["conditions"] = [{"type": "Ready", "status": "False", "lastTransitionTime": ts(AT - since)}]
    return objs


def healthy(count: int, pool: str = "default", zone: str = "us-east-1b") -> list[Any]:
    return [*[node_and_claim(f"{pool}-{i}", pool=pool, zone=zone) for i in range(count)],
            *[pod(f"{pool}w{i}", f"{pool}-{i}", "3") for i in range(count)]]


def _health(name: str, pool: str, zone: str, ready: str = "True", hours: float = 1) -> NodeHealth:
    return NodeHealth(name, pool, (Condition("Ready", ready, AT - timedelta(hours=hours)),), zone=zone)


def test_repair_disabled_for_one_pool_holds_its_nodes_and_names_the_policy() -> None:
    nodes = [_health("a-sick", "a", "z-a", "False"), *[_health(f"a-{i}", "a", "z-b") for i in range(5)],
             _health("b-sick", "b", "z-c", "False"), *[_health(f"b-{i}", "b", "z-b") for i in range(5)]]
    decision = decide_repairs(nodes, AT, pools={"a": PoolRepair(enabled=False, policy="gpu-repair")})
    assert [r.node for r in decision.due] == ["b-sick"]
    (held,) = decision.blocked
    assert (held.node_pool, held.reason, held.nodes) == ("a", RepairBlockReason.DISABLED, ("a-sick",))
    assert "gpu-repair" in held.message() and held.to_public()["disruptionPolicy"] == "gpu-repair"
    legacy = decide_repairs(nodes, AT, LEGACY, {"a": PoolRepair(enabled=False)})
    assert [r.node for r in legacy.repairs] == ["b-sick"]  # the legacy path reads the same settings


def test_a_pools_toleration_replaces_the_workers() -> None:
    """Ready=False for 20 min: not due at the worker's 30 min, due at the pool's 15 min; 45 min waits at 1h."""
    nodes = [_health("a-sick", "a", "z-a", "False", hours=1 / 3), *[_health(f"a-{i}", "a", "z-b") for i in range(5)],
             _health("b-sick", "b", "z-c", "False", hours=0.75), *[_health(f"b-{i}", "b", "z-b") for i in range(5)]]
    assert decide_repairs(nodes, AT).due[0].node == "b-sick"
    decision = decide_repairs(nodes, AT, pools={"a": PoolRepair(toleration=timedelta(minutes=15)),
                                                "b": PoolRepair(toleration=timedelta(hours=1))})
    (due,) = decision.due
    assert due.node == "a-sick" and due.policy.toleration == timedelta(minutes=15)


def test_a_pools_zone_outage_share_applies_to_its_own_nodes_only() -> None:
    """Zone z-a: 2 of 3 nodes unhealthy (67%). At the worker's 50% that is an outage for both pools; pool a's
    policy raises its share to 70%, so its node is repaired while pool b's stays held."""
    nodes = [_health("a-sick", "a", "z-a", "False"), _health("a-ok", "a", "z-a"),
             _health("b-sick", "b", "z-a", "Unknown"),
             *[_health(f"a-{i}", "a", "z-b") for i in range(4)], *[_health(f"b-{i}", "b", "z-b") for i in range(4)]]
    assert decide_repairs(nodes, AT).due == []
    decision = decide_repairs(nodes, AT, pools={"a": PoolRepair(zone_outage_percent=70, policy="p")})
    assert [r.node for r in decision.due] == ["a-sick"]
    assert [(b.node_pool, b.reason, b.percent) for b in decision.blocked] == [
        ("b", RepairBlockReason.ZONE_OUTAGE, 50)]
    stricter = decide_repairs(nodes, AT, RepairPolicies(DEFAULT_POLICIES, zone_outage_percent=70),
                              {"b": PoolRepair(zone_outage_percent=50, policy="p")})
    assert [r.node for r in stricter.due] == ["a-sick"]
    (held,) = stricter.blocked
    assert (held.node_pool, held.percent, held.to_public()["disruptionPolicy"]) == ("b", 50, "p")


def test_the_pass_reads_the_policy_and_plan_reports_the_held_pool() -> None:
    snap = snapshot(nodepool(), nodepool("gpu"), sick("sick"), pod("web-1", "sick", "3"), *healthy(5),
                    sick("gpu-sick", "gpu", zone="us-east-1c"), pod("gpu-1", "gpu-sick", "3"), *healthy(5, "gpu"),
                    policy(["gpu"], {"enabled": False}))
    result = plan(snap, AT)
    assert [(c.method, c.nodes) for c in result.commands] == [("Repair", ["sick"])]
    (held,) = result.repairs_blocked
    assert (held.node_pool, held.reason, held.nodes) == ("gpu", RepairBlockReason.DISABLED, ("gpu-sick",))
    events = [(e.kind, e.name) for e in result.events if e.reason == "NodeRepairBlocked"]
    assert ("NodePool", "gpu") in events and ("Node", "gpu-sick") in events


def test_a_policy_toleration_makes_a_young_fault_due_in_the_pass() -> None:
    objs = [nodepool(), sick("sick", since=timedelta(minutes=10)), pod("web-1", "sick", "3"), *healthy(5)]
    assert [c for c in plan(snapshot(*objs), AT).commands if c.method == "Repair"] == []
    result = plan(snapshot(*objs, policy(["default"], {"toleration": "5m"})), AT)
    assert [(c.method, c.nodes) for c in result.commands] == [("Repair", ["sick"])]


@pytest.mark.parametrize("repair", [{"zoneOutagePercent": 0}, {"zoneOutagePercent": 101}, {"toleration": "0s"},
                                    {"toleration": "soon"}, {"enabled": "maybe"}, {"enable": False}])
def test_the_model_refuses_bad_repair_settings(repair: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        DisruptionPolicy.model_validate(policy(["default"], repair))


def test_the_model_reads_the_settings() -> None:
    r = DisruptionPolicy.model_validate(policy(["a"], {"enabled": False, "toleration": "1h",
                                                       "zoneOutagePercent": 70})).spec.repair
    assert r is not None and (r.enabled, r.toleration_delta, r.zone_outage_percent) == (False, timedelta(hours=1), 70)
