"""What multi- and single-node consolidation share (docs/semantics.md §5.3-5.5): the filter and one what-if.

`compute_consolidation` asks: if these candidates went, would every pod fit on the other nodes plus at
most one new node, and is that node strictly cheaper? It answers with a command or with the
`Unconsolidatable` message Karpenter would emit.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from api import events
from api import labels as L
from api.capacity_buffer import buffer_key
from api.events import EventReason
from api.nodepool import POLICY_WHEN_EMPTY
from planning.disruption.balanced import PoolTotals, approve, is_balanced
from planning.disruption.candidates import (
    GRACEFUL,
    Candidate,
    consolidatable,
    currently_reschedulable,
    under_consolidate_after,
)
from planning.disruption.commands import Command, ScoredMove, SkippedMove
from planning.disruption.method import Method, PassContext, make_command
from planning.disruption.nomination import pending_capacity, reserved_capacity
from planning.policies.pod_annotations import disruption_units
from planning.pricing.replacements import consolidation_replacement
from planning.scheduling.simulation import Unschedulable


class Refusal(Enum):
    """Why a consolidation what-if said no; single-node consolidation blocks a node only for UNSCHEDULABLE."""

    UNSCHEDULABLE = "Unschedulable"  # some pod would fit nowhere
    TOO_MANY_NEW_NODES = "TooManyNewNodes"  # the pods need more than one new node
    NOT_CHEAPER = "NotCheaper"  # no replacement passes the price (or minValues / spot-to-spot) rules
    BELOW_THRESHOLD = "BelowThreshold"  # cheaper, but by less than the pool's DisruptionPolicy asks (§15.3)
    PENDING_CAPACITY = "PendingCapacity"  # a pending pod would lose the room it fits on (§3.4)


@dataclass(frozen=True, slots=True)
class Attempt:
    """The outcome of one what-if: a command, or the typed refusal with the `Unconsolidatable` message."""

    command: Command | None
    refusal: Refusal | None = None
    message: str = ""
    skipped: SkippedMove | None = None  # BELOW_THRESHOLD: the move that was not worth it


class Consolidation:
    """Base of MultiNodeConsolidation and SingleNodeConsolidation."""

    name = "Consolidation"
    reason = L.REASON_UNDERUTILIZED
    disruption_class = GRACEFUL

    def __init__(self, ctx: PassContext) -> None:
        self.ctx = ctx
        # The pools' cost and disruption totals for the Balanced score, set by compute_commands (§5.10).
        self.totals: dict[str, PoolTotals] = {}
        self._closed: frozenset[str] | None = None

    def should_disrupt(self, c: Candidate) -> bool:
        """ShouldDisrupt of docs/semantics.md §5.3 in order; each refusal but emptiness emits `Unconsolidatable`."""
        node, pool = c.node, c.pool
        if pool.static:
            return False
        message = None
        if node.itype is None:
            message = f'Instance Type "{node.labels.get(L.INSTANCE_TYPE_LABEL, "")}" not found'
        elif not node.capacity_type:
            message = f'Node does not have label "{L.CAPACITY_TYPE_LABEL}"'
        elif not node.zone:
            message = f'Node does not have label "{L.ZONE_LABEL}"'
        elif pool.consolidate_after is None:
            message = f'NodePool "{pool.name}" has consolidation disabled'
        elif c.empty:
            return False
        elif pool.consolidation_policy == POLICY_WHEN_EMPTY:  # v1.14: Balanced pools go on, to be scored (§5.10)
            message = f'NodePool "{pool.name}" has consolidation policy WhenEmpty, but node is not empty'
        if message is not None:
            self.ctx.node_event(node, EventReason.UNCONSOLIDATABLE, message)
            return False
        return consolidatable(c, self.ctx.at)

    def compute_commands(self, budgets: dict[str, int], candidates: list[Candidate]) -> list[Command]:
        raise NotImplementedError

    def balanced_rejects(self, cmd: Command, cands: list[Candidate]) -> bool:
        """True when a Balanced pool among `cands` scores the move below its threshold (docs/semantics.md §5.10)."""
        if not any(is_balanced(c) for c in cands):
            return False
        approved, scores = approve(cands, cmd.savings_per_hour, self.totals)
        policy = {c.pool.name: c.pool.consolidation_policy for c in cands}
        self.ctx.scored += [ScoredMove(node_pool=name, policy=policy[name], score=s.value, approved=s.approved)
                            for name, s in sorted(scores.items())]
        return not approved

    def announce_approval(self, cmd: Command, cands: list[Candidate]) -> None:
        """ConsolidationApproved for each Balanced pool that approved the move taken: on the Node and NodeClaim of a
        single-node move, on the NodePool of a multi-node one (Karpenter's `balanced.go`). A rejection records no
        Event, as Karpenter's: it is counted (`karpenter_consolidation_moves_total`), since rejections are too many
        to read beside approvals."""
        _, scores = approve(cands, cmd.savings_per_hour, self.totals)
        for name, s in sorted(scores.items()):
            if not s.approved:
                continue
            why = events.consolidation_approved(s.value, s.threshold, 100 * s.savings_fraction,
                                                100 * s.disruption_fraction)
            if len(cands) == 1:  # as written, not sentence-cased: the text is a formula
                node = cands[0].node
                self.ctx.event("Node", node.name, EventReason.CONSOLIDATION_APPROVED, why)
                if node.claim is not None:
                    self.ctx.event("NodeClaim", node.claim.name, EventReason.CONSOLIDATION_APPROVED, why)
            else:
                self.ctx.event("NodePool", name, EventReason.CONSOLIDATION_APPROVED, why)

    def closed_destinations(self) -> frozenset[str]:
        """Nodes still under their pool's consolidateAfter: no candidate's pod moves onto them (v1.14,
        kubernetes-sigs/karpenter#3006), so a node that just took pods is not filled further before it could settle.
        Computed once per pass."""
        if self._closed is None:
            cluster, at = self.ctx.cluster, self.ctx.at
            self._closed = frozenset(n.name for n in cluster.nodes if n.pool in cluster.pools
                                     and under_consolidate_after(n, cluster.pools[n.pool], at))
        return self._closed

    def compute_consolidation(self, method: Method, cands: list[Candidate], single: bool) -> Attempt:
        """A delete or replace command for removing `cands`, or the refusal and why not."""
        ctx = self.ctx
        pods = currently_reschedulable(ctx.cluster, (p for c in cands for p in c.reschedulable), ctx.at)
        sim = ctx.scheduler.simulate([c.node for c in cands], pods, max_new=1, pending=ctx.cluster.pending,
                                     closed=self.closed_destinations())
        if sim.unschedulable is Unschedulable.NO_FIT:
            return Attempt(None, Refusal.UNSCHEDULABLE, sim.failure_message())
        if sim.unschedulable is Unschedulable.TOO_MANY_NEW_NODES:
            return Attempt(None, Refusal.TOO_MANY_NEW_NODES,
                           "Can't remove without creating more than 1 candidates" + sim.volume_note())
        if sim.pending_lost:
            pod, home = sim.pending_lost[0]
            why = events.buffer_headroom(buffer_key(pod.annotations), home) if pod.virtual else \
                pending_capacity(pod.key, home)
            return Attempt(None, Refusal.PENDING_CAPACITY, why)
        if ctx.scheduler.reservation_lost([c.node for c in cands]):
            return Attempt(None, Refusal.PENDING_CAPACITY, reserved_capacity(cands[0].name))
        price = sum(c.price for c in cands)
        if not sim.new_nodes:
            return self.worth_it(cands, make_command(method, cands, sim, [], price))
        nn = sim.new_nodes[0]
        priced, why = consolidation_replacement(nn, cands, ctx.scheduler.pool_options(nn.pool), single=single,
                                                same_type_filter=not single)
        if priced is None:  # Karpenter's message, and the volume limit when that is why a new node is needed (§3.5)
            return Attempt(None, Refusal.NOT_CHEAPER, why + sim.volume_note())
        return self.worth_it(cands, make_command(method, cands, sim, [priced.replacement], price - priced.price))

    def worth_it(self, cands: list[Candidate], cmd: Command) -> Attempt:
        """The command, or BELOW_THRESHOLD when a DisruptionPolicy of its pools asks for more savings."""
        pods = sum(len(c.reschedulable) for c in cands)
        why = self.ctx.policies.savings_refusal([c.pool.name for c in cands], cmd.savings_per_hour,
                                                sum(c.price for c in cands), pods,
                                                disruption_units(p for c in cands for p in c.reschedulable))
        if why is None:
            return Attempt(cmd)
        move = SkippedMove(method=cmd.method, node_pool=cmd.node_pool, nodes=list(cmd.nodes),
                           savings_per_hour=cmd.savings_per_hour, pods=pods, reason=why)
        return Attempt(None, Refusal.BELOW_THRESHOLD, why, move)
