"""DisruptionPolicy in the planner: graceful expiry (Expiring), the savings threshold and the calendar holds."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from planning_factory import AT, OLD, node_and_claim, nodepool, pod, snapshot, ts

from api import labels as L
from planning.planner.plan import plan

REQ = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
       {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]}]
M5 = [*REQ, {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"]}]


def policy(name: str = "p", pools: list[str] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": name},
            "spec": {"nodePools": pools or ["default"], **spec}}


def _drifted(name: str, **kw: Any) -> list[dict[str, Any]]:
    cond = [{"type": "Initialized", "status": "True", "lastTransitionTime": ts(OLD)},
            {"type": "Drifted", "status": "True", "lastTransitionTime": ts(OLD)}]
    return node_and_claim(name, conditions=cond, **kw)


# ---- soft-then-hard expiration ---------------------------------------------------------------------------

def _aging(budgets: list[dict[str, Any]] | None = None) -> list[Any]:
    np = nodepool(consolidate_after="Never", requirements=REQ, expire_after="720h", budgets=budgets)
    return [np, node_and_claim("young", created=AT - timedelta(hours=100)),
            node_and_claim("old", created=AT - timedelta(hours=650)),
            node_and_claim("older", created=AT - timedelta(hours=700)),
            pod("x-1", "young"), pod("y-1", "old"), pod("z-1", "older")]


def test_graceful_expiry_replaces_the_oldest_like_drift_with_reason_expiring():
    result = plan(snapshot(*_aging(), policy(expiration={"gracefulExpireAfter": "600h"})), AT)
    (cmd,) = result.commands
    assert (cmd.method, cmd.reason, cmd.nodes) == ("GracefulExpiration", "Expiring", ["older"])
    assert cmd.pods and cmd.decision in ("replace", "delete")


def test_without_a_policy_nothing_expires_early():
    assert plan(snapshot(*_aging()), AT).commands == []


def test_graceful_expiry_spends_the_drifted_budget():
    objs = _aging(budgets=[{"nodes": "0", "reasons": ["Drifted"]}])
    result = plan(snapshot(*objs, policy(expiration={"gracefulExpireAfter": "600h"})), AT)
    assert result.commands == []
    reasons = {b.node: b.reason for b in result.blocked}
    assert "allows no more Drifted disruptions" in reasons["older"]


def test_hard_expiry_stays_forceful_past_expire_after():
    np = nodepool(consolidate_after="Never", requirements=REQ, expire_after="720h", budgets=[{"nodes": "0"}])
    objs = [np, node_and_claim("dead", created=AT - timedelta(hours=721)), node_and_claim("b"), pod("x-1", "b")]
    result = plan(snapshot(*objs, policy(expiration={"gracefulExpireAfter": "600h"},
                                         calendar={"exclusions": [{"from": "2026-11-22"}]})), AT)
    assert [(c.method, c.nodes) for c in result.commands] == [("Expiration", ["dead"])]


def test_a_drifted_node_is_drift_not_expiring():
    np = nodepool(consolidate_after="Never", requirements=REQ)
    objs = [np, _drifted("a", created=AT - timedelta(hours=700)), pod("x-1", "a")]
    (cmd,) = plan(snapshot(*objs, policy(expiration={"gracefulExpireAfter": "600h"})), AT).commands
    assert cmd.method == "Drift"


# ---- savings threshold -------------------------------------------------------------------------------------

def _single_node_move() -> list[Any]:
    np = nodepool(requirements=M5)
    return [np, node_and_claim("a", "m5.large"), node_and_claim("b", "m5.2xlarge"),
            pod("x-1", "a", "1500m", "1Gi"), pod("y-1", "b", "6", "20Gi")]


def test_savings_threshold_skips_a_cheap_move_and_says_why():
    base = plan(snapshot(*_single_node_move()), AT)
    (cmd,) = base.commands
    saved = cmd.savings_per_hour
    result = plan(snapshot(*_single_node_move(), policy(consolidation={"minSavingsPerHour": "5"})), AT)
    assert result.commands == [] and result.skipped
    move = result.skipped[0]
    assert move.nodes == ["a"] and move.method == "SingleNodeConsolidation"
    assert move.reason.startswith(f"savings ${saved:.3f}".rstrip("0")) and "below threshold $5.00/h" in move.reason


def test_savings_threshold_met_keeps_the_move():
    result = plan(snapshot(*_single_node_move(), policy(consolidation={"minSavingsPerHour": "0.01",
                                                                        "minSavingsPercent": 50})), AT)
    assert [c.method for c in result.commands] == ["SingleNodeConsolidation"] and result.skipped == []


def test_per_pod_cost_raises_the_threshold_with_the_evictions():
    np = nodepool(requirements=M5)
    pods = [pod(f"x-{i}", "a", "100m", "64Mi") for i in range(10)]
    objs = [np, node_and_claim("a", "m5.large"), node_and_claim("b", "m5.2xlarge"), *pods,
            pod("y-1", "b", "6", "20Gi")]
    assert plan(snapshot(*objs, policy(consolidation={"perPodDisruptionCost": "0.001"})), AT).commands
    result = plan(snapshot(*objs, policy(consolidation={"perPodDisruptionCost": "0.02"})), AT)
    assert result.commands == []
    assert "10 pod(s) x $0.02" in result.skipped[0].reason and "threshold $0.20/h" in result.skipped[0].reason


def test_savings_percent_threshold():
    np = nodepool(requirements=M5)
    objs = [np, node_and_claim("a", "m5.2xlarge"), pod("x-1", "a", "1", "2Gi")]
    (cmd,) = plan(snapshot(*objs), AT).commands  # replaced by a smaller m5
    percent = cmd.savings_per_hour / 0.384 * 100
    assert cmd.replacements and percent < 90
    result = plan(snapshot(*objs, policy(consolidation={"minSavingsPercent": 90})), AT)
    assert result.commands == []
    assert result.skipped[0].reason == f"savings {percent:.1f}% below threshold 90%"
    assert plan(snapshot(*objs, policy(consolidation={"minSavingsPercent": 50})), AT).commands


def test_multi_node_falls_back_to_a_prefix_that_meets_the_threshold():
    np = nodepool(requirements=REQ)
    objs = [node_and_claim(n, "m5.2xlarge") for n in ("a", "b", "c")]
    pods = [pod(f"x-{n}", n, "1", "2Gi") for n in ("a", "b", "c")]
    (cmd,) = plan(snapshot(np, *objs, *pods, policy(consolidation={"minSavingsPercent": 99})), AT).commands
    assert cmd.method == "MultiNodeConsolidation" and len(cmd.nodes) == 2 and cmd.replacements == []


def test_emptiness_is_not_thresholded():
    result = plan(snapshot(nodepool(), node_and_claim("a"), policy(consolidation={"minSavingsPerHour": "100"})), AT)
    assert [c.method for c in result.commands] == ["Emptiness"]


# ---- calendar -----------------------------------------------------------------------------------------------

def test_exclusion_blocks_drift_and_says_until_when():
    np = nodepool(consolidate_after="Never", requirements=REQ)
    objs = [np, _drifted("a"), pod("x-1", "a")]
    held = policy("freeze", calendar={"timeZone": "Europe/Berlin",
                                      "exclusions": [{"from": "2026-11-20", "to": "2026-11-25"}]})
    result = plan(snapshot(*objs, held), AT)
    assert result.commands == []
    (blocked,) = result.blocked
    assert blocked.node == "a"
    assert blocked.reason == ("calendar exclusion 2026-11-20..2026-11-25 (Europe/Berlin) until "
                              "2026-11-26T00:00+01:00 (DisruptionPolicy freeze)")
    (row,) = result.policy_pools
    assert row.node_pool == "default" and row.policy == "freeze" and row.held.startswith("calendar exclusion")
    assert any(e.kind == "NodePool" and e.reason == "DisruptionBlocked" and "calendar exclusion" in e.message
               for e in result.events)
    assert plan(snapshot(*objs), AT).commands  # without the policy it drifts


def test_outside_allow_window_blocks_consolidation_quietly_and_drift_loudly():
    window = policy(calendar={"allowWindows": [{"schedule": "0 2 * * *", "duration": "1h"}]})  # AT is 20:00 UTC
    result = plan(snapshot(*_single_node_move(), window), AT)
    assert result.commands == [] and result.blocked == []
    assert result.policy_pools[0].held == "outside allow window until 2026-11-23T02:00+00:00"
    inside = policy(calendar={"allowWindows": [{"schedule": "0 20 * * *", "duration": "1h"}]})
    assert plan(snapshot(*_single_node_move(), inside), AT).commands


def test_calendar_does_not_block_forceful_expiration():
    np = nodepool(consolidate_after="Never", expire_after="24h")
    objs = [np, node_and_claim("dead", created=AT - timedelta(hours=25)), node_and_claim("b"), pod("x-1", "b")]
    result = plan(snapshot(*objs, policy(calendar={"exclusions": [{"from": "2026-11-22"}]})), AT)
    assert [c.method for c in result.commands] == ["Expiration"]


def test_other_pools_are_not_held():
    np_a, np_b = nodepool("a", consolidate_after="Never", requirements=REQ), \
        nodepool("b", consolidate_after="Never", requirements=REQ)
    objs = [np_a, np_b, _drifted("n1", pool="a"), _drifted("n2", pool="b"), pod("x-1", "n1"), pod("y-1", "n2")]
    result = plan(snapshot(*objs, policy(pools=["a"], calendar={"exclusions": [{"from": "2026-11-22"}]})), AT)
    assert [c.nodes for c in result.commands] == [["n2"]]
    assert [b.node for b in result.blocked] == ["n1"]


def test_conflicting_policies_hold_the_pool_and_warn():
    np = nodepool(consolidate_after="Never", requirements=REQ, expire_after="24h")
    objs = [np, _drifted("a"), pod("x-1", "a"), node_and_claim("dead", created=AT - timedelta(hours=25))]
    one = policy("one", consolidation={"minSavingsPerHour": "0.01"})
    two = {**policy("two"), "spec": {"nodePoolSelector": {}}}
    result = plan(snapshot(*objs, one, two), AT)
    assert [c.method for c in result.commands] == ["Expiration"]  # forceful: not held
    message = ("NodePool default is selected by DisruptionPolicies one and two: no voluntary disruption starts "
               "until one of them no longer selects it")
    assert [(b.node, b.reason) for b in result.blocked] == [("a", message)]
    (row,) = result.policy_pools
    assert row.policy is None and row.conflict == message and row.hold == "PolicyConflict"
    assert any(e.reason == "DisruptionPolicyConflict" and e.type == "Warning" for e in result.events)
