"""No drift starvation (kubernetes-sigs/karpenter#3080; back-off RFC kubernetes-sigs/karpenter#3128, PR
kubernetes-sigs/karpenter#3178): drift gives each pool a turn (planning/disruption/drift.py fair_order), and a pool
whose drift replacements failed is held for 1 min doubling to 10 min with deterministic jitter
(planning/policies/drift_backoff.py), read from its NodePool's annotation. Pure, times injected."""

from __future__ import annotations

from datetime import timedelta

from planning_factory import AT, OLD, node_and_claim, nodepool, snapshot

from api import labels as L
from api.rollout_state import RolloutNote, RolloutNotePhase
from api.timestamps import format_seconds
from planning.planner.plan import plan
from planning.policies.drift_backoff import (
    CEILING,
    DriftBackoff,
    after_failure,
    backoff_patch,
    delay,
    drift_held,
    parse_backoff,
)

STALE = {L.TEMPLATE_HASH_ANNOTATION: "stale-template"}


def drifted(pool: str, name: str, age_hours: int) -> list[dict]:
    return node_and_claim(name, pool=pool, created=AT - timedelta(hours=age_hours), claim_annotations=STALE)


def two_pools(a_annotations: dict[str, str] | None = None) -> list:
    """Pool `a` with three old drifted nodes, pool `b` with one younger: global oldest-first would take all of a's."""
    return [nodepool("a", budgets=[{"nodes": "5"}], consolidate_after="Never", annotations=a_annotations),
            nodepool("b", budgets=[{"nodes": "5"}], consolidate_after="Never"),
            drifted("a", "a-0", 30), drifted("a", "a-1", 29), drifted("a", "a-2", 28), drifted("b", "b-0", 3)]


def test_v115_drift_gives_each_pool_a_turn() -> None:
    objs = two_pools()
    first = plan(snapshot(*objs), AT)
    assert [c.nodes for c in first.commands] == [["a-0"]]
    # a-0 in flight: pool a has had its turn, so b's only (younger) node goes before a's second
    second = plan(snapshot(*objs), AT, exclude_nodes=frozenset({"a-0"}))
    assert [c.nodes for c in second.commands] == [["b-0"]]
    third = plan(snapshot(*objs), AT, exclude_nodes=frozenset({"a-0", "b-0"}))
    assert [c.nodes for c in third.commands] == [["a-1"]]


def test_v115_backoff_doubles_from_1_to_10_minutes_with_deterministic_jitter() -> None:
    delays = [delay("a", n) for n in range(1, 7)]
    bases = [60, 120, 240, 480, 600, 600]
    assert all(0.9 * b <= d.total_seconds() <= b for d, b in zip(delays, bases, strict=True))
    assert delays == [delay("a", n) for n in range(1, 7)]  # same pool and count: same delay, in plan and worker
    assert delay("a", 1) != delay("b", 1) and max(delays) <= CEILING


def test_v115_backoff_counts_consecutive_failures_once_per_hold() -> None:
    one = after_failure("a", None, AT)
    assert one is not None and one.failures == 1 and one.until == AT + delay("a", 1)
    assert after_failure("a", one, AT + timedelta(seconds=10)) is None  # still held: the same failure
    two = after_failure("a", one, one.until)
    assert two is not None and two.failures == 2 and two.until == one.until + delay("a", 2)
    assert parse_backoff(two.value()) == two
    assert backoff_patch(None) == {"metadata": {"annotations": {L.DRIFT_BACKOFF_ANNOTATION: None}}}
    assert parse_backoff("not json") is None and parse_backoff('{"failures": 1}') is None


def test_v115_a_backed_off_pool_does_not_hold_back_another_pools_drift() -> None:
    held = DriftBackoff(2, AT + timedelta(minutes=2))
    result = plan(snapshot(*two_pools({L.DRIFT_BACKOFF_ANNOTATION: held.value()})), AT)
    assert [c.nodes for c in result.commands] == [["b-0"]]
    why = f"drift of nodepool a backs off until {format_seconds(held.until)} after 2 failed replacement(s)"
    assert {b.node: b.reason for b in result.blocked} == {"a-0": why, "a-1": why, "a-2": why}
    assert ("NodePool", "a", "DisruptionBlocked", why) in [(e.kind, e.name, e.reason, e.message)
                                                           for e in result.events]
    # once the hold is over, pool a's oldest goes first again
    later = plan(snapshot(*two_pools({L.DRIFT_BACKOFF_ANNOTATION: held.value()})), held.until)
    assert [c.nodes for c in later.commands] == [["a-0"]]
    assert drift_held({L.DRIFT_BACKOFF_ANNOTATION: held.value()}, held.until) is None


def test_v115_backoff_holds_static_drift_too() -> None:
    held = DriftBackoff(1, AT + timedelta(minutes=1))
    pool = nodepool("s", budgets=[{"nodes": "1"}], annotations={L.DRIFT_BACKOFF_ANNOTATION: held.value()})
    pool["spec"]["replicas"] = 1
    result = plan(snapshot(pool, node_and_claim("s-0", pool="s", created=OLD, claim_annotations=STALE)), AT)
    assert result.commands == [] and "backs off until" in result.blocked[0].reason


def test_v115_a_pool_under_a_drift_rollout_answers_failures_with_the_rollout_not_the_backoff() -> None:
    """A resumed rollout's wave must run: the rollout halts at maxFailedReplacements and `nodeflow rollout resume`
    is the operator's answer, so the back-off (recorded by the same failure) does not hold the pool again."""
    held = DriftBackoff(1, AT + timedelta(minutes=1))
    running = RolloutNote(generation="g", wave=1, waves=2, phase=RolloutNotePhase.RUNNING).to_annotation()
    notes = {L.DRIFT_BACKOFF_ANNOTATION: held.value(), L.ROLLOUT_ANNOTATION: running}
    result = plan(snapshot(*two_pools(notes)), AT)
    assert [c.nodes for c in result.commands] == [["a-0"]]
    assert not [b for b in result.blocked if "backs off" in b.reason]
