"""Multi-node consolidation (docs/semantics.md §5.6): the largest prefix of candidates that can go together.

Up to 100 candidates (after the budget), binary search over prefixes: a prefix is valid when its pods fit
on the rest plus at most one new node strictly cheaper than all removed nodes, and never a type they
already run unless cheaper (filterOutSameInstanceType), and that a Balanced pool approves (§5.10). A time budget
returns the best found so far.
"""

from __future__ import annotations

from planning.disruption.balanced import pool_totals
from planning.disruption.candidates import Candidate, sort_for_consolidation
from planning.disruption.commands import Command, SkippedMove
from planning.disruption.consolidation import Consolidation
from planning.disruption.method import Deadline
from planning.disruption.method_names import MethodName
from planning.policies.zone_balance import prefer_fullest_zones


class MultiNodeConsolidation(Consolidation):
    name = MethodName.MULTI_NODE_CONSOLIDATION

    def compute_commands(self, budgets: dict[str, int], candidates: list[Candidate]) -> list[Command]:
        self.totals = pool_totals(self.ctx.cluster, candidates)
        ordered = prefer_fullest_zones(sort_for_consolidation(candidates), self.ctx)  # zoneBalance ties (§15.6)
        within = self.ctx.take_within_budget(self.reason, budgets, ordered)
        cmd = self.first_n_option(within)
        return [cmd] if cmd is not None else []

    def first_n_option(self, cands: list[Candidate]) -> Command | None:
        """Binary search for the longest valid prefix (at least 2 nodes), Karpenter's bounds."""
        if len(cands) < 2:
            return None
        max_parallel = min(len(cands), self.ctx.limits.multi_node_max_candidates)
        lo, hi = 1, max_parallel
        if len(cands) <= max_parallel:
            hi = len(cands) - 1
        deadline = Deadline(self.ctx.limits.multi_node_seconds, self.ctx.clock)
        best: Command | None = None
        best_cands: list[Candidate] = []
        skipped: SkippedMove | None = None  # the largest prefix a DisruptionPolicy's savings threshold refused
        while lo <= hi:
            if deadline.passed():
                break
            mid = (lo + hi) // 2
            attempt = self.compute_consolidation(self, cands[: mid + 1], single=False)
            if attempt.command is not None and not self.balanced_rejects(attempt.command, cands[: mid + 1]):
                best, best_cands = attempt.command, cands[: mid + 1]
                lo = mid + 1
            else:
                if attempt.skipped is not None and (skipped is None or len(attempt.skipped.nodes) > len(skipped.nodes)):
                    skipped = attempt.skipped
                hi = mid - 1
        if best is None and skipped is not None:
            self.ctx.policies.skip(skipped)
        if best is not None:
            self.announce_approval(best, best_cands)
        return best
