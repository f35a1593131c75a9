"""Karpenter v1.10-v1.14 consolidation semantics (docs/semantics.md §3.3, §5.3, §5.10, §12).

The Balanced policy and its score (kubernetes-sigs/karpenter#2962, v1.14.0, balanced.go), v1.14's meaning of
"empty" (IsEmpty: no reschedulable pod with a positive eviction cost) and the WhenEmpty message.
"""

from __future__ import annotations

import math

import pytest
from planning_factory import AT, node_and_claim, nodepool, pod, snapshot

from api import labels as L
from api.nodepool import NodePool
from api.validation import validate_nodepool
from planning.cluster import Cluster
from planning.disruption.balanced import PoolTotals, Score, approve, can_pass, pool_totals, score_move
from planning.disruption.candidates import GRACEFUL, build_candidates
from planning.planner.plan import plan

# A pod priority that makes a pod's eviction cost 6 (1 + 5 * 2^25 / 2^25): costly to disrupt.
COSTLY = 5 * 2**25
# A priority that makes the eviction cost 0 (1 - 2^25 / 2^25): the pod does not count against emptiness.
FREE = -(2**25)


def _methods(result):
    return [(c.method, sorted(c.nodes)) for c in result.commands]


# ---- the API ---------------------------------------------------------------------------------------------

def test_balanced_is_an_accepted_policy() -> None:
    obj = nodepool(policy="Balanced")
    assert NodePool.model_validate(obj).consolidation_policy == "Balanced"
    assert validate_nodepool(obj) == []


# ---- the score -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("savings", "disruption", "value", "approved"), [
    (0.5, 2.0, 1.0, True),      # 25% of the cost for 25% of the disruption
    (0.25, 2.0, 0.5, True),     # exactly 1/k counts
    (0.1, 2.0, 0.2, False),
    (0.0, 2.0, 0.0, False),     # no savings: 0
    (-1.0, 0.0, 0.0, False),
])
def test_score_move(savings: float, disruption: float, value: float, approved: bool) -> None:
    s = score_move(savings, disruption, PoolTotals(cost=2.0, disruption=8.0))
    assert s.value == pytest.approx(value) and s.approved is approved and s.threshold == 0.5


def test_score_guards() -> None:
    assert Score(savings_fraction=0.1, disruption_fraction=0.0).value == math.inf
    assert not score_move(1.0, 1.0, PoolTotals(cost=0.0, disruption=1.0)).approved  # nothing to normalise against
    assert not score_move(1.0, 1.0, None).approved


def _cands(*objs):
    cluster = Cluster.from_snapshot(snapshot(*objs))
    return cluster, {c.name: c for c in build_candidates(cluster, AT, set(), GRACEFUL).candidates}


def test_pool_totals_count_every_node_of_the_pool() -> None:
    cluster, cands = _cands(nodepool(policy="Balanced"), node_and_claim("a", "m5.xlarge"),
                            node_and_claim("x", "m5.2xlarge"), pod("w-1", "a"), pod("w-2", "x", priority=COSTLY),
                            pod("ds-1", "x", owner="DaemonSet"))
    totals = pool_totals(cluster, [cands["a"]])  # only a is a candidate; x still counts
    assert totals["default"].cost == pytest.approx(cands["a"].price + cands["x"].price)
    assert totals["default"].disruption == pytest.approx(2.0 + 7.0)  # DaemonSet pods cost nothing


def test_cross_pool_move_splits_savings_by_source_price() -> None:
    cluster, cands = _cands(nodepool("bal", policy="Balanced"), nodepool("other"),
                            node_and_claim("a", "m5.xlarge", pool="bal"),
                            node_and_claim("b", "m5.xlarge", pool="other"),
                            pod("w-1", "a"), pod("w-2", "b"))
    both = [cands["a"], cands["b"]]
    totals = pool_totals(cluster, both)
    ok, scores = approve(both, cands["a"].price * 2, totals)
    assert ok and set(scores) == {"bal"}  # only the Balanced pool is scored
    # half the savings belongs to "bal": its fraction is price_a / price_a = 1, over disruption 2 / 2
    assert scores["bal"].savings_fraction == pytest.approx(1.0)


def test_can_pass_skips_a_node_whose_delete_cannot_score_enough() -> None:
    cluster, cands = _cands(nodepool(policy="Balanced"), node_and_claim("a", "m5.xlarge"),
                            node_and_claim("x", "m5.2xlarge"), pod("w-1", "a", priority=COSTLY), pod("w-2", "x"))
    totals = pool_totals(cluster, cands.values())
    # a: a third of the cost for 7/9 of the disruption (score 0.43); x: two thirds for 2/9 (score 3)
    assert not can_pass(cands["a"], totals) and can_pass(cands["x"], totals)


# ---- in a pass -----------------------------------------------------------------------------------------

# Only m5.xlarge (4 cpu) and m5.2xlarge (8 cpu): x's 6-cpu pod keeps x where it is, and no cheaper type replaces it.
M5 = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
      {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.xlarge", "m5.2xlarge"]}]


def _pool_of_a_and_x(policy: str, a_priority: int | None, x_small_pods: int):
    return snapshot(nodepool(policy=policy, requirements=M5), node_and_claim("a", "m5.xlarge"),
                    node_and_claim("x", "m5.2xlarge"), pod("w-1", "a", priority=a_priority),
                    pod("big-1", "x", cpu="6", memory="1Gi"),
                    *[pod(f"s-{i}", "x", cpu="250m", memory="128Mi") for i in range(x_small_pods)])


def test_balanced_refuses_a_delete_that_disrupts_more_than_it_saves() -> None:
    # deleting a: a third of the cost for 7/9 of the pool's disruption, score 0.43
    assert _methods(plan(_pool_of_a_and_x("WhenEmptyOrUnderutilized", COSTLY, 0), AT)) == [
        ("SingleNodeConsolidation", ["a"])]
    assert plan(_pool_of_a_and_x("Balanced", COSTLY, 0), AT).commands == []


def test_balanced_approves_a_delete_worth_its_disruption() -> None:
    # deleting a: a third of the cost for 2/(2 + 5) of the disruption, score 1.17
    assert _methods(plan(_pool_of_a_and_x("Balanced", None, 3), AT)) == [("SingleNodeConsolidation", ["a"])]


def test_balanced_pools_still_delete_empty_nodes() -> None:
    snap = snapshot(nodepool(policy="Balanced"), node_and_claim("a"), node_and_claim("x"), pod("w-1", "x"))
    assert _methods(plan(snap, AT)) == [("Emptiness", ["a"])]


# ---- v1.14 emptiness -----------------------------------------------------------------------------------

def test_a_node_whose_pods_cost_nothing_to_evict_is_empty() -> None:
    snap = snapshot(nodepool(), node_and_claim("a"), node_and_claim("x", "m5.2xlarge"),
                    pod("cheap-1", "a", priority=FREE), pod("w-1", "x"))
    result = plan(snap, AT)
    assert _methods(result) == [("Emptiness", ["a"])]  # v1.9.1: a single-node delete, its pod moved to x


def test_when_empty_pool_with_busy_node_gets_the_v114_message() -> None:
    result = plan(snapshot(nodepool(policy="WhenEmpty"), node_and_claim("a"), pod("x-1", "a")), AT)
    assert result.commands == []
    assert any(e.reason == "Unconsolidatable"
               and e.message == 'NodePool "default" has consolidation policy WhenEmpty, but node is not empty'
               for e in result.events)


# ---- v1.15: the scores feed Karpenter's approval metrics (kubernetes-sigs/karpenter#3322) ----------------------

def _replace_of_a(policy: str, priority: int | None):
    """a (m5.2xlarge, one 3-cpu pod) could be replaced by an m5.xlarge; x keeps its 6-cpu pod."""
    return snapshot(nodepool(policy=policy, requirements=M5), node_and_claim("a", "m5.2xlarge"),
                    node_and_claim("x", "m5.2xlarge"), pod("w-1", "a", cpu="3", priority=priority),
                    pod("big-1", "x", cpu="6", memory="1Gi"))


def test_v115_a_rejected_replace_is_kept_as_a_scored_move() -> None:
    """Replacing a saves a quarter of the pool's cost for 7/9 of its disruption: 0.32, under 1/2 (yet a delete of it
    could pass, so CanPassThreshold lets it through to be scored)."""
    result = plan(_replace_of_a("Balanced", COSTLY), AT)
    assert result.commands == []
    (move,) = result.scored_moves
    assert (move.node_pool, move.policy, move.approved) == ("default", "Balanced", False)
    assert move.score == pytest.approx(0.25 / (7 / 9))
    assert "scored_moves" not in result.to_public()  # internal: metrics only


def test_v115_an_approved_move_is_kept_and_other_policies_are_not_scored() -> None:
    result = plan(_replace_of_a("Balanced", None), AT)
    assert [c.method for c in result.commands] == ["SingleNodeConsolidation"]
    assert [m.approved for m in result.scored_moves] == [True]
    plain = plan(_replace_of_a("WhenEmptyOrUnderutilized", COSTLY), AT)
    assert [c.decision for c in plain.commands] == ["replace"] and plain.scored_moves == []


# ---- v1.15: ConsolidationApproved, Karpenter's Event of a Balanced approval (its balanced.go) -------------------

def _approvals(result) -> list[tuple[str, str, str]]:
    return [(e.kind, e.name, e.message) for e in result.events if e.reason == "ConsolidationApproved"]


def test_v115_a_single_node_approval_is_recorded_on_the_node_and_its_claim() -> None:
    """Deleting a: a third of the pool's cost for 2/7 of its disruption, score 1.17."""
    result = plan(_pool_of_a_and_x("Balanced", None, 3), AT)
    (move,) = result.scored_moves
    text = (f"score {move.score:.2f} >= threshold 0.50 (savings 33.3%, disruption 28.6%)")
    assert text.startswith("score 1.17")
    assert _approvals(result) == [("Node", "a", text), ("NodeClaim", "a", text)]


def test_v115_a_rejection_and_other_policies_record_no_approval() -> None:
    assert _approvals(plan(_replace_of_a("Balanced", COSTLY), AT)) == []
    assert _approvals(plan(_pool_of_a_and_x("WhenEmptyOrUnderutilized", None, 3), AT)) == []


def test_v115_a_multi_node_approval_is_recorded_once_on_the_nodepool() -> None:
    snap = snapshot(nodepool(policy="Balanced", requirements=M5), node_and_claim("a", "m5.xlarge"),
                    node_and_claim("b", "m5.xlarge"), node_and_claim("x", "m5.2xlarge"),
                    pod("w-1", "a"), pod("w-2", "b"), pod("w-3", "x"))
    result = plan(snap, AT)
    assert _methods(result) == [("MultiNodeConsolidation", ["a", "x"])]  # the dearest first; b takes both pods
    # saves (0.192 + 0.384) / 0.768 of the cost for 4/6 of the disruption: 1.125, approved
    approved = _approvals(result)
    assert [(kind, name) for kind, name, _ in approved] == [("NodePool", "default")]
    assert approved[0][2] == "score 1.12 >= threshold 0.50 (savings 75.0%, disruption 66.7%)"
    assert not any(e.reason == "ConsolidationApproved" and e.kind == "Node" for e in result.events)


def test_v115_an_infinite_score_reads_as_go_prints_it() -> None:
    from api.events import consolidation_approved

    assert consolidation_approved(math.inf, 0.5, 12.0, 0.0) == (
        "score +Inf >= threshold 0.50 (savings 12.0%, disruption 0.0%)")
