"""Node repair as a budgeted disruption method (v1.15, kubernetes-sigs/karpenter#3311; docs/semantics.md §13):
ahead of drift, the Unhealthy budget, the karpenter.sh/do-not-repair veto, the zone-outage hold, and the legacy flag."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from planning_factory import AT, node_and_claim, nodepool, pod, snapshot, ts

from api import labels as L
from api.budgets import budget_problems
from api.nodepool import Budget
from planning.disruption.repair import (
    DEFAULT_POLICIES,
    Condition,
    NodeHealth,
    RepairBlockReason,
    RepairPolicies,
    decide_repairs,
)
from planning.planner.plan import plan

LEGACY = RepairPolicies(DEFAULT_POLICIES, legacy=True)
STALE = {L.TEMPLATE_HASH_ANNOTATION: "stale-template"}


def sick(name: str, *, zone: str = "us-east-1a", veto: bool = False, **kw: Any) -> list[dict[str, Any]]:
    """A node NotReady for an hour (past the 30 min toleration), with a pod that needs a new home."""
    objs = node_and_claim(name, zone=zone, node_annotations={L.DO_NOT_REPAIR_ANNOTATION: "true"} if veto else None,
                          **kw)
    objs[0]["status"]["conditions"] = [{"type": "Ready", "status": "False",
                                        "lastTransitionTime": ts(AT - timedelta(hours=1))}]
    return objs


def busy(count: int, prefix: str = "busy", zone: str = "us-east-1b") -> list[Any]:
    """Full nodes (a 3-CPU pod each on m5.xlarge), so a displaced pod needs a replacement."""
    return [*[node_and_claim(f"{prefix}-{i}", zone=zone) for i in range(count)],
            *[pod(f"{prefix}w{i}-1", f"{prefix}-{i}", "3") for i in range(count)]]


def _repair_commands(result: Any) -> list[Any]:
    """Commands that repair, or take one of the sick nodes by another method."""
    return [c for c in result.commands if c.method == "Repair" or {"sick", "s-0", "s-1"} & set(c.nodes)]


def test_repair_runs_ahead_of_drift_and_pre_spins_a_replacement() -> None:
    snap = snapshot(nodepool(), sick("sick"), pod("web-1", "sick", "3"),
                    node_and_claim("old", zone="us-east-1b", claim_annotations=STALE), pod("old-1", "old", "3"),
                    *busy(4))
    result = plan(snap, AT)
    (cmd,) = result.commands
    assert (cmd.method, cmd.reason, cmd.nodes) == ("Repair", "Unhealthy", ["sick"])
    assert len(cmd.replacements) == 1  # replace, then drain: not a forceful termination
    assert result.repairs == []
    later = plan(snap, AT, until_stable=True).commands
    assert [c.method for c in later][:2] == ["Repair", "Drift"]


def test_budget_is_spent_by_the_unhealthy_reason() -> None:
    objs = [sick("sick"), pod("web-1", "sick", "3"), *busy(4)]
    none_for_repair = nodepool(budgets=[{"nodes": "0", "reasons": ["Unhealthy"]}, {"nodes": "100%"}])
    result = plan(snapshot(none_for_repair, *objs), AT)
    assert _repair_commands(result) == [] and result.repairs == []
    (blocked,) = [b for b in result.blocked if b.node == "sick"]
    assert blocked.budget_reason == "Unhealthy"
    none_for_drift = nodepool(budgets=[{"nodes": "0", "reasons": ["Drifted", "Underutilized", "Empty"]},
                                       {"nodes": "100%"}])
    assert [c.method for c in plan(snapshot(none_for_drift, *objs), AT).commands] == ["Repair"]


def test_the_unhealthy_node_does_not_spend_its_own_budget() -> None:
    """Budget counting takes a NotReady node as disrupting; 10% of ten nodes is one, and that one is the repair."""
    snap = snapshot(nodepool(budgets=[{"nodes": "10%"}]), sick("sick"), pod("web-1", "sick", "3"), *busy(9))
    assert [c.nodes for c in plan(snap, AT).commands] == [["sick"]]


def test_do_not_repair_vetoes_and_plan_names_the_node() -> None:
    snap = snapshot(nodepool(), sick("sick", veto=True), pod("web-1", "sick", "3"), *busy(4))
    result = plan(snap, AT)
    assert _repair_commands(result) == [] and result.repairs == []
    assert [r.node for r in result.repairs_vetoed] == ["sick"]
    (event,) = [e for e in result.events if e.reason == "NodeRepairBlocked"]
    assert (event.kind, event.name) == ("Node", "sick") and L.DO_NOT_REPAIR_ANNOTATION in event.message
    legacy = plan(snap, AT, repair=LEGACY)
    assert legacy.repairs == [] and [r.node for r in legacy.repairs_vetoed] == ["sick"]


def _health(name: str, pool: str, zone: str, ready: str = "True") -> NodeHealth:
    return NodeHealth(name, pool, (Condition("Ready", ready, AT - timedelta(hours=1)),), zone=zone)


def test_a_zone_outage_holds_repairs_across_pools() -> None:
    """Two of three nodes of zone a turned unhealthy (one per pool, each pool within its 20%): an outage."""
    nodes = [_health("a-sick", "a", "z-a", "False"), _health("a-ok", "a", "z-a"),
             _health("b-sick", "b", "z-a", "Unknown"),
             *[_health(f"a-{i}", "a", "z-b") for i in range(4)], *[_health(f"b-{i}", "b", "z-b") for i in range(4)]]
    decision = decide_repairs(nodes, AT)
    assert decision.due == [] and decision.repairs == []
    assert [(b.node_pool, b.reason, b.zone, b.nodes) for b in decision.blocked] == [
        ("a", RepairBlockReason.ZONE_OUTAGE, "z-a", ("a-sick",)),
        ("b", RepairBlockReason.ZONE_OUTAGE, "z-a", ("b-sick",))]
    assert "outage" in decision.blocked[0].message()
    assert decide_repairs(nodes, AT, LEGACY).repairs == []  # a safety, on the legacy path too
    wider = decide_repairs(nodes, AT, RepairPolicies(DEFAULT_POLICIES, zone_outage_percent=70))
    assert [r.node for r in wider.due] == ["a-sick", "b-sick"] and wider.blocked == []


def test_one_sick_node_is_a_node_fault_even_alone_in_its_zone() -> None:
    nodes = [_health("lone", "a", "z-c", "False"), *[_health(f"a-{i}", "a", "z-b") for i in range(4)]]
    assert [r.node for r in decide_repairs(nodes, AT).due] == ["lone"]


def test_the_pass_reports_a_zone_outage_on_the_nodepool() -> None:
    snap = snapshot(nodepool(), sick("s-0"), sick("s-1"), node_and_claim("ok-a"),
                    *[node_and_claim(f"ok-{i}", zone="us-east-1b") for i in range(7)])
    result = plan(snap, AT)
    assert _repair_commands(result) == [] and [(b.reason, b.zone) for b in result.repairs_blocked] == [
        (RepairBlockReason.ZONE_OUTAGE, "us-east-1a")]
    pools = [e for e in result.events if e.reason == "NodeRepairBlocked" and e.kind == "NodePool"]
    assert len(pools) == 1 and "us-east-1a" in pools[0].message


def test_legacy_flag_keeps_the_forceful_delete_without_budget() -> None:
    pool = nodepool(budgets=[{"nodes": "0"}])
    snap = snapshot(pool, sick("sick"), pod("web-1", "sick", "3"), *busy(4))
    result = plan(snap, AT, repair=LEGACY)
    assert [r.node for r in result.repairs] == ["sick"] and _repair_commands(result) == []
    assert plan(snap, AT).repairs == []  # the default is the budgeted method, and its budget is 0


def test_the_budget_reasons_enum_accepts_unhealthy() -> None:
    assert budget_problems(Budget.model_validate({"nodes": "10%", "reasons": ["Unhealthy", "Drifted"]})) == []
    assert budget_problems(Budget.model_validate({"nodes": "10%", "reasons": ["Repair"]})) != []


def test_a_launching_node_does_not_lend_budget_to_repair() -> None:
    """Only initialized NotReady nodes are taken off `disrupting`: a launching node was never counted there."""
    launching = node_and_claim("new", ready=False, zone="us-east-1b",
                               conditions=[{"type": "Launched", "status": "True"}])
    launching[0]["metadata"]["labels"].pop(L.INITIALIZED_LABEL)
    in_flight = node_and_claim("going", zone="us-east-1b", taints=[dict(L.DISRUPTED_TAINT)])
    pool = nodepool(budgets=[{"nodes": "1"}])
    snap = snapshot(pool, sick("sick"), pod("web-1", "sick", "3"), launching, in_flight, *busy(4))
    result = plan(snap, AT)
    assert _repair_commands(result) == []  # the one disruption the budget allows is `going`'s
    assert [b.budget_reason for b in result.blocked if b.node == "sick"] == ["Unhealthy"]


def test_a_zero_unhealthy_budget_is_reported_on_the_nodepool() -> None:
    """The pass's budget rows carry node repair's reason (api/budgets.py ALL_REASONS), so a blocking one says so."""
    pool = nodepool(budgets=[{"nodes": "0", "reasons": ["Unhealthy"]}, {"nodes": "100%"}])
    result = plan(snapshot(pool, sick("sick"), pod("web-1", "sick", "3"), *busy(4)), AT)
    assert [(r["reason"], r["limit"]) for r in result.budgets if r["reason"] == "Unhealthy"] == [("Unhealthy", 0)]
    told = [e.message for e in result.events if e.kind == "NodePool" and e.reason == "DisruptionBlocked"]
    assert any("Unhealthy" in m for m in told), told


def test_budget_use_counts_the_unhealthy_row_as_its_budget_does() -> None:
    """`budgetUse` lists what a row's `disrupting` counts: the NotReady node for Empty, not for Unhealthy."""
    from planning.planner.plan import explain_plan

    snap = snapshot(nodepool(budgets=[{"nodes": "0", "reasons": ["Unhealthy"]}, {"nodes": "100%"}]), sick("sick"),
                    pod("web-1", "sick", "3"), *busy(4))
    use = {u["reason"]: u for u in explain_plan(snap, AT).budget_use}
    rows = {r["reason"]: r for r in plan(snap, AT).budgets}
    assert use["Empty"]["disrupting"] == ["sick"] and rows["Empty"]["disrupting"] == 1
    assert use["Unhealthy"]["disrupting"] == [] and rows["Unhealthy"]["disrupting"] == 0
