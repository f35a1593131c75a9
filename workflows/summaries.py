"""The Temporal UI's words for each workflow nodeflow starts: a one-line static summary (the list's row) and
static details (markdown on the workflow's page) with the inputs of the decision that started it.

Each also carries the search attributes the start sets (NodeflowNode, NodeflowNodePool, NodeflowReason and the
first NodeflowPhase), so a row is findable and its columns filled before the workflow's first task runs: a backlog
or a worker down leaves no blank rows. Pure functions over the start inputs, so every start site (client/, the
planner and rollout workflows, the schedules) calls one of them and the texts stay alike. Safe inside the
workflow sandbox: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any, NamedTuple

from temporalio.common import SearchAttributePair, TypedSearchAttributes

from api.fleet import FleetRollout
from contracts import search_attributes as sa
from contracts.disruption import (
    DisruptionCommand,
    DisruptionPhase,
    DisruptionProgress,
    NodeRef,
    Replacement,
    StaticScaleUp,
)
from contracts.fleet import FleetPhase
from contracts.interruption import PrespinInput
from contracts.policy import RolloutPhase
from contracts.policy_controls import RolloutStart
from contracts.provisioning import LAUNCH_REASON, STATIC_LAUNCH_REASON, PodRef, ProvisioningPhase
from contracts.termination import TerminationInput, TerminationPhase

SUMMARY_LIMIT = 200  # Temporal shows one line; keep it short enough for the list's column
NAMES_SHOWN = 3  # names in a summary before "+N"
ROWS_SHOWN = 50  # table rows in details before "... and N more"
# The Temporal UI list without the scheduled passes (docs/operations.md, Temporal UI section; docs/decisions.md §14)
WORK_VIEW = 'WorkflowType NOT IN ("PlannerWorkflow", "NodeClassWorkflow")'


# Children the planner and rollout workflows started before it carried a summary only (replay keeps them so)
UI_ATTRIBUTES_PATCH = "ui-start-attributes"
DRIFT_REASON = "Drifted"
FLEET_REASON = "FleetRollout"
PRESPIN_FIRST_PHASE = "Launching"  # SpotPrespinWorkflow's phases are plain strings


class UiText(NamedTuple):
    """A workflow's static summary and static details, and the search attributes its start sets."""

    summary: str
    details: str
    attributes: tuple[SearchAttributePair[str], ...] = ()

    def kwargs(self) -> dict[str, Any]:
        """Summary and details only: what starts recorded before the start-time attributes pass (replay)."""
        return {"static_summary": self.summary, "static_details": self.details}

    def start_kwargs(self) -> dict[str, Any]:
        """start_workflow / start_child_workflow's keyword arguments: summary, details and search attributes."""
        if not self.attributes:
            return self.kwargs()
        return {**self.kwargs(), "search_attributes": TypedSearchAttributes(list(self.attributes))}


def attributes(node: str | None = None, pool: str | None = None, reason: str | None = None,
               phase: str | None = None) -> tuple[SearchAttributePair[str], ...]:
    """The known ones of the four, in sa.ALL's order; an unknown one is left unset, not set empty."""
    values = (node, pool, reason, phase)
    return tuple(SearchAttributePair(key, str(value)) for key, value in zip(sa.ALL, values, strict=True) if value)


def termination(inp: TerminationInput) -> UiText:
    """`drain general-01 (Drifted, pool general)`: one TerminationWorkflow per node."""
    summary = f"drain {inp.node_name} ({_why(inp.reason, inp.node_pool)})"
    facts = [("node", inp.node_name), ("uid", inp.node_uid), ("NodeClaim", inp.node_claim_name),
             ("NodePool", inp.node_pool), ("providerID", inp.provider_id), ("reason", inp.reason),
             ("requested by", inp.requested_by),
             ("deadline", inp.deadline.isoformat() if inp.deadline else None),  # else the NodeClaim's grace
             ("terminationGracePeriod", _duration(inp.grace_period) if inp.grace_period else None)]
    return UiText(_line(summary), f"### Terminate node `{inp.node_name}`\n\n{_facts(facts)}",
                  attributes(inp.node_name, inp.node_pool, inp.reason, TerminationPhase.PENDING))


def disruption(cmd: DisruptionCommand, by: str | None = None) -> UiText:
    """`disrupt general-03 → replace (Underutilized, pool general)`: one DisruptionWorkflow per command; `by`
    names a starter other than the planner (`rollout wave 2`). NodeflowNode is the first candidate's name."""
    summary = f"disrupt {_names(n.name for n in cmd.nodes)} → {cmd.decision} ({_why(cmd.reason, cmd.node_pool)})"
    summary += f", {by}" if by else ""
    facts = [("method", cmd.method), ("reason", cmd.reason), ("NodePool", cmd.node_pool),
             ("decision", cmd.decision), ("pods to move", str(cmd.pods)),
             ("savings", f"${cmd.savings_per_hour:.4f}/h")]
    parts = [f"### {cmd.method}: {cmd.decision} {len(cmd.nodes)} node(s)", _facts(facts),
             "#### Candidates", _node_table(cmd.nodes)]
    if cmd.replacements:
        parts += ["#### Replacements (pre-spun, must be Ready first)", _replacement_table(cmd.replacements)]
    first = cmd.nodes[0].name if cmd.nodes else None
    return UiText(_line(summary), "\n\n".join(parts),
                  attributes(first, cmd.node_pool, cmd.reason, DisruptionPhase.PENDING))


def disruption_now(p: DisruptionProgress) -> str:
    """A disruption's current details (the UI's User Metadata tab, kept up to date by the workflow): its phase,
    nodes and why, then what it waits for: `WaitingReady general-03 (Underutilized, pool general) · 0 of 1
    replacements Ready, waiting for general-x7k2p · ready by 2026-01-02T03:04:05+00:00`."""
    parts = [f"{p.phase.value} {_names(p.nodes)} ({_why(p.reason, p.node_pool)})"]
    if p.replacements:
        waiting = [r.node_claim for r in p.replacements if r.node_claim not in p.ready]
        ready = f"{len(p.replacements) - len(waiting)} of {_count(len(p.replacements), 'replacement')} Ready"
        parts.append(f"{ready}, waiting for {_names(waiting)}" if waiting else ready)
        if waiting and p.ready_deadline is not None and p.phase == DisruptionPhase.WAITING_READY:
            parts.append(f"ready by {p.ready_deadline.isoformat()}")
    if p.note:
        parts.append(p.note)
    if p.cancel_requested:
        parts.append("cancel requested")
    if p.error:
        parts.append(p.error)
    if p.unknown_signals:
        parts.append("ignored unknown signal(s) " + ", ".join(p.unknown_signals))
    return " · ".join(parts)


def pod_batch(pods: Sequence[PodRef]) -> UiText:
    """`provision for 4 pending pods (crawler/crawler-1, +3)`. The intake knows only the pods; the NodePools and
    the node count are decided inside the workflow (search attribute NodeflowNodePool, current details)."""
    summary = f"provision for {_count(len(pods), 'pending pod')} ({_names(p.key for p in pods)})"
    rows = [f"| `{p.key}` | `{p.uid}` |" for p in pods[:ROWS_SHOWN]]
    table = "\n".join(["| pod | uid |", "|---|---|", *rows]) + _more(len(pods))
    facts = [("reason", LAUNCH_REASON), ("pending pods", str(len(pods)))]
    return UiText(_line(summary), f"### Launch nodes for pending pods\n\n{_facts(facts)}\n\n{table}",
                  attributes(reason=LAUNCH_REASON, phase=ProvisioningPhase.PLANNING))


def static_scale_up(up: StaticScaleUp) -> UiText:
    """`provision 3 nodes (StaticCapacity, pool general)`: a static NodePool below its replicas."""
    summary = f"provision {_count(up.count, 'node')} ({_why(STATIC_LAUNCH_REASON, up.node_pool)})"
    facts = [("NodePool", up.node_pool), ("NodeClaims to launch", str(up.count)), ("reason", STATIC_LAUNCH_REASON)]
    return UiText(_line(summary), f"### Static NodePool `{up.node_pool}` below its replicas\n\n{_facts(facts)}\n\n"
                                  f"{_replacement_table([up.replacement])}",
                  attributes(pool=up.node_pool, reason=STATIC_LAUNCH_REASON, phase=ProvisioningPhase.PLANNING))


def prespin(inp: PrespinInput) -> UiText:
    """`pre-spin a replacement for spot-03 (SpotInterrupted, pool spot)`: before the interruption lands."""
    summary = f"pre-spin a replacement for {inp.node_name} ({_why(inp.reason, inp.node_pool)})"
    facts = [("node", inp.node_name), ("uid", inp.node_uid), ("NodePool", inp.node_pool), ("reason", inp.reason)]
    return UiText(_line(summary), f"### Replacement for interrupted node `{inp.node_name}`\n\n{_facts(facts)}\n\n"
                                  f"{_replacement_table([inp.replacement])}",
                  attributes(inp.node_name, inp.node_pool, inp.reason, PRESPIN_FIRST_PHASE))


def rollout(start: RolloutStart) -> UiText:
    """`drift rollout of NodePool general in waves 10%, 50%, 100% (Drifted)`: one per pool and drift generation."""
    waves = ", ".join(str(w) for w in start.waves.waves)
    summary = f"drift rollout of NodePool {start.node_pool} in waves {waves} ({DRIFT_REASON})"
    facts = [("NodePool", start.node_pool), ("reason", DRIFT_REASON), ("generation", start.generation),
             ("waves", waves), ("bake between waves", _duration(timedelta(seconds=start.waves.bake_seconds))),
             ("failed replacements allowed", str(start.waves.max_failed_replacements))]
    return UiText(_line(summary), f"### Roll drift out of NodePool `{start.node_pool}` in waves\n\n{_facts(facts)}",
                  attributes(pool=start.node_pool, reason=DRIFT_REASON, phase=RolloutPhase.STARTING))


def fleet(r: FleetRollout) -> UiText:
    """`fleet rollout ami-2026 (pools general, gpu): canary -> prod`: one per change across a fleet's clusters.
    NodeflowNodePool is set when every target is one pool name, the only case one value tells the truth."""
    pools = sorted({pool for _, pool in r.targets()})
    stages = " -> ".join(s.name for s in r.spec.stages)
    summary = f"fleet rollout {r.metadata.name or r.rollout_id} (pools {_names(pools)}): {stages}"
    rows = [f"| {s.name} | {', '.join(c.name for c in s.clusters)} |" for s in r.spec.stages[:ROWS_SHOWN]]
    table = "\n".join(["| stage | clusters |", "|---|---|", *rows])
    return UiText(_line(summary), f"### Fleet rollout `{r.rollout_id}`\n\n{table}",
                  attributes(pool=pools[0] if len(pools) == 1 else None, reason=FLEET_REASON, phase=FleetPhase.RUNNING))


def interruption_poller(task_queue: str) -> UiText:
    return UiText("poll the SQS interruption queue and start terminations",
                  f"One long-lived poll loop per task queue (`{task_queue}`), continued as new; every worker "
                  "replica joins it at start-up.")


def planner_pass(every: timedelta, task_queue: str) -> UiText:
    return UiText(f"planner pass (every {_duration(every)})",
                  f"Started by the `nodeflow-planner` Schedule on task queue `{task_queue}`, overlap SKIP. One pass "
                  "reads the cluster, plans, and starts a DisruptionWorkflow per command. Hide passes from the list "
                  f"with the query `{WORK_VIEW}` (docs/operations.md, Temporal UI section).")


def nodeclass_pass(every: timedelta) -> UiText:
    return UiText(f"resolve EC2NodeClasses (every {_duration(every)})",
                  "Started by the `nodeflow-nodeclass` Schedule: resolves AMIs, subnets and security groups and "
                  "writes them to each EC2NodeClass's status.")


def nodeclass_now() -> UiText:
    """A one-off resolution a local stack runs at start-up, before the Schedule's first tick."""
    return UiText("resolve EC2NodeClasses now (stack start-up)",
                  "Run once when a local stack starts (`nodeflow demo`, the soak), so launches find the classes "
                  "Ready from the first planner pass; the `nodeflow-nodeclass` Schedule runs it every minute after.")


def _why(reason: str, pool: str | None) -> str:
    return f"{reason}, pool {pool}" if pool else reason


def _names(names: Iterable[str]) -> str:
    names = list(names)
    shown = ", ".join(names[:NAMES_SHOWN])
    return f"{shown}, +{len(names) - NAMES_SHOWN}" if len(names) > NAMES_SHOWN else shown


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_LIMIT else text[:SUMMARY_LIMIT - 1] + "…"


def _facts(facts: Iterable[tuple[str, str | None]]) -> str:
    return "\n".join(f"- **{k}**: `{v}`" for k, v in facts if v)


def _node_table(nodes: Sequence[NodeRef]) -> str:
    rows = [f"| `{n.name}` | `{n.uid}` | `{n.node_claim or ''}` | `{n.provider_id or ''}` |"
            for n in nodes[:ROWS_SHOWN]]
    return "\n".join(["| node | uid | NodeClaim | providerID |", "|---|---|---|---|", *rows]) + _more(len(nodes))


def _replacement_table(replacements: Sequence[Replacement]) -> str:
    rows = [f"| {_names(r.instance_types)} | {r.capacity_type} | {r.zone or 'any'} | ${r.price:.4f}/h |"
            for r in replacements]
    return "\n".join(["| instance types (cheapest first) | capacity | zone | price |", "|---|---|---|---|", *rows])


def _more(total: int) -> str:
    return f"\n\n… and {total - ROWS_SHOWN} more" if total > ROWS_SHOWN else ""


def _duration(d: timedelta) -> str:
    s = int(d.total_seconds())
    if s % 3600 == 0 and s >= 3600:
        return f"{s // 3600}h"
    if s % 60 == 0 and s >= 60:
        return f"{s // 60}m"
    return f"{s}s"
