"""The Balanced consolidation policy (docs/semantics.md §5.10): a move must save enough for what it disrupts.

Karpenter v1.14.0 (kubernetes-sigs/karpenter#2962, `pkg/controllers/disruption/balanced.go`): for each NodePool with
`consolidationPolicy: Balanced` among a move's candidates, the score is

    (savings / pool's total cost) / (move's disruption cost / pool's total disruption cost)

and the move goes ahead only when every such pool scores at least 1/k (k = 2). Disruption cost is
`RescheduleDisruptionCost` (1 + the positive eviction costs of the node's reschedulable pods); the pool totals
count every node of the pool, candidates or not, so a pool of busy nodes tolerates a move that disrupts more.
Pools with another policy are not scored, and a move of only those passes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from api.nodepool import BALANCED_K, POLICY_BALANCED
from planning.cluster import Cluster, NodeInfo
from planning.disruption.candidates import Candidate, reschedule_disruption_cost


@dataclass(frozen=True, slots=True)
class PoolTotals:
    """A pool's hourly cost and disruption cost over all its nodes: what a move's share is measured against."""

    cost: float
    disruption: float


@dataclass(frozen=True, slots=True)
class Score:
    """Karpenter's ScoreResult: the two fractions of one pool's move and the k that sets the threshold."""

    savings_fraction: float = 0.0
    disruption_fraction: float = 0.0
    k: int = BALANCED_K

    @property
    def value(self) -> float:
        """savings fraction / disruption fraction; 0 without savings, infinite when nothing is disrupted."""
        if self.savings_fraction <= 0:
            return 0.0
        if self.disruption_fraction == 0:
            return math.inf
        return self.savings_fraction / self.disruption_fraction

    @property
    def threshold(self) -> float:
        return 1.0 / self.k

    @property
    def approved(self) -> bool:
        return self.value >= self.threshold


def is_balanced(c: Candidate) -> bool:
    return c.pool.consolidation_policy == POLICY_BALANCED


def _node_disruption_cost(node: NodeInfo) -> float:
    """A non-candidate node's cost, as Karpenter's StateNode.DisruptionCost keeps it: its non-DaemonSet pods."""
    return reschedule_disruption_cost(p for p in node.pods if p.active and not p.is_daemonset)


def pool_totals(cluster: Cluster, candidates: Iterable[Candidate]) -> dict[str, PoolTotals]:
    """Totals of each Balanced pool that has a candidate (computeNodePoolTotals; only Balanced pools read them, so a
    pass without one walks no pods). Cost is the pool's nodes' prices (Karpenter's ClusterCost), else the
    candidates' when that is zero; disruption counts every node of the pool."""
    by_name = {c.name: c for c in candidates if is_balanced(c)}
    fallback: dict[str, float] = {}
    for c in by_name.values():
        fallback[c.pool.name] = fallback.get(c.pool.name, 0.0) + c.price
    cost: dict[str, float] = dict.fromkeys(fallback, 0.0)
    disruption: dict[str, float] = dict.fromkeys(fallback, 0.0)
    for node in cluster.nodes:
        if node.pool not in fallback:
            continue
        cost[node.pool] += node.price
        c = by_name.get(node.name)
        disruption[node.pool] += c.reschedule_cost if c is not None else _node_disruption_cost(node)
    return {name: PoolTotals(cost=cost[name] if cost[name] > 0 else fallback[name], disruption=disruption[name])
            for name in fallback}


def score_move(savings: float, disruption: float, totals: PoolTotals | None, k: int = BALANCED_K) -> Score:
    """ScoreMove: zero totals leave nothing to normalise against (score 0, rejected)."""
    if totals is None or totals.cost <= 0 or totals.disruption <= 0:
        return Score(k=k)
    return Score(savings / totals.cost, disruption / totals.disruption, k)


def approve(cands: list[Candidate], savings: float, totals: dict[str, PoolTotals]) -> tuple[bool, dict[str, Score]]:
    """EvaluateBalancedMove: every Balanced pool among the candidates must approve. A move over several pools gives
    each its share of the net savings in proportion to its candidates' price."""
    groups: dict[str, list[Candidate]] = {}
    for c in cands:
        groups.setdefault(c.pool.name, []).append(c)
    source = sum(c.price for c in cands)
    scores: dict[str, Score] = {}
    for name, group in groups.items():
        if not is_balanced(group[0]):
            continue
        share = savings
        if source > 0 and len(groups) > 1:
            share = savings * sum(c.price for c in group) / source
        scores[name] = score_move(share, sum(c.reschedule_cost for c in group), totals.get(name))
    return all(s.approved for s in scores.values()), scores


def can_pass(c: Candidate, totals: dict[str, PoolTotals]) -> bool:
    """CanPassThreshold: deleting the node outright is the best any move of it can score; if even that fails, skip it
    (non-Balanced pools, and pools without a cost, always pass)."""
    if not is_balanced(c):
        return True
    t = totals.get(c.pool.name)
    if t is None or t.cost <= 0:
        return True
    return score_move(c.price, c.reschedule_cost, t).approved
