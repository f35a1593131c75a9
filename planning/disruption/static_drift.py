"""StaticDrift (docs/semantics.md §14.3): replace drifted nodes of static NodePools, within the `Drifted` budget.

Karpenter's method (staticdrift.go), run between Emptiness and Drift. Per static pool: nothing while its budget is 0
or while it still has more nodes than replicas (running + pending disruption > replicas: a scale-down or another
replacement is under way); else `min(budget, drifted candidates)` commands, fewer when `limits.nodes` leaves no
room for a replacement beside the node it replaces (after this pass's scale-up: Karpenter's reservation is shared).
Each command replaces one node with a NodeClaim of the pool's template (no pods to size it: a static node is the
template). With budget 1 a pool rolls one node at a time: the next pass sees the replacement and the candidate
both, which is more than replicas, until the candidate is gone.
"""

from __future__ import annotations

from datetime import datetime
from itertools import groupby

from api import events
from api import labels as L
from planning.disruption.candidates import EVENTUAL, Candidate
from planning.disruption.commands import STATIC_DRIFT, Command
from planning.disruption.drift import drift_reason, drifted_since
from planning.disruption.method import PassContext, make_command
from planning.provisioning.static_capacity import PoolCounts, node_limit, template_replacement


class StaticDrift:
    """One replace command per drifted node of a static pool, within budget, node limit and replicas."""

    name = STATIC_DRIFT
    reason = L.REASON_DRIFTED
    disruption_class = EVENTUAL

    def __init__(self, ctx: PassContext, counts: dict[str, PoolCounts], launches: dict[str, int] | None = None) -> None:
        """`launches`: NodeClaims this pass's scale-up launches per pool; they take room under limits.nodes first."""
        self.ctx = ctx
        self.counts = counts
        self.launches = launches or {}

    def should_disrupt(self, c: Candidate) -> bool:
        node_class = self.ctx.cluster.node_classes.get(c.pool.node_class) if c.pool.node_class else None
        return c.pool.static and drift_reason(c.node, c.pool, node_class, self.ctx.cluster.catalog_for(c.pool.name),
                                              self.ctx.at) is not None

    def compute_commands(self, budgets: dict[str, int], candidates: list[Candidate]) -> list[Command]:
        floor = datetime.min.replace(tzinfo=self.ctx.at.tzinfo)
        # Nodes without reschedulable pods first (drift keeps v1.9.1's "empty", not v1.14's IsEmpty).
        ordered = sorted(candidates,
                         key=lambda c: (c.pool.name, bool(c.reschedulable), drifted_since(c.node) or floor, c.name))
        commands: list[Command] = []
        for _, group in groupby(ordered, key=lambda c: c.pool.name):
            commands += self._pool_commands(budgets, list(group))
        return commands

    def _pool_commands(self, budgets: dict[str, int], cands: list[Candidate]) -> list[Command]:
        pool = cands[0].pool
        budget = budgets.get(pool.name, 0)
        if budget <= 0:
            for c in cands:
                self.ctx.block_for_budget(c.node, self.reason, pool.name)
            return []
        counts = self.counts.get(pool.name, PoolCounts())
        replicas = pool.replicas or 0
        if counts.running + counts.pending_disruption > replicas:
            for c in cands:
                self.ctx.block(c.node, events.static_drift_waits(pool.name, counts.running +
                                                                 counts.pending_disruption, replicas))
            return []
        wanted = min(budget, len(cands))
        limit = node_limit(pool)
        room = None if limit is None else limit - counts.total - self.launches.get(pool.name, 0)
        allowed = wanted if room is None else max(min(wanted, room), 0)
        if allowed == 0:
            for c in cands[:wanted]:
                self.ctx.block(c.node, events.STATIC_DRIFT_AT_LIMIT)
            return []
        blocker = self.ctx.scheduler.launch_blocker(pool)
        replacement = template_replacement(self.ctx.scheduler, pool) if blocker is None else None
        if replacement is None:
            for c in cands[:allowed]:
                self.ctx.block(c.node, blocker or f"no instance type of nodepool {pool.name} has an available offering")
            return []
        budgets[pool.name] = budget - allowed
        return [make_command(self, [c], None, [replacement], c.price - replacement.price) for c in cands[:allowed]]
