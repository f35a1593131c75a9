"""Node repair as a budgeted disruption method (v1.15, kubernetes-sigs/karpenter#3311; docs/semantics.md §13).

It runs first in a pass, before drift and consolidation. A node that planning/disruption/repair.py found due (past
its toleration, not vetoed by karpenter.sh/do-not-repair, not held by the 20% pool valve or a zone outage) is
replaced like a drifted one: the replacement is pre-spun, then the node drains honouring PDBs and its grace period
(the DisruptionWorkflow's replace path). It spends its pool's `Unhealthy` budget; one node per pass, the one whose
toleration ran out first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from api import labels as L
from planning.cluster import Cluster, NodeInfo
from planning.disruption.candidates import EVENTUAL, Candidate
from planning.disruption.commands import Command
from planning.disruption.drift import Drift
from planning.disruption.method import PassContext
from planning.disruption.repair import Repair, RepairDecision

REPAIR = "Repair"  # the method's name, as commands and workflows see it


class NodeRepair(Drift):
    """The Repair method: the due nodes in order of toleration end, within the `Unhealthy` budget."""

    name = REPAIR
    reason = L.REASON_UNHEALTHY
    budget_reason = L.REASON_UNHEALTHY
    disruption_class = EVENTUAL

    def __init__(self, ctx: PassContext, due: list[Repair], in_flight: Mapping[str, int] | None = None) -> None:
        super().__init__(ctx, in_flight)
        self.order = {r.node: i for i, r in enumerate(due)}

    def should_disrupt(self, c: Candidate) -> bool:
        return c.name in self.order

    def compute_commands(self, budgets: dict[str, int], candidates: list[Candidate]) -> list[Command]:
        return self.first_command(sorted(candidates, key=lambda c: self.order[c.name]), budgets)


def unhealthy_allowed(rows: list[dict[str, Any]], cluster: Cluster) -> dict[str, int]:
    """The `Unhealthy` budget left per pool. Budget counting takes a NotReady node as disrupting, which would make an
    unhealthy node spend its own repair's budget (10% of a 10-node pool: none left); here a node counted only for
    being NotReady (not deleting, not tainted karpenter.sh/disrupted) is not disrupting."""
    sick: dict[str, int] = {}
    for node in cluster.nodes:
        if node.pool and node.claim is not None and _initialized(node) and not node.ready \
                and not node.marked_for_deletion and not node.tainted_disrupted:
            sick[node.pool] = sick.get(node.pool, 0) + 1
    out: dict[str, int] = {}
    for row in rows:
        cap = row["total"] if row["limit"] is None else min(row["limit"], row["total"])
        busy = max(row["disrupting"] - sick.get(row["nodePool"], 0), 0)
        out[row["nodePool"]] = max(cap - busy, 0)
    return out


def _initialized(node: NodeInfo) -> bool:
    """As api/budgets.py count_nodes: only initialized nodes count toward a pool's budget at all."""
    return node.labels.get(L.INITIALIZED_LABEL) == "true" or \
        (node.claim is not None and node.claim.condition_true("Initialized"))


def static_pools_forceful(decision: RepairDecision, cluster: Cluster) -> RepairDecision:
    """Static NodePools keep forceful repair: their replacement is the pool's own scale-up once the node is gone
    (terminate-first by construction, kubernetes-sigs/karpenter#3342), not a pre-spun node."""
    static = [r for r in decision.due if (pool := cluster.pools.get(r.node_pool)) is not None and pool.static]
    if static:
        decision.due = [r for r in decision.due if r not in static]
        decision.repairs += static
    return decision
