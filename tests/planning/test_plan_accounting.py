"""`nodeflow plan` accounts for every node exactly once: disrupted, blocked, excluded, or kept and why.

The walk plans every example usable with `plan -f` and generated clusters, once and until stable, and fails when a
node of the snapshot (or a replacement the dry run added) has no row or two, when a row disagrees with `commands`,
`blocked` or `excluded`, or when a kept node has no reason but the catch-all. Then one test per kept reason.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from planning_factory import AT, node_and_claim, nodepool, pod, snapshot

from api import labels as L
from api.snapshot import Snapshot, load_snapshot, parse_snapshot
from planning.cluster import Cluster
from planning.disruption.candidates import NodeRefusal, NotCandidate
from planning.disruption.exclusions import excluded_nodes
from planning.disruption.method_names import MethodName
from planning.planner.accounting import (
    BUDGET_EXHAUSTED,
    KeptReason,
    NodeAccount,
    Outcome,
    PassFacts,
    _rejected_row,
    hold_for_pause,
)
from planning.planner.plan import ExplainedPlan, explain_plan
from simulator.generate import generate_cluster

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _example_snapshots() -> list[tuple[str, Snapshot, datetime]]:
    """Every examples/*.yaml `plan -f` takes (NodePools or Nodes in it), at the --at its header names."""
    out = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        try:
            snap = load_snapshot(str(path))
        except Exception:  # not a snapshot (a kustomization, a fleet rollout): plan -f refuses it too
            continue
        if not snap.node_pools and not snap.nodes:
            continue
        found = re.search(r"--at (\S+)", path.read_text())
        at = datetime.fromisoformat(found.group(1).replace("Z", "+00:00")) if found else AT
        out.append((path.name, snap, at))
    return out


def _generated() -> list[tuple[str, Snapshot, datetime]]:
    shapes = [dict(seed=0), dict(seed=1, empty_fraction=0.3, drift_fraction=0.2),
              dict(seed=2, do_not_disrupt_fraction=0.2, blocking_pdb_fraction=0.3, spot_fraction=0.8)]
    return [(f"generated-{s['seed']}", Snapshot.from_objects(generate_cluster(30, 6, now=AT, **s)), AT)
            for s in shapes]


def _demo() -> list[tuple[str, Snapshot, datetime]]:
    """The `make demo` cluster the issue was found on (30 nodes, five pools, one with consolidateAfter: Never)."""
    from devstack.demo_scenario import demo_cluster

    return [("demo", Snapshot.from_objects(demo_cluster(now=AT)), AT)]


SNAPSHOTS = _example_snapshots() + _generated() + _demo()


def check_accounting(snap: Snapshot, ex: ExplainedPlan, until_stable: bool) -> None:
    """Each node exactly once, and each row consistent with the plan's other answers."""
    rows = ex.nodes
    names = Counter(r.node for r in rows)
    twice = sorted(n for n, k in names.items() if k > 1)
    assert not twice, f"accounted twice: {twice}"
    snapshot_nodes = {(n.get("metadata") or {}).get("name") for n in snap.nodes}
    missing = sorted(snapshot_nodes - set(names))
    assert not missing, f"unaccounted: {missing}"
    by = {r.node: r for r in rows}
    result = ex.result
    for cmd in result.commands:
        for node in cmd.nodes:
            assert by[node].outcome is Outcome.DISRUPTED, (node, by[node])
    for r in result.repairs:
        assert by[r.node].outcome is Outcome.DISRUPTED
    excluded = {e.node for e in excluded_nodes(Cluster.from_parts(snap, ()).nodes,
                                               Cluster.from_parts(snap, ()).pools)}
    for b in result.blocked:
        assert by[b.node].outcome in (Outcome.BLOCKED, Outcome.EXCLUDED), (b, by[b.node])
        if by[b.node].outcome is Outcome.BLOCKED and by[b.node].reason != BUDGET_EXHAUSTED:
            assert by[b.node].detail == b.reason
    disrupted = {n for c in result.commands for n in c.nodes} | {r.node for r in result.repairs} | {
        r.node for p in result.static_node_pools for r in p.remove}
    for row in rows:
        if row.outcome is Outcome.DISRUPTED:
            assert row.node in disrupted, row
        if row.outcome is Outcome.EXCLUDED:
            assert row.node in excluded, row
        if row.outcome is Outcome.KEPT:
            assert row.reason in set(KeptReason) and row.reason != KeptReason.NOTHING_TO_DO, row
            assert row.detail, row
        if not until_stable and row.outcome is Outcome.BLOCKED:
            assert row.node in {b.node for b in result.blocked}, row
    if not until_stable:
        assert set(names) == snapshot_nodes  # no node the snapshot lacks


@pytest.mark.parametrize("until_stable", [False, True], ids=["one-pass", "until-stable"])
@pytest.mark.parametrize(("name", "snap", "at"), SNAPSHOTS, ids=[s[0] for s in SNAPSHOTS])
def test_every_node_is_accounted_for_exactly_once(name: str, snap: Snapshot, at: datetime,
                                                  until_stable: bool) -> None:
    ex = explain_plan(snap, at, until_stable=until_stable)
    check_accounting(snap, ex, until_stable)


def test_the_walk_covers_the_examples_and_generated_clusters() -> None:
    names = {s[0] for s in SNAPSHOTS}
    assert {"plan-do-not-disrupt.yaml", "plan-static.yaml", "plan-repair.yaml", "generated-2", "demo"} <= names
    assert len(names) >= 20


def _row(ex: ExplainedPlan, node: str) -> NodeAccount:
    return next(r for r in ex.nodes if r.node == node)


def _kept(snap: Snapshot, node: str, at: datetime = AT, **kwargs: Any) -> NodeAccount:
    row = _row(explain_plan(snap, at, **kwargs), node)
    assert row.outcome is Outcome.KEPT, row
    return row


def test_do_not_disrupt_example_mentions_node_a() -> None:
    """The issue's example: node-a appeared nowhere; Emptiness's command wins the pass, consolidation comes next."""
    ex = explain_plan(load_snapshot(str(EXAMPLES / "plan-do-not-disrupt.yaml")), AT)
    assert _row(ex, "node-a").reason == KeptReason.PASS_DECIDED
    assert "Emptiness" in _row(ex, "node-a").detail
    assert _row(ex, "node-b").outcome is Outcome.BLOCKED
    assert _row(ex, "node-c").outcome is Outcome.DISRUPTED


def test_demo_names_its_never_consolidated_pool() -> None:
    ex = explain_plan(next(s for n, s, _ in SNAPSHOTS if n == "demo"), AT)
    spot = [r for r in ex.nodes if r.node_pool == "spot"]
    assert spot and {r.reason for r in spot} == {KeptReason.CONSOLIDATION_DISABLED}
    assert "NodePool spot has consolidateAfter: Never" in spot[0].detail


def test_consolidate_after_never_is_consolidation_disabled() -> None:
    snap = snapshot(nodepool(consolidate_after="Never"), node_and_claim("a"), pod("p-1", "a"))
    row = _kept(snap, "a")
    assert row.reason == KeptReason.CONSOLIDATION_DISABLED and "consolidateAfter: Never" in row.detail


def test_inside_consolidate_after_is_kept_until_it_ends() -> None:
    snap = snapshot(nodepool(consolidate_after="1h"),
                    node_and_claim("a", last_pod_event=AT - timedelta(minutes=10)), pod("p-1", "a"))
    row = _kept(snap, "a")
    assert row.reason == KeptReason.CONSOLIDATE_AFTER
    assert row.until == AT + timedelta(minutes=50)
    assert row.to_public()["until"] == "2026-11-22T20:50:00Z"


def test_when_empty_pool_keeps_a_node_with_pods() -> None:
    snap = snapshot(nodepool(policy="WhenEmpty"), node_and_claim("a"), pod("p-1", "a"))
    assert _kept(snap, "a").reason == KeptReason.WHEN_EMPTY_NOT_EMPTY


def test_no_cheaper_placement_carries_the_unconsolidatable_message() -> None:
    only = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
            {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large"]}]
    snap = snapshot(nodepool(requirements=only), node_and_claim("a", "m5.large"), pod("p-1", "a"))
    row = _kept(snap, "a")
    assert row.reason == KeptReason.NO_CHEAPER_PLACEMENT and "cheaper" in row.detail


def test_a_savings_threshold_keeps_both_nodes() -> None:
    ex = explain_plan(load_snapshot(str(EXAMPLES / "plan-savings-threshold.yaml")), AT)
    assert {_row(ex, n).reason for n in ("node-a", "node-b")} == {KeptReason.BELOW_SAVINGS_THRESHOLD}
    assert "below threshold" in _row(ex, "node-a").detail


def test_single_node_consolidation_takes_one_command_a_pass() -> None:
    """Together the two nodes' pods need the type they run (multi-node refuses it); alone each fits on the other:
    single-node deletes one, and the other waits for a later pass."""
    only = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
            {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.2xlarge", "m5.4xlarge"]}]
    snap = snapshot(nodepool(requirements=only),
                    node_and_claim("a", "m5.4xlarge"), pod("pa-1", "a", cpu="5", memory="1Gi"),
                    node_and_claim("b", "m5.4xlarge"), pod("pb-1", "b", cpu="5", memory="1Gi"))
    ex = explain_plan(snap, AT)
    assert [c.method for c in ex.result.commands] == ["SingleNodeConsolidation"]
    other = ({"a", "b"} - set(ex.result.commands[0].nodes)).pop()
    row = _row(ex, other)
    assert (row.outcome, row.reason) == (Outcome.KEPT, KeptReason.NOT_REACHED)
    assert "SingleNodeConsolidation started its command(s) on other nodes first" in row.detail


def test_calendar_hold_keeps_a_consolidation_candidate_until_it_ends() -> None:
    """Consolidation's candidates in a held pool are dropped quietly by the pass (only deciding methods list
    them as blocked): the row says which hold, and until when."""
    text = (EXAMPLES / "plan-calendar.yaml").read_text().replace("consolidateAfter: Never", "consolidateAfter: 0s")
    ex = explain_plan(parse_snapshot(text, "calendar"), AT)
    row = _row(ex, "node-b")
    assert (row.outcome, row.reason) == (Outcome.KEPT, KeptReason.CALENDAR_HOLD)
    assert "change-freeze" in row.detail and row.to_public()["until"] == "2026-11-23T23:00:00Z"


def test_a_node_without_a_zone_label_is_incomplete() -> None:
    objs = node_and_claim("a")
    del objs[0]["metadata"]["labels"][L.ZONE_LABEL]
    row = _kept(snapshot(nodepool(), objs, pod("p-1", "a")), "a")
    assert row.reason == KeptReason.INCOMPLETE_NODE and L.ZONE_LABEL in row.detail


def test_static_pool_keeps_its_replicas() -> None:
    ex = explain_plan(load_snapshot(str(EXAMPLES / "plan-static.yaml")), AT)
    assert _row(ex, "web-a").reason == KeptReason.STATIC_NODE_POOL
    assert _row(ex, "batch-b").reason == "StaticScaleDown"
    assert _row(ex, "web-b").reason == MethodName.STATIC_DRIFT


def test_in_flight_node_is_kept_in_flight() -> None:
    snap = snapshot(nodepool(), node_and_claim("a"), pod("p-1", "a"), node_and_claim("b"), pod("p-2", "b"))
    row = _kept(snap, "a", exclude_nodes={"a"})
    assert row.reason == KeptReason.IN_FLIGHT
    tainted = snapshot(nodepool(), node_and_claim("a", taints=[dict(L.DISRUPTED_TAINT)]))
    assert _kept(tainted, "a").reason == KeptReason.IN_FLIGHT


def test_an_unknown_candidate_check_is_kept_with_its_message_and_refusal() -> None:
    """A check added to planning/disruption/candidates.py that refuses without blocking shows up as NotACandidate,
    generically."""
    cluster = Cluster.from_snapshot(snapshot(nodepool(), node_and_claim("a")))
    node = cluster.by_name["a"]
    facts = PassFacts(cluster=cluster, at=AT, sets={}, scratch=None, methods=[], winner=None,  # type: ignore[arg-type]
                      blocked={}, events=[], budgets=[], exclude=frozenset())
    row = _rejected_row(NotCandidate(node, "node is nominated for a pending pod", blocking=False,
                                     refusal=NodeRefusal.CANCEL_HOLD), facts)
    assert (row.outcome, row.reason) == (Outcome.KEPT, KeptReason.NOT_A_CANDIDATE)
    assert row.detail == "node is nominated for a pending pod (CancelHold)"


def test_budget_blocked_node_names_the_command_that_spent_the_budget() -> None:
    snap = snapshot(nodepool(budgets=[{"nodes": "1"}]), node_and_claim("a"), node_and_claim("b"),
                    node_and_claim("c"), pod("p-1", "c"))
    ex = explain_plan(snap, AT)
    assert len(ex.result.commands) == 1 and ex.result.commands[0].method == "Emptiness"
    taken = ex.result.commands[0].nodes[0]
    other = ({"a", "b"} - {taken}).pop()
    row = _row(ex, other)
    assert (row.outcome, row.reason) == (Outcome.BLOCKED, BUDGET_EXHAUSTED)
    assert f"spent by command 1 (Emptiness: {taken})" in row.detail
    # the row is recognised by the typed reason the block carries, not by the text of its message
    assert next(b for b in ex.result.blocked if b.node == other).budget_reason == "Empty"
    assert "budgetReason" not in json.dumps(ex.result.to_public())
    empty = next(u for u in ex.budget_use if u["reason"] == "Empty")
    assert empty["allowed"] == 1 and empty["spentByCommands"] == 1
    assert empty["commands"] == [{"command": "command 1", "method": "Emptiness", "nodes": [taken]}]


def test_budget_spent_by_a_disruption_in_flight_names_its_node() -> None:
    tainted = [dict(L.DISRUPTED_TAINT)]
    snap = snapshot(nodepool(budgets=[{"nodes": "1"}]), node_and_claim("a"), node_and_claim("gone", taints=tainted))
    ex = explain_plan(snap, AT)
    row = _row(ex, "a")
    assert (row.outcome, row.reason) == (Outcome.BLOCKED, BUDGET_EXHAUSTED)
    assert "in flight or NotReady: gone" in row.detail
    assert all(u["disrupting"] == ["gone"] for u in ex.budget_use)


def test_global_pause_holds_every_disrupted_node() -> None:
    ex = explain_plan(load_snapshot(str(EXAMPLES / "plan-empty.yaml")), AT)
    held = hold_for_pause(ex.nodes, "nodeflow resume")
    before = {r.node: r for r in ex.nodes}
    for r in held:
        if before[r.node].outcome is Outcome.DISRUPTED:
            assert (r.outcome, r.reason) == (Outcome.KEPT, KeptReason.PAUSED_GLOBALLY)
            assert "nodeflow resume" in r.detail and before[r.node].detail in r.detail
        else:
            assert r == before[r.node]
    assert any(r.reason == KeptReason.PAUSED_GLOBALLY for r in held)


def test_until_stable_names_the_pass_of_each_command() -> None:
    snap = snapshot(nodepool(budgets=[{"nodes": "1"}]), node_and_claim("a"), node_and_claim("b"))
    ex = explain_plan(snap, AT, until_stable=True)
    details = sorted(r.detail for r in ex.nodes)
    assert details == ["pass 1, command 1: Emptiness deletes it (Empty)",
                       "pass 2, command 2: Emptiness deletes it (Empty)"]


def test_accounting_costs_little_on_a_generated_cluster() -> None:
    """The accounting re-asks the filters once per node: a 300-node plan stays well under a second or two more."""
    snap = Snapshot.from_objects(generate_cluster(300, 8, seed=5, now=AT))
    start = datetime.now(UTC)
    ex = explain_plan(snap, AT)
    assert (datetime.now(UTC) - start).total_seconds() < 20
    assert len(ex.nodes) == 300


def test_nominated_and_pending_pod_nodes_are_accounted_as_blocked() -> None:
    """The candidate check and emptiness rule added for nomination (planning/disruption/nomination.py) reach the rows
    without the accounting knowing them: a nominated node, and an empty node the only home of a pending pod, are Blocked
    with the planner's message, and the walk's invariants hold."""
    nominated = {L.NOMINATED_UNTIL_ANNOTATION: (AT + timedelta(seconds=15)).strftime("%Y-%m-%dT%H:%M:%SZ")}
    for snap, name in ((snapshot(nodepool(), node_and_claim("nominated", claim_annotations=nominated)), "nominated"),
                       (snapshot(nodepool(), node_and_claim("room"), pod("waiting-1", None)), "room")):
        ex = explain_plan(snap, AT)
        check_accounting(snap, ex, until_stable=False)
        blocked = {b.node: b.reason for b in ex.result.blocked}
        assert name in blocked, ex.result
        row = _row(ex, name)
        assert (row.outcome, row.detail) == (Outcome.BLOCKED, blocked[name])
