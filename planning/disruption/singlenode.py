"""Single-node consolidation (docs/semantics.md §5.7): the first candidate that can be deleted or replaced cheaper.

Candidates are sorted, then interleaved round-robin across NodePools so one big pool cannot starve the
others; a time budget bounds the loop. Nodes whose pods fit nowhere are reported as blocked.
"""

from __future__ import annotations

from itertools import zip_longest

from api.events import EventReason
from planning.disruption.balanced import can_pass, pool_totals
from planning.disruption.candidates import Candidate, sort_for_consolidation
from planning.disruption.commands import Command
from planning.disruption.consolidation import Consolidation, Refusal
from planning.disruption.method import Deadline
from planning.disruption.method_names import MethodName
from planning.policies.zone_balance import prefer_fullest_zones


class SingleNodeConsolidation(Consolidation):
    name = MethodName.SINGLE_NODE_CONSOLIDATION

    def compute_commands(self, budgets: dict[str, int], candidates: list[Candidate]) -> list[Command]:
        deadline = Deadline(self.ctx.limits.single_node_seconds, self.ctx.clock)
        self.totals = pool_totals(self.ctx.cluster, candidates)
        for c in interleave_by_pool(prefer_fullest_zones(sort_for_consolidation(candidates), self.ctx)):
            if deadline.passed():
                break
            if self.ctx.budget_exhausted(c, self.reason, budgets):
                continue
            if not can_pass(c, self.totals):  # Balanced: even deleting it would not score enough (§5.10)
                continue
            attempt = self.compute_consolidation(self, [c], single=True)
            if attempt.command is not None:
                if self.balanced_rejects(attempt.command, [c]):  # Karpenter: no event, the next candidate
                    continue
                self.announce_approval(attempt.command, [c])
                return [attempt.command]
            if attempt.skipped is not None:
                self.ctx.policies.skip(attempt.skipped)
            if attempt.refusal is Refusal.UNSCHEDULABLE:
                why = self.ctx.scheduler.launch_blocker(c.pool) or attempt.message
                self.ctx.block(c.node, why, EventReason.UNCONSOLIDATABLE)
            elif attempt.refusal is Refusal.PENDING_CAPACITY:  # `nodeflow plan` names the pod it keeps room for
                self.ctx.block(c.node, attempt.message, EventReason.UNCONSOLIDATABLE)
            else:
                self.ctx.node_event(c.node, EventReason.UNCONSOLIDATABLE, attempt.message)
        return []


def interleave_by_pool(cands: list[Candidate]) -> list[Candidate]:
    """Round-robin across NodePools (pools in name order), keeping each pool's sorted order."""
    groups: dict[str, list[Candidate]] = {}
    for c in cands:
        groups.setdefault(c.pool.name, []).append(c)
    out: list[Candidate] = []
    for row in zip_longest(*(groups[k] for k in sorted(groups))):
        out.extend(c for c in row if c is not None)
    return out
