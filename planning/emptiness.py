"""Emptiness (docs/semantics.md §5.2): delete every empty, consolidatable candidate the `Empty` budget allows."""

from __future__ import annotations

from api import events
from api import labels as L
from api.events import EventReason
from planning.candidates import GRACEFUL, Candidate, consolidatable, sort_for_consolidation
from planning.commands import Command
from planning.method import PassContext, make_command


class Emptiness:
    """Empty (no reschedulable pod with a positive eviction cost, v1.14's IsEmpty) and past consolidateAfter: delete,
    no replacement."""

    name = "Emptiness"
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
        """One delete command per NodePool holding every empty candidate within its budget."""
        chosen: dict[str, list[Candidate]] = {}
        for c in self.ctx.take_within_budget(self.reason, budgets, sort_for_consolidation(candidates)):
            chosen.setdefault(c.pool.name, []).append(c)
        return [make_command(self, cands, None, [], sum(c.price for c in cands)) for cands in chosen.values()]
