"""Every node of a plan accounted for exactly once: disrupted, blocked, excluded or kept, and why.

`nodeflow plan` printed commands, blocked nodes and excluded nodes; every other node went unmentioned, so a pool
with `consolidateAfter: Never`, a node still inside its consolidateAfter or one no cheaper placement exists for
looked the same as a node the planner never saw. This module reads what a pass decided (its candidate sets, its
commands, its blocked nodes, the Events its methods emitted) and gives each node of the pass's cluster one row.
It re-asks the pass's own method filters (on a throwaway context) rather than repeating their rules, so a new
candidate check or filter is picked up as it is; a kept reason is typed (`KeptReason`), the detail is for people.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from api import labels as L
from api.events import EventReason
from api.nodepool import POLICY_WHEN_EMPTY
from api.timestamps import format_seconds
from planning.cluster import Cluster, NodeInfo
from planning.disruption.balanced import is_balanced
from planning.disruption.candidates import EVENTUAL, GRACEFUL, Candidate, CandidateSet, NotCandidate, cancel_hold
from planning.disruption.commands import Blocked, Command, PlanEvent, SkippedMove
from planning.disruption.exclusions import exclusion_of
from planning.disruption.method import Method, PassContext
from planning.disruption.method_names import MethodName
from planning.disruption.settling import HELD_METHODS, Settling


class Outcome(StrEnum):
    """What the pass does with a node; each node has exactly one."""

    DISRUPTED = "Disrupted"  # in a command (or a node repair / static scale-down) of this plan
    BLOCKED = "Blocked"  # the planner would disrupt it but may not (the `blocked` row)
    EXCLUDED = "Excluded"  # no decision counts it (the `excluded` row)
    KEPT = "Kept"  # not a candidate this pass: `KeptReason` says why


class KeptReason(StrEnum):
    """Why a node no method disrupts this pass is left alone; callers branch on this, never on `detail`."""

    IN_FLIGHT = "InFlight"  # already being disrupted, deleting or tainted karpenter.sh/disrupted
    NOT_A_CANDIDATE = "NotACandidate"  # a candidate check refused it without blocking it (detail: the check)
    STATIC_NODE_POOL = "StaticNodePool"  # a static pool's replicas keep it (only drift and scale-down remove one)
    CONSOLIDATION_DISABLED = "ConsolidationDisabled"  # its pool has consolidateAfter: Never
    WHEN_EMPTY_NOT_EMPTY = "WhenEmptyNotEmpty"  # consolidationPolicy WhenEmpty and the node has pods to move
    CONSOLIDATE_AFTER = "ConsolidateAfter"  # not consolidatable until `until` (consolidateAfter since a pod event)
    INCOMPLETE_NODE = "IncompleteNode"  # unknown instance type or no capacity-type / zone label: not priced
    REFUSED_BY_METHOD = "RefusedByMethod"  # a method's filter refused it (detail: the Event it emitted)
    CALENDAR_HOLD = "CalendarHold"  # its pool's DisruptionPolicy calendar holds voluntary disruption until `until`
    NO_CHEAPER_PLACEMENT = "NoCheaperPlacement"  # the what-if found no cheaper placement (detail: Unconsolidatable)
    BELOW_SAVINGS_THRESHOLD = "BelowSavingsThreshold"  # cheaper, by less than its DisruptionPolicy asks
    BALANCED_SCORE = "BalancedScore"  # a Balanced pool's score refused the move (§5.10)
    PASS_DECIDED = "PassDecided"  # an earlier method's commands won this pass; a later pass considers it
    NOT_REACHED = "NotReached"  # its method stopped before it (one command a pass, a time limit)
    SETTLING = "Settling"  # consolidation sat out the pass while evicted pods settle (docs/semantics.md §5.11)
    PAUSED_GLOBALLY = "PausedGlobally"  # `nodeflow pause`: the command that would disrupt it will not run
    NOTHING_TO_DO = "NothingToDo"  # no method wants it and no rule above applies (never expected; tests check)


# The budget each command reason spends (Expired spends none: forceful); docs/semantics.md §15.1, §15.5.
BUDGET_OF_REASON: dict[str, str | None] = {"Empty": "Empty", "Drifted": "Drifted", "Underutilized": "Underutilized",
                                            "Expiring": "Drifted", "SpotFallback": "Underutilized", "Expired": None}
BUDGET_EXHAUSTED = "BudgetExhausted"  # a blocked row's reason when its pool's budget is spent


@dataclass(frozen=True, slots=True)
class NodeAccount:
    """One node's row: `reason` is the command's method, the ExclusionReason, BudgetExhausted or the blocked Event's
    reason, or a KeptReason; `until` when the reason ends by itself."""

    node: str
    node_pool: str
    outcome: Outcome
    reason: str
    detail: str
    until: datetime | None = None

    def to_public(self) -> dict[str, Any]:
        until = format_seconds(self.until) if self.until else None
        return {"node": self.node, "nodePool": self.node_pool or None, "outcome": self.outcome.value,
                "reason": self.reason, "detail": self.detail, "until": until}


@dataclass(frozen=True, slots=True)
class LabelledCommand:
    """A command with the label people find it by in the plan (`command 2`, or `static drift` for StaticDrift)."""

    command: Command
    label: str

    def describe(self) -> str:
        return f"{self.label} ({self.command.method}: {', '.join(self.command.nodes)})"


def label_commands(commands: Sequence[Command], start: int = 1) -> list[LabelledCommand]:
    """`command N` as numbered in the plan's `commands` (StaticDrift commands are not there: `staticNodePools`)."""
    out, n = [], start
    for cmd in commands:
        if cmd.method == MethodName.STATIC_DRIFT:
            out.append(LabelledCommand(cmd, f"static drift of {cmd.node_pool}"))
        else:
            out.append(LabelledCommand(cmd, f"command {n}"))
            n += 1
    return out


@dataclass
class PassFacts:
    """What one pass decided and saw: the accounting's only input. `scratch` is a copy of the pass's context whose
    Events go nowhere; `methods` are the pass's methods built on it, in the pass's order."""

    cluster: Cluster
    at: datetime
    sets: dict[str, CandidateSet]
    scratch: PassContext
    methods: list[Method]
    winner: str | None
    blocked: Mapping[str, Blocked]
    events: Sequence[PlanEvent]
    budgets: Sequence[Mapping[str, Any]]
    exclude: frozenset[str]
    skipped: Sequence[SkippedMove] = ()
    held_until: Mapping[str, datetime | None] = field(default_factory=dict)
    disrupted: dict[str, tuple[str, str]] = field(default_factory=dict)  # node -> (reason, detail)
    commands: list[LabelledCommand] = field(default_factory=list)  # this pass's, for the budget's use
    settling: Settling = field(default_factory=Settling)  # held: consolidation sat the pass out


def disrupted_by(commands: Iterable[LabelledCommand], repairs: Iterable[str] = (),
                 static_removals: Mapping[str, str] | None = None, prefix: str = "") -> dict[str, tuple[str, str]]:
    """node -> (reason, detail) for every node a command, a node repair or a static scale-down takes."""
    out: dict[str, tuple[str, str]] = {}
    for lc in commands:
        for name in lc.command.nodes:
            out.setdefault(name, (lc.command.method, f"{prefix}{lc.label}: {lc.command.method} "
                                                     f"{lc.command.decision}s it ({lc.command.reason})"))
    for name in repairs:
        out.setdefault(name, ("NodeRepair", f"{prefix}node repair terminates it (see repairs)"))
    for name, pool in (static_removals or {}).items():
        out.setdefault(name, ("StaticScaleDown", f"{prefix}static NodePool {pool} is above its replicas"))
    return out


def account_pass(facts: PassFacts) -> list[NodeAccount]:
    """One row per node of the pass's cluster, by name."""
    graceful = {c.name: c for c in facts.sets[GRACEFUL].candidates}
    eventual = {c.name: c for c in facts.sets[EVENTUAL].candidates}
    rejected = {r.node.name: r for r in facts.sets[GRACEFUL].rejected}
    node_events: dict[str, list[PlanEvent]] = {}
    for e in facts.events:
        if e.kind == "Node":
            node_events.setdefault(e.name, []).append(e)
    rows = [_account_node(n, facts, graceful, eventual, rejected, node_events) for n in facts.cluster.nodes]
    return sorted(rows, key=lambda r: r.node)


def _account_node(node: NodeInfo, facts: PassFacts, graceful: Mapping[str, Candidate],
                  eventual: Mapping[str, Candidate], rejected: Mapping[str, NotCandidate],
                  node_events: Mapping[str, list[PlanEvent]]) -> NodeAccount:
    """The first outcome that holds, in this order: disrupted, excluded, blocked, kept."""
    pool = node.pool
    if node.name in facts.disrupted:
        reason, detail = facts.disrupted[node.name]
        return NodeAccount(node.name, pool, Outcome.DISRUPTED, reason, detail)
    exclusion = exclusion_of(node, facts.cluster.pools)
    if exclusion is not None:
        return NodeAccount(node.name, pool, Outcome.EXCLUDED, exclusion.reason.value, exclusion.message)
    if node.name in facts.blocked:
        return _blocked_row(node, facts.blocked[node.name], facts)
    if node.name in rejected:
        return _rejected_row(rejected[node.name], facts)
    cands = {GRACEFUL: graceful.get(node.name), EVENTUAL: eventual.get(node.name)}
    reason, detail, until = _kept_candidate(cands, facts, node_events.get(node.name, []))
    return NodeAccount(node.name, pool, Outcome.KEPT, reason.value, detail, until)


def _blocked_row(node: NodeInfo, blocked: Blocked, facts: PassFacts) -> NodeAccount:
    """A blocked node; a spent budget says what spent it, a cancel hold or calendar hold when it ends."""
    for row in facts.budgets:
        if row["nodePool"] == node.pool and blocked.budget_reason == row["reason"]:
            detail = f"{blocked.reason}: {budget_spent_by(row, facts)}"
            return NodeAccount(node.name, node.pool, Outcome.BLOCKED, BUDGET_EXHAUSTED, detail)
    hold = cancel_hold(node, facts.at)
    until = hold[1] if hold is not None else facts.held_until.get(node.pool)
    reason = blocked.event_reason or EventReason.DISRUPTION_BLOCKED
    return NodeAccount(node.name, node.pool, Outcome.BLOCKED, str(reason), blocked.reason, until)


def _rejected_row(r: NotCandidate, facts: PassFacts) -> NodeAccount:
    """A node a candidate check refused without listing it as blocked."""
    node = r.node
    if node.name in facts.exclude or node.marked_for_deletion or node.tainted_disrupted:
        return NodeAccount(node.name, node.pool, Outcome.KEPT, KeptReason.IN_FLIGHT.value, r.message)
    detail = f"{r.message} ({r.refusal.value})" if r.refusal is not None else r.message
    return NodeAccount(node.name, node.pool, Outcome.KEPT, KeptReason.NOT_A_CANDIDATE.value, detail)


def _kept_candidate(cands: Mapping[str, Candidate | None], facts: PassFacts, events: list[PlanEvent]
                    ) -> tuple[KeptReason, str, datetime | None]:
    """A candidate no command took and no rule blocked: the methods that want it say how far it got."""
    wanted = [(i, m) for i, m in enumerate(facts.methods)
              if (c := cands.get(m.disruption_class)) is not None and m.should_disrupt(c)]
    cand = cands[GRACEFUL] or cands[EVENTUAL]
    assert cand is not None
    if not wanted:
        return _unwanted(cand, facts)
    hold = facts.scratch.policies.hold_message(cand.pool.name)
    if hold is not None:
        return KeptReason.CALENDAR_HOLD, hold, facts.held_until.get(cand.pool.name)
    names = [m.name for m in facts.methods]
    won = names.index(facts.winner) if facts.winner in names else len(names)
    first = wanted[0][1].name
    if wanted[0][0] > won:
        return (KeptReason.PASS_DECIDED, f"{first} would consider it; this pass's commands came from {facts.winner} "
                                         "(one method a pass), so it waits for a later pass", None)
    if facts.settling.held and all(m.name in HELD_METHODS for i, m in wanted if i <= won):
        return KeptReason.SETTLING, facts.settling.message(), None
    return _why_not_taken(cand, " and ".join(m.name for i, m in wanted if i <= won), facts, events)


def _why_not_taken(cand: Candidate, method: str, facts: PassFacts, events: list[PlanEvent]
                   ) -> tuple[KeptReason, str, datetime | None]:
    """A candidate of a method that ran: a skipped move, its Unconsolidatable Event, a Balanced score, not reached."""
    for move in facts.skipped:
        if cand.name in move.nodes:
            return KeptReason.BELOW_SAVINGS_THRESHOLD, f"{move.method}: {move.reason}", None
    refusals = [e for e in events if e.reason == EventReason.UNCONSOLIDATABLE]
    if refusals:
        return KeptReason.NO_CHEAPER_PLACEMENT, refusals[-1].message, None
    if is_balanced(cand):
        return KeptReason.BALANCED_SCORE, f"NodePool {cand.pool.name} is Balanced: the move scores below its " \
                                          "threshold (docs/semantics.md §5.10)", None
    if facts.winner is not None:
        return (KeptReason.NOT_REACHED, f"{method} considered it; {facts.winner} started its command(s) on other "
                                        "nodes first (one command a pass), so it waits for a later pass", None)
    return KeptReason.NOT_REACHED, f"{method} stopped before it (its time limit)", None


def _unwanted(c: Candidate, facts: PassFacts) -> tuple[KeptReason, str, datetime | None]:
    """No method's filter wants the candidate: the consolidation rule that stops it, most lasting first."""
    pool, node = c.pool, c.node
    if pool.static:
        return KeptReason.STATIC_NODE_POOL, f"static NodePool {pool.name} (replicas {pool.replicas}) keeps it", None
    if pool.consolidate_after is None:
        return KeptReason.CONSOLIDATION_DISABLED, f"NodePool {pool.name} has consolidateAfter: Never", None
    if not c.empty and pool.consolidation_policy == POLICY_WHEN_EMPTY:
        return (KeptReason.WHEN_EMPTY_NOT_EMPTY, f"NodePool {pool.name} has consolidationPolicy WhenEmpty and the "
                                                 f"node has {len(c.reschedulable)} pod(s) to move", None)
    until = consolidatable_at(c)
    if until is not None and until > facts.at:
        return (KeptReason.CONSOLIDATE_AFTER, f"consolidateAfter {_duration(pool.consolidate_after)} of NodePool "
                                              f"{pool.name} runs until {format_seconds(until)}", until)
    messages = [e.message for e in facts.scratch.events if e.kind == "Node" and e.name == node.name]
    if node.itype is None or not node.capacity_type or not node.zone:
        return KeptReason.INCOMPLETE_NODE, messages[-1] if messages else "instance type or labels unknown", None
    if messages:
        return KeptReason.REFUSED_BY_METHOD, messages[-1], None
    return KeptReason.NOTHING_TO_DO, "no disruption method wants it", None


def consolidatable_at(c: Candidate) -> datetime | None:
    """When consolidateAfter has passed for the candidate (as planning/disruption/candidates.py `consolidatable`
    measures it: from the last pod event, else the NodeClaim's initialization); None: already, or never measured."""
    after, claim = c.pool.consolidate_after, c.node.claim
    if after is None or (claim is not None and claim.condition_true("Consolidatable")):
        return None
    t = claim.last_pod_event if claim is not None else None
    if t is None and claim is not None:
        t = claim.condition_time("Initialized") or claim.created
    t = t or c.node.created
    return None if t is None else t + after


def _duration(d: Any) -> str:
    seconds = int(d.total_seconds())
    return f"{seconds // 60}m" if seconds % 60 == 0 and seconds else f"{seconds}s"


# ---- what used each budget -----------------------------------------------------------------------------------

def disrupting_nodes(cluster: Cluster, exclude: Iterable[str], reason: str = "") -> dict[str, list[str]]:
    """pool -> its counted nodes that take budget before this pass: NotReady, deleting, tainted or in flight, as the
    budget rows' `disrupting` counts them (api/budgets.py and plan.budget_rows); for `Unhealthy`, NotReady alone
    does not count (node repair's own row)."""
    busy = set(exclude)
    not_ready_counts = reason != L.REASON_UNHEALTHY
    out: dict[str, list[str]] = {}
    for n in cluster.nodes:
        if not n.pool or exclusion_of(n, cluster.pools) is not None:
            continue
        if (not_ready_counts and not n.ready) or n.marked_for_deletion or n.tainted_disrupted or n.name in busy:
            out.setdefault(n.pool, []).append(n.name)
    return {p: sorted(v) for p, v in out.items()}


def spending_commands(row: Mapping[str, Any], commands: Iterable[LabelledCommand]) -> list[LabelledCommand]:
    """The commands of the pass that spend the budget of `row` (its pool and reason)."""
    return [lc for lc in commands if lc.command.node_pool == row["nodePool"]
            and BUDGET_OF_REASON.get(lc.command.reason, lc.command.reason) == row["reason"]]


def budget_spent_by(row: Mapping[str, Any], facts: PassFacts) -> str:
    """People's sentence: the pass's allowance and who used it (its commands, the disruptions in flight)."""
    used = spending_commands(row, facts.commands)
    inflight = disrupting_nodes(facts.cluster, facts.exclude, row["reason"]).get(row["nodePool"], [])
    parts = [f"{row['allowed']} allowed this pass (limit {'-' if row['limit'] is None else row['limit']}, "
             f"{row['disrupting']} disrupting)"]
    if used:
        parts.append("spent by " + "; ".join(lc.describe() for lc in used))
    if inflight:
        parts.append("in flight or NotReady: " + ", ".join(inflight))
    return ", ".join(parts)


def budget_use(budgets: Sequence[Mapping[str, Any]], commands: Sequence[LabelledCommand], cluster: Cluster,
               exclude: Iterable[str]) -> list[dict[str, Any]]:
    """`budgetUse` of `nodeflow plan -o json`: per budget row, the commands of the (first) pass that spend it and
    the nodes already disrupting (in flight, deleting or NotReady) that the row's `disrupting` counts."""
    inflight = {reason: disrupting_nodes(cluster, exclude, reason) for reason in {r["reason"] for r in budgets}}
    out = []
    for row in budgets:
        used = spending_commands(row, commands)
        out.append({"nodePool": row["nodePool"], "reason": row["reason"], "allowed": row["allowed"],
                    "commands": [{"command": lc.label, "method": lc.command.method, "nodes": list(lc.command.nodes)}
                                 for lc in used],
                    "spentByCommands": sum(len(lc.command.nodes) for lc in used),
                    "disrupting": inflight[row["reason"]].get(row["nodePool"], [])})
    return out


def hold_for_pause(rows: Sequence[NodeAccount], resume: str) -> list[NodeAccount]:
    """With the planner paused globally no command runs: each disrupted node is kept, its detail the command held."""
    return [NodeAccount(r.node, r.node_pool, Outcome.KEPT, KeptReason.PAUSED_GLOBALLY.value,
                        f"held, the planner is paused ({resume} to run it): {r.detail}")
            if r.outcome is Outcome.DISRUPTED else r for r in rows]
