"""Emptiness (docs/semantics.md §5.2): delete every empty, consolidatable candidate the `Empty` budget allows."""

from __future__ import annotations

from api import events
from api import labels as L
from api.events import EventReason
from planning.disruption.candidates import GRACEFUL, Candidate, consolidatable, sort_for_consolidation
from planning.disruption.commands import Command
from planning.disruption.method import PassContext, make_command
from planning.disruption.method_names import MethodName
from planning.disruption.nomination import pending_capacity, reserved_capacity


class Emptiness:
    """Empty (no reschedulable pod with a positive eviction cost, v1.14's IsEmpty) and past consolidateAfter: delete,
    no replacement."""

    name = MethodName.EMPTINESS
    reason = L.REASON_EMPTY
    disruption_class = GRACEFUL

    def __init__(self, ctx: PassContext) -> None:
        self.ctx = ctx

    def should_disrupt(self, c: Candidate) -> bool:
        if c.pool.static:
            return False
        if c.pool.consolidate_after is None:
            self.ctx.node_event(c.node, EventReason.UNCONSOLIDATABLE, events.consolidation_disabled(c.pool.name))
            return False
        return c.empty and consolidatable(c, self.ctx.at)

    def compute_commands(self, budgets: dict[str, int], candidates: list[Candidate]) -> list[Command]:
        """One delete command per NodePool holding every empty candidate within its budget, less the nodes pending
        pods are about to be bound to or a CapacityBuffer's virtual pods hold (docs/semantics.md §20)."""
        chosen: dict[str, list[Candidate]] = {}
        kept = self.keep_for_pending(candidates)
        candidates = [c for c in candidates if c.name not in kept]
        kept = self.keep_for_reserved(candidates)
        candidates = [c for c in candidates if c.name not in kept]
        for c in self.ctx.take_within_budget(self.reason, budgets, sort_for_consolidation(candidates)):
            chosen.setdefault(c.pool.name, []).append(c)
        return [make_command(self, cands, None, [], sum(c.price for c in cands)) for cands in chosen.values()]

    def keep_for_pending(self, candidates: list[Candidate]) -> set[str]:
        """Empty candidates a pending pod fits on while no other node has room for it (Karpenter keeps pending pods
        in every disruption simulation): each is kept, listed as blocked with the pod, so the capacity launched for
        pods survives until kube-scheduler binds them, however long its retry takes. One simulation per round; a
        round keeps at least one node, so this ends."""
        ctx, kept = self.ctx, set[str]()
        pending = [p for p in ctx.cluster.pending if not p.is_daemonset and not p.is_mirror]
        if not pending or not candidates:
            return kept
        while True:
            removed = [c.node for c in candidates if c.name not in kept]
            sim = ctx.scheduler.simulate(removed, [], max_new=0, pending=pending) if removed else None
            homes = {home: pod for pod, home in sim.pending_lost} if sim is not None else {}
            if not homes:
                return kept
            for home, pod in sorted(homes.items()):
                kept.add(home)
                node = ctx.cluster.by_name[home]
                why = events.has_buffer_pods(home) if pod.virtual else pending_capacity(pod.key, home)
                ctx.block(node, why, EventReason.UNCONSOLIDATABLE)

    def keep_for_reserved(self, candidates: list[Candidate]) -> set[str]:
        """Empty candidates that hold the room the pass reserved for the pods of deleting and in-flight nodes
        (docs/semantics.md §2) while the others could not take those pods: kept, one at a time in name order, until
        the rest can go without leaving such a pod without its place. A replacement launched for a drain blocked
        by a PDB stays empty until the drain's deadline; this keeps it for the pods it was launched for."""
        ctx, kept = self.ctx, set[str]()
        holders = sorted((c for c in candidates if ctx.scheduler.reserved_usage(c.node)[2]), key=lambda c: c.name)
        while holders and ctx.scheduler.reservation_lost([c.node for c in candidates if c.name not in kept]):
            c = holders.pop(0)
            kept.add(c.name)
            ctx.block(c.node, reserved_capacity(c.name), EventReason.UNCONSOLIDATABLE)
        return kept
