"""Node repair decision (planning/disruption/repair.py): tolerations, the 20% safety valve, configured conditions.

Most of these run the legacy (forceful) path, whose decisions land in `repairs`; the v1.15 method's are in
tests/planning/test_repair_method.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from planning_factory import AT, node_and_claim, nodepool, pod, snapshot, ts

from planning.disruption.repair import (
    DEFAULT_POLICIES,
    Condition,
    NodeHealth,
    RepairBlockReason,
    RepairDecision,
    RepairPolicies,
    RepairPolicy,
    allowed_unhealthy,
    decide_repairs,
    default_policies,
)
from planning.planner.plan import plan

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
LEGACY = RepairPolicies(DEFAULT_POLICIES, legacy=True)


def legacy_decide(nodes: list[NodeHealth], now: datetime,
                  policies: tuple[RepairPolicy, ...] = DEFAULT_POLICIES) -> RepairDecision:
    """decide_repairs on the legacy path (`--legacy-node-repair`)."""
    return decide_repairs(nodes, now, RepairPolicies(policies, legacy=True))


def node(name: str, pool: str = "default", ready: str = "True", since: timedelta | None = timedelta(hours=2),
         extra: tuple[Condition, ...] = (), repairable: bool = True) -> NodeHealth:
    when = None if since is None else NOW - since
    return NodeHealth(name, pool, (Condition("Ready", ready, when), *extra), repairable)


def healthy(count: int, pool: str = "default", prefix: str = "ok") -> list[NodeHealth]:
    return [node(f"{prefix}-{i}", pool) for i in range(count)]


def test_healthy_nodes_are_left_alone() -> None:
    decision = legacy_decide(healthy(5), NOW)
    assert decision.repairs == [] and decision.blocked == []


def test_not_ready_within_the_toleration_waits() -> None:
    decision = legacy_decide([node("sick", ready="False", since=timedelta(minutes=29)), *healthy(9)], NOW)
    assert decision.repairs == [] and decision.blocked == []


def test_not_ready_past_the_toleration_is_repaired_with_its_reason() -> None:
    decision = legacy_decide([node("sick", ready="False", since=timedelta(minutes=31)), *healthy(9)], NOW)
    (repair,) = decision.repairs
    assert (repair.node, repair.node_pool, repair.policy.condition, repair.policy.status) == \
        ("sick", "default", "Ready", "False")
    assert repair.since == NOW - timedelta(minutes=31)
    assert "condition Ready has been False" in repair.message() and "30m0s" in repair.message()
    assert repair.to_public()["tolerationSeconds"] == 1800


def test_the_toleration_ends_at_its_instant() -> None:
    decision = legacy_decide([node("sick", ready="False", since=timedelta(minutes=30)), *healthy(9)], NOW)
    assert [r.node for r in decision.repairs] == ["sick"]


def test_unknown_status_counts_as_unhealthy() -> None:
    decision = legacy_decide([node("gone", ready="Unknown", since=timedelta(hours=1)), *healthy(4)], NOW)
    (repair,) = decision.repairs
    assert repair.policy.status == "Unknown"


def test_a_condition_without_transition_time_is_never_due_but_counts_toward_the_pool() -> None:
    nodes = [node("vague", ready="False", since=None), node("sick", ready="False", since=timedelta(hours=1)),
             *healthy(3)]
    decision = legacy_decide(nodes, NOW)
    # 2 unhealthy of 5 is over the 1 allowed: the valve holds back the one that is due
    assert decision.repairs == []
    (blocked,) = decision.blocked
    assert blocked.unhealthy == 2 and blocked.nodes == ("sick",)


def test_more_than_20_percent_unhealthy_repairs_nothing_and_says_why() -> None:
    nodes = [node(f"sick-{i}", ready="False", since=timedelta(hours=1)) for i in range(3)] + healthy(7)
    decision = legacy_decide(nodes, NOW)
    assert decision.repairs == []
    (blocked,) = decision.blocked
    assert blocked.reason is RepairBlockReason.NODEPOOL_UNHEALTHY
    assert (blocked.node_pool, blocked.unhealthy, blocked.total, blocked.allowed) == ("default", 3, 10, 2)
    assert blocked.nodes == ("sick-0", "sick-1", "sick-2")
    assert "3 of 10 nodes of NodePool default are unhealthy" in blocked.message()
    assert blocked.to_public()["reason"] == "NodePoolUnhealthy"


def test_exactly_at_the_threshold_repairs() -> None:
    nodes = [node(f"sick-{i}", ready="False", since=timedelta(hours=1)) for i in range(2)] + healthy(8)
    decision = legacy_decide(nodes, NOW)
    assert [r.node for r in decision.repairs] == ["sick-0", "sick-1"] and decision.blocked == []
    # 20% rounds up, as Karpenter's scaled percentage does: one of a pool of 1..5 may be repaired
    assert [allowed_unhealthy(n) for n in (1, 4, 5, 6, 10, 11)] == [1, 1, 1, 2, 2, 3]


def test_unhealthy_nodes_not_yet_due_still_count_toward_the_valve() -> None:
    nodes = [node("due", ready="False", since=timedelta(hours=1)),
             node("fresh", ready="False", since=timedelta(minutes=1)), *healthy(3)]
    decision = legacy_decide(nodes, NOW)
    assert decision.repairs == [] and decision.blocked[0].nodes == ("due",)


def test_pools_are_judged_separately() -> None:
    nodes = [node("a-sick", "a", ready="False", since=timedelta(hours=1)), *healthy(9, "a", "a"),
             node("b-sick-0", "b", ready="Unknown", since=timedelta(hours=1)),
             node("b-sick-1", "b", ready="False", since=timedelta(hours=1)), *healthy(2, "b", "b"),
             node("c-sick", "c", ready="False", since=timedelta(minutes=5)), *healthy(1, "c", "c")]
    decision = legacy_decide(nodes, NOW)
    assert [(r.node_pool, r.node) for r in decision.repairs] == [("a", "a-sick")]
    assert [(b.node_pool, b.nodes) for b in decision.blocked] == [("b", ("b-sick-0", "b-sick-1"))]


def test_a_configured_extra_condition_with_its_own_toleration() -> None:
    policies = (*DEFAULT_POLICIES, RepairPolicy("NetworkingReady", "False", timedelta(minutes=10)))
    broken = Condition("NetworkingReady", "False", NOW - timedelta(minutes=11))
    fine = Condition("NetworkingReady", "True", NOW - timedelta(hours=3))
    nodes = [node("net", extra=(broken,)), node("ok-net", extra=(fine,)), *healthy(8)]
    assert legacy_decide(nodes, NOW).repairs == []  # not a policy by default
    (repair,) = legacy_decide(nodes, NOW, policies).repairs
    assert (repair.node, repair.policy.condition) == ("net", "NetworkingReady")


def test_the_policy_whose_toleration_ends_first_is_the_reason() -> None:
    policies = (*default_policies(timedelta(hours=2)), RepairPolicy("DiskReady", "False", timedelta(minutes=5)))
    n = node("both", ready="False", since=timedelta(hours=3), extra=(Condition("DiskReady", "False", NOW),))
    (repair,) = legacy_decide([n, *healthy(9)], NOW, policies).repairs
    assert repair.policy.condition == "Ready"  # ended an hour ago; DiskReady's ends in 5 minutes


def test_nodes_that_are_not_repairable_or_have_no_pool_are_never_repaired() -> None:
    nodes = [node("flight", ready="False", since=timedelta(hours=1), repairable=False), *healthy(9),
             node("loose", pool="", ready="False", since=timedelta(hours=1))]
    assert legacy_decide(nodes, NOW).repairs == []


def test_a_shorter_configured_toleration() -> None:
    nodes = [node("sick", ready="False", since=timedelta(seconds=6)), *healthy(4)]
    assert legacy_decide(nodes, NOW).repairs == []
    assert [r.node for r in legacy_decide(nodes, NOW, default_policies(timedelta(seconds=5))).repairs] == ["sick"]


def test_from_node_reads_conditions_and_transition_times() -> None:
    raw = {"metadata": {"name": "n1"}, "status": {"conditions": [
        {"type": "Ready", "status": "False", "lastTransitionTime": "2026-11-01T11:00:00Z"},
        {"type": "MemoryPressure", "status": "False"}]}}
    health = NodeHealth.from_node(raw, "default")
    assert health.name == "n1" and health.condition("Ready") == Condition("Ready", "False", NOW - timedelta(hours=1))
    assert health.condition("MemoryPressure").since is None



# ---- in the planner pass (planning/planner/plan.py)
# --------------------------------------------------------------------

def _sick(name: str, since: timedelta, status: str = "False") -> list[dict]:
    objs = node_and_claim(name)
    objs[0]["status"]["conditions"] = [{"type": "Ready", "status": status, "lastTransitionTime": ts(AT - since)}]
    return objs


def test_the_pass_repairs_explains_and_leaves_the_node_to_no_other_method() -> None:
    snap = snapshot(nodepool(), _sick("sick", timedelta(hours=1)),
                    *[node_and_claim(f"busy-{i}") for i in range(4)],
                    *[pod(f"w{i}-1", f"busy-{i}", "3") for i in range(4)])
    result = plan(snap, AT, repair=LEGACY)
    assert [(r.node, r.policy.status) for r in result.repairs] == [("sick", "False")]
    assert all("sick" not in c.nodes for c in result.commands)  # empty, but repair took it: no Emptiness too
    (event,) = [e for e in result.events if e.reason == "NodeRepair"]
    assert (event.kind, event.name, event.type) == ("Node", "sick", "Warning")
    assert "repairs" not in result.to_public()  # the contract's JSON stays as it is; `nodeflow plan` adds it
    assert plan(snap, AT, repair=()).repairs == []  # repair off
    assert plan(snap, AT, repair=RepairPolicies(default_policies(timedelta(hours=2)), legacy=True)).repairs == []


def test_the_pass_reports_the_valve_on_the_pool_and_its_nodes() -> None:
    snap = snapshot(nodepool(), _sick("s-0", timedelta(hours=1)), _sick("s-1", timedelta(hours=1), "Unknown"),
                    *[node_and_claim(f"ok-{i}") for i in range(3)])
    result = plan(snap, AT, repair=LEGACY)
    assert result.repairs == [] and [b.nodes for b in result.repairs_blocked] == [("s-0", "s-1")]
    blocked = {(e.kind, e.name) for e in result.events if e.reason == "NodeRepairBlocked"}
    assert blocked == {("NodePool", "default"), ("Node", "s-0"), ("Node", "s-1")}


def test_in_flight_nodes_are_not_repaired_again() -> None:
    snap = snapshot(nodepool(), _sick("sick", timedelta(hours=1)), *[node_and_claim(f"ok-{i}") for i in range(4)])
    assert plan(snap, AT, exclude_nodes={"sick"}, repair=LEGACY).repairs == []


def test_configured_policies_parse_and_bad_ones_say_what_is_expected() -> None:
    from planning.disruption.repair import parse_policy, policies_for

    assert parse_policy("NetworkingReady=False:10m") == RepairPolicy("NetworkingReady", "False", timedelta(minutes=10))
    for bad in ("NetworkingReady", "=False:1m", "X=False", "X=False:ten"):
        try:
            parse_policy(bad)
        except ValueError as exc:
            assert "Type=Status:Duration" in str(exc)
        else:
            raise AssertionError(bad)
    assert policies_for(False, timedelta(minutes=5), ["X=False:1m"]) == ()
    assert [p.condition for p in policies_for(True, timedelta(minutes=5), ["X=False:1m"])] == ["Ready", "Ready", "X"]
