"""Disruption budget math: docs/semantics.md §1.2-1.5 case by case, plus nodeflow's timeZone."""

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from api.budgets import (
    MAX_INT32,
    BudgetError,
    BudgetRow,
    allowed,
    allowed_disruptions,
    budget_value,
    compute_budget_rows,
    count_both,
    count_nodes,
    is_active,
    next_transition,
    pool_limit,
)
from api.nodepool import Budget, NodePool
from api.snapshot import load_snapshot

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def pool(budgets: list[dict[str, Any]] | None, name: str = "default") -> NodePool:
    spec: dict[str, Any] = {"template": {"spec": {"requirements": []}}}
    if budgets is not None:
        spec["disruption"] = {"budgets": budgets}
    return NodePool.model_validate({"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
                                    "metadata": {"name": name}, "spec": spec})


def node(name: str, pool_name: str | None = "default", ready: str | None = "True", initialized: bool = True,
         deleting: bool = False, taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    lbls = {}
    if pool_name:
        lbls["karpenter.sh/nodepool"] = pool_name
    if initialized:
        lbls["karpenter.sh/initialized"] = "true"
    meta: dict[str, Any] = {"name": name, "labels": lbls}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-22T10:00:00Z"
    conditions = [] if ready is None else [{"type": "Ready", "status": ready}]
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta,
            "spec": {"providerID": f"aws:///us-east-1a/i-{name}", "taints": taints or []},
            "status": {"conditions": conditions}}


def claim(node_name: str, pool_name: str = "default", conditions: list[dict[str, str]] | None = None,
          deleting: bool = False, link: str = "nodeName") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"nc-{node_name}", "labels": {"karpenter.sh/nodepool": pool_name}}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-22T10:00:00Z"
    status: dict[str, Any] = {"conditions": conditions or []}
    if link == "nodeName":
        status["nodeName"] = node_name
    else:
        status["providerID"] = f"aws:///us-east-1a/i-{node_name}"
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": meta,
            "spec": {"requirements": []}, "status": status}


# --- docs/semantics.md §1.3 values and rounding -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("nodes", "total", "value"),
    [
        ("5%", 10, 1), ("30%", 10, 3), ("50%", 3, 2), ("20%", 5, 1), ("10%", 1, 1), ("0%", 10, 0),
        ("20%", 19, 4), ("100%", 7, 7), ("10%", 0, 0), ("0", 10, 0), ("3", 10, 3),
        ("50", 10, 50),  # integers are not capped at the node count
    ],
)
def test_budget_values_round_up(nodes: str, total: int, value: int) -> None:
    assert budget_value(Budget(nodes=nodes), total) == value


def test_non_percent_string_is_an_error() -> None:
    with pytest.raises(BudgetError):
        budget_value(Budget(nodes="1000a%"), 10)
    with pytest.raises(BudgetError):
        allowed_disruptions(Budget(nodes="1000a%"), utc(2026, 1, 1), 10)


# --- docs/semantics.md §1.2 active windows ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("at", "active"),
    [
        (utc(2026, 11, 23, 8, 59, 59), False),
        (utc(2026, 11, 23, 9, 0, 0), True),  # at the hit
        (utc(2026, 11, 23, 9, 59, 59), True),
        (utc(2026, 11, 23, 10, 0, 0), False),  # at hit + duration: inactive (the code, not its comment)
    ],
)
def test_window_is_hit_inclusive_end_exclusive(at: datetime, active: bool) -> None:
    b = Budget(nodes="0", schedule="0 9 * * *", duration="1h")
    assert is_active(b, at) is active
    assert allowed_disruptions(b, at, 10) == (0 if active else MAX_INT32)


def test_budget_without_schedule_is_always_active() -> None:
    assert is_active(Budget(nodes="1"), utc(2026, 1, 1))


def test_windows_longer_than_the_recurrence_chain() -> None:
    b = Budget(nodes="0", schedule="@hourly", duration="2h")
    assert all(is_active(b, utc(2026, 1, 1) + timedelta(minutes=m)) for m in range(0, 600, 7))
    touching = Budget(nodes="0", schedule="0 */2 * * *", duration="2h")
    assert is_active(touching, utc(2026, 1, 1, 2, 0)) and is_active(touching, utc(2026, 1, 1, 1, 59, 59))


def test_schedule_that_never_hits_is_always_active() -> None:
    b = Budget(nodes="0", schedule="0 0 30 2 *", duration="1h")
    assert is_active(b, utc(2026, 6, 1))
    assert pool_limit(pool([b.model_dump()]), utc(2026, 6, 1), 10, "Empty") == (0, [])


def test_duration_with_trailing_zero_seconds() -> None:
    b = Budget(nodes="0", schedule="@daily", duration="20m0s")
    assert is_active(b, utc(2026, 1, 1, 0, 19, 59)) and not is_active(b, utc(2026, 1, 1, 0, 20))


def test_time_zone_window_follows_new_york_across_dst() -> None:
    b = Budget(nodes="0", schedule="0 9 * * 1-5", duration="8h", time_zone="America/New_York")
    assert is_active(b, utc(2026, 11, 23, 14, 0))  # Monday 09:00 EST
    assert not is_active(b, utc(2026, 11, 23, 13, 59))
    assert is_active(b, utc(2026, 7, 6, 13, 0))  # Monday 09:00 EDT
    assert not is_active(b, utc(2026, 7, 6, 21, 0))  # 17:00 EDT: closed
    assert is_active(b, utc(2026, 11, 23, 21, 59)) and not is_active(b, utc(2026, 11, 23, 22, 0))


# --- docs/semantics.md §1.4 per pool and reason -----------------------------------------------------------------------


def test_most_restrictive_active_budget_wins() -> None:
    p = pool([{"nodes": "20%", "reasons": ["Empty", "Drifted"]}, {"nodes": "5"},
              {"nodes": "0", "schedule": "@daily", "duration": "10m", "reasons": ["Underutilized"]}])
    noon, night = utc(2026, 11, 23, 12), utc(2026, 11, 23, 0, 5)
    assert pool_limit(p, noon, 19, "Empty") == (4, [])
    assert pool_limit(p, noon, 19, "Drifted") == (4, [])
    assert pool_limit(p, noon, 19, "Underutilized") == (5, [])
    assert pool_limit(p, night, 19, "Underutilized") == (0, [])
    assert pool_limit(p, night, 19, "Empty") == (4, [])


def test_reasons_nil_applies_to_all_and_empty_list_to_none() -> None:
    assert pool_limit(pool([{"nodes": "1"}]), utc(2026, 1, 1), 10, "Drifted") == (1, [])
    assert pool_limit(pool([{"nodes": "1", "reasons": []}]), utc(2026, 1, 1), 10, "Drifted") == (None, [])


def test_no_budgets_means_no_limit_but_absent_budgets_default_to_ten_percent() -> None:
    assert pool_limit(pool([]), utc(2026, 1, 1), 30, "Empty") == (None, [])
    assert pool_limit(pool(None), utc(2026, 1, 1), 30, "Empty") == (3, [])


def test_inactive_budget_does_not_limit() -> None:
    p = pool([{"nodes": "0", "schedule": "0 9 * * *", "duration": "1h"}])
    assert pool_limit(p, utc(2026, 1, 1, 12), 10, "Empty") == (None, [])


@pytest.mark.parametrize(
    "bad",
    [
        {"nodes": "1000a%", "reasons": ["Empty"]},
        {"nodes": "0", "schedule": "* * * * 7", "duration": "1h", "reasons": ["Empty"]},
        {"nodes": "0", "schedule": "0 9 * * *", "reasons": ["Empty"]},
        {"nodes": "0", "schedule": "0 9 * * *", "duration": "1h", "timeZone": "Nowhere/City", "reasons": ["Empty"]},
    ],
)
def test_one_invalid_budget_blocks_every_reason(bad: dict[str, Any]) -> None:
    p = pool([{"nodes": "50%"}, bad])
    for reason in ("Empty", "Drifted", "Underutilized"):
        limit, errors = pool_limit(p, utc(2026, 1, 1), 10, reason)
        assert limit == 0
        assert errors and errors[0].startswith("spec.disruption.budgets[1]: ")


# --- docs/semantics.md §1.5 counting ----------------------------------------------------------------------------------


def test_counting_managed_initialized_nodes_and_disrupting_ones() -> None:
    nodes = [
        node("a"), node("b"),
        node("not-ready", ready="False"), node("no-ready-condition", ready=None),
        node("node-deleting", deleting=True),
        node("claim-deleting"), node("tainted", taints=[{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]),
        node("uninitialized", initialized=False),
        node("terminating-instance"),
        node("unmanaged", pool_name=None),
        node("other", pool_name="batch"),
    ]
    claims = [
        claim("claim-deleting", deleting=True),
        claim("terminating-instance", conditions=[{"type": "InstanceTerminating", "status": "True"}]),
        claim("b", link="providerID"),
    ]
    counts = count_nodes(nodes, claims)
    assert counts["default"] == (7, 5)
    assert counts["batch"] == (1, 0)
    assert "None" not in counts
    # the Unhealthy reason's count: NotReady (or no Ready condition) alone is not disrupting
    sick_free = count_nodes(nodes, claims, not_ready_disrupts=False)
    assert sick_free["default"] == (7, 3) and sick_free["batch"] == (1, 0)
    assert count_both(nodes, claims) == (counts, sick_free)  # one walk gives both


def test_claim_initialized_condition_counts_when_the_label_is_missing() -> None:
    counts = count_nodes([node("a", initialized=False)],
                         [claim("a", conditions=[{"type": "Initialized", "status": "True"}])])
    assert counts["default"] == (1, 0)


def test_rows_follow_the_design_formula() -> None:
    p = pool([{"nodes": "50", "reasons": ["Empty"]}, {"nodes": "1", "reasons": ["Drifted"]}])
    nodes = [node(f"n{i}") for i in range(17)] + [node("x", ready="False"), node("y", ready="False")]
    rows = compute_budget_rows([p], nodes, [], utc(2026, 1, 1))
    by_reason = {r.reason: r for r in rows}
    assert [r.reason for r in rows] == ["Empty", "Drifted", "Underutilized"]
    assert by_reason["Empty"].model_dump() == {"nodePool": "default", "reason": "Empty", "limit": 50, "total": 19,
                                               "disrupting": 2, "allowed": 17, "errors": []}
    assert (by_reason["Drifted"].limit, by_reason["Drifted"].allowed) == (1, 0)  # never negative
    assert (by_reason["Underutilized"].limit, by_reason["Underutilized"].allowed) == (None, 17)
    assert allowed(rows, "default", "Empty") == 17
    assert allowed(rows, "missing", "Empty") == 0


def test_rows_for_a_pool_without_nodes_and_with_dict_input() -> None:
    rows = compute_budget_rows([pool(None, name="empty-pool").to_dict()], [], [], utc(2026, 1, 1))
    assert {(r.total, r.limit, r.allowed) for r in rows} == {(0, 0, 0)}
    assert all(isinstance(r, BudgetRow) for r in rows)


def test_seed_example_allows_four() -> None:
    snap = load_snapshot(EXAMPLES / "seed-budgets.yaml")
    rows = compute_budget_rows(snap.node_pools, snap.nodes, snap.node_claims, utc(2026, 11, 23, 12))
    assert allowed(rows, "default", "Empty") == 4
    assert allowed(rows, "default", "Drifted") == 4
    assert allowed(rows, "default", "Underutilized") == 5
    assert {r.total for r in rows} == {19}
    night = compute_budget_rows(snap.node_pools, snap.nodes, snap.node_claims, utc(2026, 11, 23, 0, 5))
    assert allowed(night, "default", "Underutilized") == 0


# --- next_transition --------------------------------------------------------------------------------------


def test_next_transition_opens_and_closes() -> None:
    b = Budget(nodes="0", schedule="0 9 * * 1-5", duration="8h", time_zone="America/New_York")
    closing = next_transition(b, utc(2026, 11, 23, 15))
    assert closing is not None and (closing.at, closing.opens) == (utc(2026, 11, 23, 22), False)
    opening = next_transition(b, utc(2026, 11, 23, 22))
    assert opening is not None and (opening.at, opening.opens) == (utc(2026, 11, 24, 14), True)


def test_next_transition_of_chained_windows() -> None:
    b = Budget(nodes="0", schedule="0 9,10 * * *", duration="90m")
    t = next_transition(b, utc(2026, 1, 1, 9, 30))
    assert t is not None and (t.at, t.opens) == (utc(2026, 1, 1, 11, 30), False)


def test_next_transition_is_none_when_nothing_changes() -> None:
    assert next_transition(Budget(nodes="1"), utc(2026, 1, 1)) is None
    assert next_transition(Budget(nodes="0", schedule="@hourly", duration="2h"), utc(2026, 1, 1)) is None
    assert next_transition(Budget(nodes="0", schedule="0 0 30 2 *", duration="1h"), utc(2026, 1, 1)) is None


def test_the_disrupted_taint_is_found_by_its_key_whatever_its_effect_and_only_in_objects() -> None:
    from api.labels import DISRUPTED_TAINT, disrupted_taint_in

    assert disrupted_taint_in([{"key": "other", "effect": "NoSchedule"}, dict(DISRUPTED_TAINT)])
    assert disrupted_taint_in([{"key": DISRUPTED_TAINT["key"], "effect": "NoExecute"}])
    assert not disrupted_taint_in([{"key": "other"}, "karpenter.sh/disrupted", None])
    assert not disrupted_taint_in(None) and not disrupted_taint_in([])
