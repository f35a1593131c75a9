"""Node repair as a budgeted disruption method (v1.15, kubernetes-sigs/karpenter#3311; docs/semantics.md §13).

It runs first in a pass, before drift and consolidation. A node that planning/disruption/repair.py found due (past
its toleration, not vetoed by karpenter.sh/do-not-repair, not held by the 20% pool valve or a zone outage) is
replaced like a drifted one: the replacement is pre-spun, then the node drains honouring PDBs and its grace period
(the DisruptionWorkflow's replace path). It spends its pool's `Unhealthy` budget; one node per pass, the one whose
toleration ran out first. Its budget rows (api/budgets.py, reason `Unhealthy`) do not count a node that is only NotReady
as disrupting, or an unhealthy node would spend its own repair's budget.
"""

from __future__ import annotations

from collections.abc import Mapping

from api import labels as L
from planning.cluster import Cluster
from planning.disruption.candidates import EVENTUAL, Candidate
from planning.disruption.commands import Command
from planning.disruption.drift import Drift
from planning.disruption.method import PassContext
from planning.disruption.method_names import MethodName
from planning.disruption.repair import Repair, RepairDecision


class NodeRepair(Drift):
    """The Repair method: the due nodes in order of toleration end, within the `Unhealthy` budget."""

    name = MethodName.REPAIR
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


def static_pools_forceful(decision: RepairDecision, cluster: Cluster) -> RepairDecision:
    """Static NodePools keep forceful repair: their replacement is the pool's own scale-up once the node is gone
    (terminate-first by construction, kubernetes-sigs/karpenter#3342), not a pre-spun node."""
    static = [r for r in decision.due if (pool := cluster.pools.get(r.node_pool)) is not None and pool.static]
    if static:
        decision.due = [r for r in decision.due if r not in static]
        decision.repairs += static
    return decision
