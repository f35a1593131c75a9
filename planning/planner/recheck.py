"""Re-checking a disruption command before it starts (docs/semantics.md §5.8): a consolidation or SpotReturn
command re-simulated on its own candidates against a fresh snapshot, as Karpenter's ConsolidationValidator does.
The verdicts and the comparison are planning/disruption/validation.py's; the pass set-up is planning/planner/plan.py's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from api.catalog import InstanceTypeCatalog
from planning.cluster import Parsed
from planning.disruption.candidates import GRACEFUL
from planning.disruption.commands import Command
from planning.disruption.method_names import MethodName
from planning.disruption.multinode import MultiNodeConsolidation
from planning.disruption.repair import DEFAULT_POLICIES, RepairPolicy
from planning.disruption.singlenode import SingleNodeConsolidation
from planning.disruption.validation import Decision, Mismatch, same_decision
from planning.planner.plan import prepare_pass
from planning.policies.spot_return import SpotReturn


@dataclass(frozen=True)
class Recheck:
    """A consolidation command re-checked: why it no longer holds (None: it does), and the fresh simulation's
    command for the same candidates when there was one (with REPLACEMENT_NOT_NEEDED, the delete to carry out)."""

    mismatch: Mismatch | None
    fresh: Command | None = None
    detail: str = ""  # what the fresh simulation found instead, for the message a user reads

    @property
    def message(self) -> str:
        """The mismatch's text, then the detail: "scheduling simulation produced new results: <why>"."""
        text = self.mismatch.value if self.mismatch is not None else ""
        return f"{text}: {self.detail}" if text and self.detail else text


def recheck_consolidation(snapshot: Any, at: datetime, nodes: Sequence[str], ours: Decision,
                          catalog: InstanceTypeCatalog | None = None, exclude: frozenset[str] | set[str] = frozenset(),
                          parsed: Parsed | None = None, repair: Sequence[RepairPolicy] = DEFAULT_POLICIES,
                          planned: Mapping[str, str] | None = None) -> Recheck:
    """No mismatch when a consolidation command still holds on `snapshot`: every node is still a candidate the
    method may disrupt, in no calendar hold and within its pool's budget, and removing exactly these nodes
    still schedules every pod on the others plus the same replacement (Karpenter's ConsolidationValidator).
    A pass that would now prefer other nodes does not invalidate it: in a cluster that changes every 10 s
    the fresh pass often does, and requiring it failed most commands of bench.karpenter_suite's basic run.
    A command planned with a replacement whose candidates now fit on the other nodes without one is
    REPLACEMENT_NOT_NEEDED with that delete (Karpenter discards it; docs/semantics.md §12).
    `planned`: where the other in-flight commands planned their pods (Scheduler), so their reservation leaves
    this command the room it planned on."""
    setup = prepare_pass(snapshot, at, catalog, exclude, None, parsed, repair, planned)
    single = ours.method == MethodName.SINGLE_NODE_CONSOLIDATION
    method = SingleNodeConsolidation(setup.ctx) if single else MultiNodeConsolidation(setup.ctx)
    by_name = {c.name: c for c in setup.sets[GRACEFUL].candidates}
    chosen = [by_name.get(n) for n in nodes]
    if any(c is None or not method.should_disrupt(c) for c in chosen):
        return Recheck(Mismatch.CANDIDATES_CHANGED)
    cands = [c for c in chosen if c is not None]
    if any(setup.ctx.policies.hold_message(c.pool.name) is not None for c in cands):
        return Recheck(Mismatch.HELD)
    allowed = setup.allowed.get(method.reason, {})
    if any(allowed.get(pool, 0) < n for pool, n in Counter(c.pool.name for c in cands).items()):
        return Recheck(Mismatch.BUDGET)
    attempt = method.compute_consolidation(method, cands, single=single)
    fresh = attempt.command
    if fresh is None:
        return Recheck(Mismatch.NEW_SCHEDULING_RESULTS, detail=attempt.message)
    if ours.replacements and not fresh.replacements:
        return Recheck(Mismatch.REPLACEMENT_NOT_NEEDED, fresh)
    mismatch = same_decision(ours, Decision.of(fresh.method, fresh.nodes, fresh.replacements))
    return Recheck(mismatch, fresh, _replacements_now(fresh) if mismatch is Mismatch.NEW_SCHEDULING_RESULTS else "")


def _replacements_now(fresh: Command) -> str:
    """What the fresh simulation would launch, as a validation message says it."""
    if not fresh.replacements:
        return "it now needs no replacement"
    r = fresh.replacements[0]
    shown = ", ".join(r.instance_types[:3]) + (", ..." if len(r.instance_types) > 3 else "")
    return f"it now needs a replacement ({r.capacity_type} {shown})"


def recheck_spot_return(snapshot: Any, at: datetime, nodes: Sequence[str], ours: Any,
                        catalog: InstanceTypeCatalog | None = None, exclude: set[str] | frozenset[str] = frozenset(),
                        parsed: Any = None, repair: Any = None, planned: Mapping[str, str] | None = None
                        ) -> Mismatch | None:
    """None when a SpotReturn command still holds (planning/disruption/validation.py's Mismatch otherwise): its node is
    still a due fallback candidate, in no calendar hold, within the Underutilized budget, and returning it still
    yields the same spot replacement. Like consolidation's validator (§5.8), a pass that would now start something
    else does not invalidate it: a return checked against the whole next pass would lose to every busier method."""
    setup = prepare_pass(snapshot, at, catalog, exclude, None, parsed,
                         DEFAULT_POLICIES if repair is None else repair, planned)
    method = SpotReturn(setup.ctx)
    by_name = {c.name: c for c in setup.sets[GRACEFUL].candidates}
    chosen = [by_name.get(n) for n in nodes]
    cands = [c for c in chosen if c is not None and method.should_disrupt(c)]
    if len(cands) != len(nodes):
        return Mismatch.CANDIDATES_CHANGED
    if any(setup.ctx.policies.hold_message(c.pool.name) is not None for c in cands):
        return Mismatch.HELD
    if any(setup.allowed.get(method.budget_reason, {}).get(c.pool.name, 0) < 1 for c in cands):
        return Mismatch.BUDGET
    fresh, _why = method.return_command(cands[0])
    if fresh is None:
        return Mismatch.NEW_SCHEDULING_RESULTS
    return same_decision(ours, Decision.of(fresh.method, fresh.nodes, fresh.replacements))
