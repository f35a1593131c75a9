"""Spot return (docs/semantics.md §15.5; aws/karpenter-provider-aws issues 714, 6425, 8298): a DisruptionPolicy's
`spot.returnAfter` replaces each node recorded as a spot fallback (planning/provisioning/spot_fallback.py) with spot
once spot is offered again (`SpotReturn`, a consolidation-like replace spending the Underutilized budget).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from api import labels as L
from planning.cluster import NodeInfo
from planning.disruption.candidates import GRACEFUL, Candidate, currently_reschedulable
from planning.disruption.commands import Command, Replacement
from planning.disruption.method import PassContext, make_command
from planning.disruption.method_names import MethodName
from planning.pricing.replacements import pool_zones, to_replacement
from planning.provisioning.spot_fallback import admits_spot, fallback_since, fallback_value
from planning.scheduling.sim_state import NewNode
from planning.scheduling.simulation import Unschedulable

REASON_SPOT_FALLBACK = "SpotFallback"  # why the node goes (its commands' `reason`)


# ---- return: replace fallback nodes with spot -------------------------------------------------------------------

class SpotReturn:
    """One fallback node per pass whose `returnAfter` has passed (longest fallen back first), replaced by spot within
    the pool's Underutilized budget. A return is a cheaper replace like single-node consolidation's, so it spends that
    budget; it needs neither consolidateAfter nor a consolidation policy, since the policy asked for it by name."""

    name = MethodName.SPOT_RETURN
    reason = REASON_SPOT_FALLBACK
    budget_reason = L.REASON_UNDERUTILIZED
    disruption_class = GRACEFUL

    def __init__(self, ctx: PassContext) -> None:
        self.ctx = ctx

    def since(self, node: NodeInfo) -> datetime | None:
        return fallback_since(node.claim.annotations) if node.claim is not None else None

    def due(self, node: NodeInfo) -> datetime | None:
        """When the node may go back to spot: its fallback time + the pool's returnAfter (None: never)."""
        delay = return_delay(self.ctx, node.pool)
        since = self.since(node)
        return None if delay is None or since is None else since + delay

    def should_disrupt(self, c: Candidate) -> bool:
        if c.pool.static or c.node.capacity_type != L.CAPACITY_ON_DEMAND or not admits_spot(c.pool.requirements):
            return False  # a pool changed to on-demand only since the fallback keeps the node
        due = self.due(c.node)
        return due is not None and due <= self.ctx.at

    def compute_commands(self, budgets: dict[str, int], candidates: list[Candidate]) -> list[Command]:
        floor = datetime.min.replace(tzinfo=UTC)
        for c in sorted(candidates, key=lambda c: (self.since(c.node) or floor, c.name)):
            if self.ctx.budget_exhausted(c, self.budget_reason, budgets):
                continue
            cmd, why = self.return_command(c)
            if cmd is not None:
                return [cmd]
            self.ctx.block(c.node, why)
        return []

    def return_command(self, c: Candidate) -> tuple[Command | None, str]:
        """The command replacing `c` with spot (or deleting it when its pods fit elsewhere), else why not."""
        ctx = self.ctx
        pods = currently_reschedulable(ctx.cluster, c.reschedulable, ctx.at)
        sim = ctx.scheduler.simulate([c.node], pods, max_new=1, pending=ctx.cluster.pending)
        if sim.unschedulable is Unschedulable.NO_FIT:
            return None, ctx.scheduler.launch_blocker(c.pool) or sim.failure_message()
        if sim.unschedulable is Unschedulable.TOO_MANY_NEW_NODES:
            return None, "spot return: its pods would need more than one spot node"
        replacements: list[Replacement] = []
        cost = 0.0
        for nn in sim.new_nodes:
            if not _has_spot(nn):
                return None, f"spot return waits: no spot offering is available for its pods (on-demand since " \
                             f"{fallback_value(self.since(c.node) or ctx.at)})"
            zones = pool_zones(nn, ctx.scheduler.pool_options(nn.pool))
            priced = to_replacement(nn, nn.options, L.CAPACITY_SPOT, zones)
            replacements.append(priced.replacement)
            cost += priced.price
        if cost >= c.price:
            return None, f"spot return waits: spot (${cost:.4f}/h) is not cheaper than the node (${c.price:.4f}/h)"
        return make_command(self, [c], sim, replacements, c.price - cost), ""


def _has_spot(nn: NewNode) -> bool:
    return any(o.capacity_type == L.CAPACITY_SPOT for opt in nn.options for o in opt.offerings)


def return_delay(ctx: PassContext, pool: str) -> timedelta | None:
    policy = ctx.policies.of(pool)
    spot = policy.spec.spot if policy is not None else None
    return spot.return_delay if spot is not None else None
