"""StaticDrift (docs/semantics.md §14.3): replace drifted nodes of static NodePools, within the `Drifted` budget.

Karpenter's method (staticdrift.go), run between Emptiness and Drift. Per static pool: nothing while its budget is 0
or while it still has more nodes than replicas (running + pending disruption > replicas: a scale-down or another
replacement is under way); else `min(budget, drifted candidates)` commands, fewer when `limits.nodes` leaves no
room for a replacement beside the node it replaces (after this pass's scale-up: Karpenter's reservation is shared).
Each command replaces one node with a NodeClaim of the pool's template (no pods to size it: a static node is the
template). Terminate-first (v1.15, kubernetes-sigs/karpenter#3312): a pool at its capacity with no room under
`limits.nodes` would deadlock waiting for room, so its commands are delete-only, still within the budget, and the
pool's scale-up re-creates each node once it is gone. With budget 1 a pool rolls one node at a time: the next pass
sees the replacement and the candidate both, which is more than replicas, until the candidate is gone (terminate-first:
the candidate in flight spends the budget, then the refill holds the next one).
"""

from __future__ import annotations

from datetime import datetime
from itertools import groupby

from api import events
from api import labels as L
from api.events import EventReason
from planning.disruption.candidates import EVENTUAL, Candidate
from planning.disruption.commands import Command, TerminateFirst
from planning.disruption.drift import drift_reason, drifted_since
from planning.disruption.method import PassContext, make_command
from planning.disruption.method_names import MethodName
from planning.provisioning.static_capacity import PoolCounts, node_limit, template_replacement, terminate_first


class StaticDrift:
    """One replace command per drifted node of a static pool, within budget, node limit and replicas."""

    name = MethodName.STATIC_DRIFT
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
        launches = self.launches.get(pool.name, 0)
        first = terminate_first(pool, counts, launches)
        room = None if limit is None or first is not None else limit - counts.total - launches
        allowed = wanted if room is None else max(min(wanted, room), 0)
        if allowed == 0:
            for c in cands[:wanted]:
                self.ctx.block(c.node, events.STATIC_DRIFT_AT_LIMIT)
            return []
        # terminate-first too: the scale-up must be able to re-create what it deletes
        blocker = self.ctx.scheduler.launch_blocker(pool)
        replacement = template_replacement(self.ctx.scheduler, pool) if blocker is None else None
        if replacement is None:
            for c in cands[:allowed]:
                self.ctx.block(c.node, blocker or f"no instance type of nodepool {pool.name} has an available offering")
            return []
        budgets[pool.name] = budget - allowed
        if first is None:
            return [make_command(self, [c], None, [replacement], c.price - replacement.price) for c in cands[:allowed]]
        return [self._delete_only(c, first, replacement.price) for c in cands[:allowed]]

    def _delete_only(self, c: Candidate, first: TerminateFirst, refill_price: float) -> Command:
        """A terminate-first command: no replacement (the workflow drains and deletes, as for Emptiness), its
        reason on the command and as an Event on the NodePool and the node."""
        why = events.terminate_first(node_limit(c.pool) or 0, c.pool.replicas or 0)
        self.ctx.event("NodePool", c.pool.name, EventReason.DISRUPTION_TERMINATING, why)
        self.ctx.node_event(c.node, EventReason.DISRUPTION_TERMINATING, why)
        cmd = make_command(self, [c], None, [], c.price - refill_price)
        cmd.terminate_first = first
        return cmd
