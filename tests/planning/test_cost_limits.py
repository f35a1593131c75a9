"""Cost limits (docs/semantics.md §15.10): `limits.costPerHour` of a DisruptionPolicy caps what its pools cost; the
provisioner launches nothing past it, and replacements that do not raise cost pass."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from planning_factory import AT, node_and_claim, nodepool, pod, snapshot, ts

from api import labels as L
from planning.planner.plan import plan
from planning.provisioning.provisioner import Exclusion, decide

M5XL = 0.192  # m5.xlarge on-demand, $/h in the default catalog
ONLY_M5XL = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
             {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.xlarge"]}]


def policy(name: str = "cap", limit: str = "0.60", pools: list[str] | None = None,
           selector: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    target: dict[str, Any] = {"nodePoolSelector": selector} if selector is not None else {
        "nodePools": pools or ["default"]}
    return {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": name},
            "spec": {**target, "limits": {"costPerHour": limit}, **spec}}


def _scale_out(n: int = 5, pool: str = "default") -> list[Any]:
    """One busy m5.xlarge ($0.192/h) and `n` pending pods that each need an m5.xlarge of their own."""
    return [nodepool(pool, requirements=ONLY_M5XL), node_and_claim("a", "m5.xlarge", pool=pool),
            pod("busy", "a", cpu="3"), *[pod(f"web-{i}", None, cpu="3") for i in range(n)]]


def test_without_a_limit_every_pod_gets_a_node():
    assert len(decide(snapshot(*_scale_out())).launches) == 5


def test_a_cost_limit_stops_the_scale_out_at_the_limit_and_says_why():
    decision = decide(snapshot(*_scale_out(), policy(limit="0.60")))
    assert len(decision.launches) == 2  # 0.192 + 2 x 0.192 = 0.576 <= 0.60; a third would be 0.768
    assert len(decision.unservable) == 3
    for u in decision.unservable:
        (excl,) = u.exclusions
        assert excl.reason is Exclusion.COST_LIMIT and excl.node_pool == "default"
        assert "cost limit $0.60/h of DisruptionPolicy cap" in excl.detail
    assert set(decision.pools_at_cost_limit) == {"default"}
    (row,) = decision.cost_limits
    assert row == {"policy": "cap", "nodePools": ["default"], "limit": "0.60", "used": M5XL,
                   "planned": round(2 * M5XL, 6), "headroom": round(0.60 - 3 * M5XL, 6)}


def test_a_sum_exactly_at_the_limit_is_within_it():
    decision = decide(snapshot(*_scale_out(), policy(limit="0.576")))
    assert len(decision.launches) == 2 and decision.cost_limits[0]["headroom"] == 0


def test_a_pool_already_over_its_limit_launches_nothing():
    decision = decide(snapshot(*_scale_out(2), policy(limit="0.10")))
    assert decision.launches == [] and len(decision.unservable) == 2
    assert decision.cost_limits[0]["headroom"] < 0


def test_launches_in_flight_count_against_the_limit():
    launching = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
                 "metadata": {"name": "default-x", "uid": "uid-x", "labels": {L.NODEPOOL_LABEL: "default"},
                              "creationTimestamp": ts(AT)},
                 "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                          "requirements": ONLY_M5XL},
                 "status": {}}
    # the launching claim takes web-0; web-1..4 need nodes, and $0.384 of the $0.60 is already spent
    decision = decide(snapshot(*_scale_out(), launching, policy(limit="0.60")), at=AT)
    assert decision.cost_limits[0]["used"] == round(2 * M5XL, 6)
    assert len(decision.launches) == 1 and len(decision.nominated) == 1


def test_a_node_marked_for_deletion_does_not_count():
    objs = _scale_out(1)
    gone = node_and_claim("gone", "m5.xlarge")
    gone[1]["metadata"]["deletionTimestamp"] = ts(AT)
    decision = decide(snapshot(*objs, *gone, policy(limit="0.40")), at=AT)
    assert decision.cost_limits[0]["used"] == M5XL and len(decision.launches) == 1


def test_another_pool_serves_what_a_capped_pool_cannot():
    capped = nodepool("capped", weight=50, requirements=ONLY_M5XL)
    spare = nodepool("spare", requirements=ONLY_M5XL)
    objs = [capped, spare, *[pod(f"web-{i}", None, cpu="3") for i in range(3)]]
    decision = decide(snapshot(*objs, policy(limit="0.20", pools=["capped"])))
    assert sorted(lt.node_pool for lt in decision.launches) == ["capped", "spare", "spare"]
    assert decision.unservable == []


def test_a_cluster_wide_limit_sums_every_pool():
    a = nodepool("a", requirements=ONLY_M5XL)
    b = nodepool("b", requirements=ONLY_M5XL)
    objs = [a, b, node_and_claim("na", pool="a"), node_and_claim("nb", pool="b"), pod("x", "na", cpu="3"),
            pod("y", "nb", cpu="3"), *[pod(f"web-{i}", None, cpu="3") for i in range(3)]]
    decision = decide(snapshot(*objs, policy(limit="0.60", selector={})))
    assert len(decision.launches) == 1  # 2 x 0.192 running + 0.192 = 0.576
    assert decision.cost_limits[0]["nodePools"] == ["a", "b"]


def test_two_policies_on_one_pool_both_bind():
    objs = [*_scale_out(), policy("loose", limit="10"), policy("tight", limit="0.40")]
    decision = decide(snapshot(*objs))
    assert len(decision.launches) == 1
    assert {r["policy"] for r in decision.cost_limits} == {"loose", "tight"}
    assert all("DisruptionPolicy tight" in u.exclusions[0].detail for u in decision.unservable)


# ---- replacements in the planner ---------------------------------------------------------------------------

def test_consolidation_that_lowers_cost_passes_a_limit_already_crossed():
    np = nodepool(requirements=[{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
                                {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"]}])
    objs = [np, node_and_claim("big", "m5.2xlarge"), pod("x-1", "big", cpu="1")]
    (cmd,) = plan(snapshot(*objs, policy(limit="0.05")), AT).commands
    assert cmd.method == "SingleNodeConsolidation" and cmd.decision == "replace"
    assert cmd.replacements[0].price < 0.384


def test_a_drift_replacement_no_dearer_passes_a_crossed_limit_a_dearer_one_does_not():
    np = nodepool(consolidate_after="Never", requirements=ONLY_M5XL)
    cond = [{"type": "Initialized", "status": "True", "lastTransitionTime": ts(AT - timedelta(hours=2))},
            {"type": "Drifted", "status": "True", "lastTransitionTime": ts(AT - timedelta(hours=1))}]
    objs = [np, node_and_claim("old", "m5.xlarge", conditions=cond), pod("x-1", "old", cpu="3")]
    (cmd,) = plan(snapshot(*objs, policy(limit="0.10")), AT).commands  # like for like: cost unchanged
    assert cmd.method == "Drift" and cmd.replacements[0].instance_types == ["m5.xlarge"]
    dearer = nodepool(consolidate_after="Never", requirements=[
        {"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
        {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.2xlarge"]}])
    small = node_and_claim("small", "m5.xlarge", conditions=cond)
    within = plan(snapshot(dearer, *small, pod("x-1", "small", cpu="3"), policy(limit="0.40")), AT)
    assert [c.method for c in within.commands] == ["Drift"]  # 0.384 replacing 0.192: $0.384/h, within $0.40
    over = plan(snapshot(dearer, *small, pod("x-1", "small", cpu="3"), policy(limit="0.30")), AT)
    assert over.commands == []  # it would raise the pools' cost to $0.384/h, over $0.30
    (blocked,) = over.blocked
    assert blocked.node == "small" and "within its limits" in blocked.reason
    assert "nodepool default: cost limit $0.30/h of DisruptionPolicy cap leaves no instance type" in blocked.reason
