"""One planner pass over a snapshot, and the dry run until the cluster stops changing.

A pass: Expiration on its own, then node Repair (unless legacy), Emptiness, StaticDrift, Drift, Multi-node and
Single-node consolidation in that order; the first method that yields a command wins the pass (docs/semantics.md
§2). Static NodePools also get their scale-up and scale-down (planning/provisioning/static_capacity.py).
`until_stable` applies each pass's commands to an in-memory copy (pods move, nodes go, replacements arrive) and
plans again, with the clock held at `at`, until a pass yields nothing.
"""

from __future__ import annotations

import copy
import dataclasses
import gc
import hashlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from api import events
from api import labels as L
from api.allocatable import for_node_class
from api.budgets import ALL_REASONS, REASONS, claim_facts, compute_budget_rows, count_facts, node_facts
from api.catalog import InstanceTypeCatalog, load_default_catalog
from api.events import EventReason
from api.nodeclaim import NodeClaim
from planning.cluster import Cluster, Parsed, parse_pool, type_labels
from planning.disruption.candidates import (
    EVENTUAL,
    GRACEFUL,
    Candidate,
    CandidateSet,
    NodeRefusal,
    build_candidates,
    in_flight_pods,
    node_pods,
)
from planning.disruption.commands import (
    Blocked,
    Command,
    FinalState,
    PlanEvent,
    PlanResult,
    Replacement,
    ScoredMove,
    StaticPool,
)
from planning.disruption.drift import Drift, in_flight_by_pool
from planning.disruption.emptiness import Emptiness
from planning.disruption.expiration import Expiration
from planning.disruption.method import Limits, Method, PassContext
from planning.disruption.method_names import DRIFT_METHODS, MethodName
from planning.disruption.multinode import MultiNodeConsolidation
from planning.disruption.optimizer import optimizer_method
from planning.disruption.repair import (
    DEFAULT_POLICIES,
    NodeHealth,
    PoolRepair,
    Repair,
    RepairDecision,
    RepairPolicy,
    decide_repairs,
    health_fields,
)
from planning.disruption.repair_method import NodeRepair, static_pools_forceful
from planning.disruption.settling import Settling, settling, without_consolidation
from planning.disruption.singlenode import SingleNodeConsolidation
from planning.disruption.static_drift import StaticDrift
from planning.identity_memo import IdentityMemo
from planning.planner.accounting import (
    NodeAccount,
    Outcome,
    PassFacts,
    account_pass,
    budget_use,
    disrupted_by,
    label_commands,
)
from planning.policies.drift_backoff import drift_held
from planning.policies.drift_waves import rollout_block
from planning.policies.graceful_expiration import GracefulExpiration
from planning.policies.launch_controls import LaunchControls, scheduler_for
from planning.policies.spot_return import SpotReturn
from planning.policies.view import PolicyView
from planning.provisioning.static_capacity import PoolCounts, count_pools, decide_static
from planning.scheduling.simulation import Scheduler

MAX_PASSES = 200


@dataclass
class PassOutcome:
    """Everything one pass decided, plus the cluster view it decided on."""

    cluster: Cluster
    budgets: list[dict[str, Any]]
    commands: list[Command] = field(default_factory=list)
    blocked: list[Blocked] = field(default_factory=list)
    events: list[PlanEvent] = field(default_factory=list)
    computed: dict[str, int] = field(default_factory=dict)
    eligible: dict[str, int] = field(default_factory=dict)
    repair: RepairDecision = field(default_factory=RepairDecision)
    static: list[StaticPool] = field(default_factory=list)
    policies: PolicyView = field(default_factory=PolicyView)
    facts: PassFacts | None = None  # with `explain`: what planning/planner/accounting.py accounts every node from
    settling: Settling = field(default_factory=Settling)  # held: consolidation waited (disruption/settling.py)
    scored: list[ScoredMove] = field(default_factory=list)  # Balanced scores of the pass's consolidation moves
    scheduling: dict[str, int] = field(default_factory=dict)  # the pass's scheduling gauges (scheduling_counts)


# Methods whose should_disrupt means "would disrupt this node": a calendar hold lists their candidates as blocked.
# Consolidation's filter only means "may be considered", so its candidates in a held pool are dropped quietly.
DECIDING_METHODS = frozenset({MethodName.EMPTINESS, *DRIFT_METHODS, MethodName.GRACEFUL_EXPIRATION,
                              MethodName.SPOT_RETURN, MethodName.REPAIR})
BACKOFF_METHODS = DRIFT_METHODS  # a pool's drift back-off holds them (§4.4)
# the method whose commands a pool's DriftRolloutWorkflow carries out (activities/rollout.py)


def _utc(at: datetime) -> datetime:
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def budget_rows(snapshot: Any, at: datetime, cluster: Cluster, exclude: set[str],
                reasons: Sequence[str] = REASONS, memo: IdentityMemo | None = None) -> list[dict[str, Any]]:
    """api.budgets rows, with in-flight nodes the rows do not already count taken off `allowed`. With `memo` (the
    worker's cache), what the counting reads of each Node and NodeClaim is kept while it is the same object."""
    counted = None if memo is None else count_facts(memo.get_all("BudgetNode", snapshot.nodes, node_facts),
                                                     memo.get_all("BudgetClaim", snapshot.node_claims, claim_facts))
    rows = [r.model_dump(mode="json", by_alias=True)
            for r in compute_budget_rows(snapshot.node_pools, snapshot.nodes, snapshot.node_claims, at, reasons,
                                         counted)]
    extra: dict[str, int] = {}
    for name in exclude:
        node = cluster.by_name.get(name)
        if node is None or not node.pool or node.claim is None:
            continue
        if node.ready and not node.marked_for_deletion and not node.tainted_disrupted:
            extra[node.pool] = extra.get(node.pool, 0) + 1
    for row in rows:
        n = extra.get(row["nodePool"], 0)
        if n:
            row["disrupting"] += n
            row["allowed"] = max(row["allowed"] - n, 0)
    return rows


@contextmanager
def gc_paused() -> Iterator[None]:
    """A pass allocates ~10 objects per pod and frees none until it ends; the cyclic collector would walk
    the growing heap again and again (a third of the pass at 5,000 nodes), so it waits until the pass is done.
    The worker's cache read (runtime/cluster_view.py) pauses it the same way."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def run_pass(snapshot: Any, at: datetime, catalog: InstanceTypeCatalog | None = None,
             exclude_nodes: set[str] | frozenset[str] = frozenset(), limits: Limits | None = None,
             compute_all: bool = False, optimize: bool = False, parsed: Parsed | None = None,
             repair: Sequence[RepairPolicy] = DEFAULT_POLICIES, rollouts: bool = False,
             planned: Mapping[str, str] | None = None, explain: bool = False) -> PassOutcome:
    """One planner pass. With `compute_all` every method computes its commands (for benchmarks and
    explanations), but only the first method with commands contributes them, as in a real pass. `parsed`: the
    snapshot's pods and claims already parsed (the worker's watch cache keeps them; see Cluster.from_parts).
    `repair`: the node repair policies (planning/disruption/repair.py; empty: no repair). `rollouts`: drifted nodes of a
    pool whose drift rollout bakes or is halted (its NodePool's annotation) are listed as blocked, not drifted: the dry
    run's view (the worker's planner leaves a pool's drift to its DriftRolloutWorkflow instead). `planned`: where
    the in-flight commands' own plans put their pods (pod key -> node, "" for a replacement; Scheduler).
    `explain`: keep what the accounting of every node needs (`facts`; `nodeflow plan` only)."""
    with gc_paused():
        return _run_pass(snapshot, at, catalog, exclude_nodes, limits, compute_all, optimize, parsed, repair,
                         rollouts, planned, explain)


@dataclass
class PassSetup:
    """What every method of a pass starts from: the view, the budgets, the busy nodes and the candidates."""

    ctx: PassContext
    rows: list[dict[str, Any]]
    allowed: dict[str, dict[str, int]]
    busy: set[str]
    sets: dict[str, CandidateSet]
    expiring: list[Any]
    expiration_commands: list[Command]
    repairs: RepairDecision
    counts: dict[str, PoolCounts]
    static: list[StaticPool]


def prepare_pass(snapshot: Any, at: datetime, catalog: InstanceTypeCatalog | None,
                 exclude_nodes: set[str] | frozenset[str], limits: Limits | None, parsed: Parsed | None = None,
                 repair: Sequence[RepairPolicy] = DEFAULT_POLICIES, planned: Mapping[str, str] | None = None
                 ) -> PassSetup:
    """Everything a pass decides before its methods run (expiration, repair, static pools, candidates); the
    planner's pass and the validation of a consolidation command (planning/disruption/validation.py) share it."""
    at = _utc(at)
    exclude = set(exclude_nodes)
    cluster = Cluster.from_snapshot(snapshot, catalog) if parsed is None else \
        Cluster.from_parts(snapshot, parsed.pods, catalog, parsed.claims, memo=parsed.memo)
    rows = budget_rows(snapshot, at, cluster, exclude, ALL_REASONS,  # Unhealthy: node repair's (v1.15)
                       parsed.memo if parsed is not None else None)
    allowed: dict[str, dict[str, int]] = {}
    for row in rows:
        allowed.setdefault(row["reason"], {})[row["nodePool"]] = row["allowed"]
    policies = PolicyView.build(snapshot, at)
    # In-flight nodes' pods are placed first in every simulation of the pass (docs/semantics.md §2).
    # Deprecated pools and cost limits bound replacements too (planning/policies/launch_controls.py, semantics
    # §15.10-15.11).
    controls = LaunchControls.build(snapshot, cluster, at)
    expiring, expiration_commands, expiration_ctx = _expiration(cluster, controls, exclude, at, limits, policies,
                                                                planned)
    expiring_names = {c.name for c in expiring}
    repairs = _repairs(cluster, at, exclude | expiring_names, repair, _pool_repair(policies),
                       parsed.memo if parsed is not None else None)

    busy = exclude | expiring_names | {r.node for r in repairs.repairs}
    ctx = PassContext(cluster, scheduler_for(cluster, controls, busy, in_flight_pods(cluster, busy, at), planned), at,
                      limits or Limits(), policies=policies)
    ctx.events = expiration_ctx.events
    counts = count_pools(cluster, busy)  # static NodePools (planning/provisioning/static_capacity.py)
    static = decide_static(ctx, counts, busy)
    pod_blocks: dict[str, str | None] = {}
    checks: dict[str, Any] = {}
    sets = {GRACEFUL: build_candidates(cluster, at, busy, GRACEFUL, pod_blocks, checks),
            EVENTUAL: build_candidates(cluster, at, busy, EVENTUAL, pod_blocks, checks)}
    return PassSetup(ctx, rows, allowed, busy, sets, expiring, expiration_commands, repairs, counts, static)


def _expiration(cluster: Cluster, controls: LaunchControls, exclude: set[str], at: datetime, limits: Limits | None,
                policies: PolicyView, planned: Mapping[str, str] | None
                ) -> tuple[list[Candidate], list[Command], PassContext]:
    """The expiring nodes, their commands and the context that made them. Its Scheduler (a walk over every node
    and pod) is built only when a node has expired: most passes have none, and finding them needs no simulation."""
    placeholder = Scheduler(Cluster([], {}, [], [], [], cluster.catalog))
    ctx = PassContext(cluster, placeholder, at, limits or Limits(), policies=policies)
    expiration = Expiration(ctx, exclude)
    expiring = expiration.candidates()
    if expiring:
        ctx.scheduler = scheduler_for(cluster, controls, exclude, in_flight_pods(cluster, exclude, at), planned)
    return expiring, expiration.compute_commands({}, expiring), ctx


def _run_pass(snapshot: Any, at: datetime, catalog: InstanceTypeCatalog | None,
              exclude_nodes: set[str] | frozenset[str], limits: Limits | None, compute_all: bool,
              optimize: bool, parsed: Parsed | None = None,
              repair: Sequence[RepairPolicy] = DEFAULT_POLICIES, rollouts: bool = False,
              planned: Mapping[str, str] | None = None, explain: bool = False) -> PassOutcome:
    setup = prepare_pass(snapshot, at, catalog, exclude_nodes, limits, parsed, repair, planned)
    ctx = setup.ctx
    _report_pass_blockers(ctx, setup.repairs, setup.rows)
    _report_rejections(ctx, setup.sets[GRACEFUL])

    eligible: dict[str, int] = {MethodName.EXPIRATION: len(setup.expiring)}
    hold = settling(ctx.cluster, setup.busy, ctx.at)  # consolidation waits while evicted pods move (§5.11)
    methods = without_consolidation(
        _methods(ctx, setup.counts, setup.static, optimize, setup.busy, setup.repairs.due), hold)
    winner, computed, winner_name = _first_method_with_commands(
        ctx, methods, setup.sets, setup.allowed, eligible, compute_all, rollouts)
    _report_rejections(ctx, setup.sets[GRACEFUL], consolidation_only=True)
    commands = setup.expiration_commands + winner
    in_commands = {n for c in commands for n in c.nodes}
    blocked = [b for name, b in ctx.blocked.items() if name not in in_commands]
    outcome = PassOutcome(ctx.cluster, setup.rows, commands, blocked, ctx.events, computed, eligible, setup.repairs,
                          setup.static, ctx.policies, settling=hold, scored=ctx.scored,
                          scheduling=scheduling_counts(ctx.cluster, ctx.scheduler))
    if explain:
        outcome.facts = _pass_facts(setup, winner_name, blocked, optimize, set(exclude_nodes))
        outcome.facts.settling = hold
    return outcome


def scheduling_counts(cluster: Cluster, scheduler: Any) -> dict[str, int]:
    """What the pass's simulation made of v1.15's scheduling inputs (docs/semantics.md §3.5): pods given the
    cluster-default topology spread, pods counted at an in-place resize, pods a volume attachment limit kept off an
    existing node in the pass's what-ifs. Gauges, never in the plan's JSON."""
    return {"defaultSpreadPods": cluster.default_spread_pods, "podsResizing": cluster.resizing_pods,
            "volumeLimitedPods": len(scheduler.volume_limited_pods)}


def _pass_facts(setup: PassSetup, winner: str | None, blocked: list[Blocked], optimize: bool,
                exclude: set[str]) -> PassFacts:
    """What the accounting reads of a pass; its methods are built again on a copy of the context whose Events go
    nowhere, so asking their filters again changes nothing the pass reports."""
    ctx = setup.ctx
    scratch = dataclasses.replace(ctx, events=[], _event_keys=set(), blocked={}, scored=[])
    held = {p.node_pool: p.held_until for p in ctx.policies.pools_public(list(ctx.cluster.pools)) if p.held}
    return PassFacts(cluster=ctx.cluster, at=ctx.at, sets=setup.sets, scratch=scratch,
                     methods=_methods(scratch, setup.counts, setup.static, optimize, setup.busy,
                                      setup.repairs.due), winner=winner,
                     blocked={b.node: b for b in blocked}, events=list(ctx.events), budgets=setup.rows,
                     exclude=frozenset(exclude), skipped=list(ctx.policies.skipped), held_until=held)


def _report_pass_blockers(ctx: PassContext, repairs: RepairDecision, rows: list[dict[str, Any]]) -> None:
    """The pass's Events that do not depend on a method: repairs, policies, zero budgets, launch blockers, drift
    back-offs."""
    _report_repairs(ctx, repairs)
    _report_policies(ctx)
    for row in rows:
        if row["total"] > 0 and row["limit"] == 0:
            ctx.event("NodePool", row["nodePool"], EventReason.DISRUPTION_BLOCKED,
                      events.budget_blocks_reason(row["reason"]))
    _report_launch_blockers(ctx)
    _report_do_not_disrupt(ctx)
    for pool in ctx.cluster.pools.values():  # drift back-off, whichever method wins the pass
        held = drift_held(pool.annotations, ctx.at)
        if held is not None:
            ctx.event("NodePool", pool.name, EventReason.DISRUPTION_BLOCKED, held.message(pool.name))


def _report_do_not_disrupt(ctx: PassContext) -> None:
    """Karpenter's pod Events for a do-not-disrupt duration (invalid, active until T, elapsed) on the pods of the
    managed nodes a pass looks at (statenode.go ValidatePodsDisruptable; Karpenter stops at a node's first blocking
    pod, nodeflow tells every such pod). The Recorder keeps each once per 2 min."""
    for node in ctx.cluster.nodes:
        if node.claim is None or node.marked_for_deletion:
            continue
        for pod in node_pods(node).dnd_valued:  # active, with a do-not-disrupt other than "true"
            found = events.do_not_disrupt_event(pod.annotations[L.DO_NOT_DISRUPT_ANNOTATION], pod.start_time, ctx.at)
            if found is not None:
                reason, message = found
                ctx.event("Pod", pod.name, reason, message, events.REASONS[reason].type, namespace=pod.namespace)


def _methods(ctx: PassContext, counts: dict[str, PoolCounts], static: list[StaticPool], optimize: bool,
             busy: set[str] | frozenset[str] = frozenset(), due: Sequence[Repair] = ()) -> list[Method]:
    """The methods in Karpenter's order (docs/semantics.md §2), the optional optimizer before Multi-node. `busy`:
    the nodes in flight, whose pools have had their drift turn (planning/disruption/drift.py fair_order). `due`:
    the nodes node Repair replaces first (none when repair is legacy: forceful, outside the methods)."""
    taken = in_flight_by_pool(ctx.cluster, busy)
    methods: list[Method] = [*([NodeRepair(ctx, list(due), taken)] if due else []),  # v1.15: repair first
                             Emptiness(ctx), StaticDrift(ctx, counts, {p.node_pool: p.launch for p in static}),
                             Drift(ctx, taken), GracefulExpiration(ctx, taken), SpotReturn(ctx),
                             MultiNodeConsolidation(ctx),
                             SingleNodeConsolidation(ctx)]
    optimizing = optimizer_method(ctx, optimize)  # planning/disruption/optimizer.py: opt-in CP-SAT consolidation
    if optimizing is not None:
        methods.insert(len(methods) - 2, optimizing)  # before Multi-node
    return methods


def _first_method_with_commands(ctx: PassContext, methods: list[Method], sets: dict[str, CandidateSet],
                                allowed: dict[str, dict[str, int]], eligible: dict[str, int], compute_all: bool,
                                rollouts: bool) -> tuple[list[Command], dict[str, int], str | None]:
    """The first method's commands (the pass's winner) and each computed method's count; with `compute_all`
    every method computes, for benchmarks and explanations. Fills `eligible` with each method's candidates.
    Also the winning method's name (None: no method had commands)."""
    computed: dict[str, int] = {}
    winner: list[Command] = []
    winner_name: str | None = None
    for method in methods:
        if winner and not compute_all:
            break
        cands = _calendar_gate(ctx, method, [c for c in sets[method.disruption_class].candidates
                                             if method.should_disrupt(c)])
        if rollouts and method.name == MethodName.DRIFT:
            cands = _rollout_gate(ctx, cands)
        if method.name in BACKOFF_METHODS:
            cands = _backoff_gate(ctx, cands)
        eligible[method.name] = len(cands)
        if not cands:
            continue
        budgets = dict(allowed.get(getattr(method, "budget_reason", method.reason), {}))
        found = method.compute_commands(budgets, cands)
        computed[method.name] = len(found)
        if found and not winner:
            winner, winner_name = found, method.name
    return winner, computed, winner_name


def _report_policies(ctx: PassContext) -> None:
    """A Warning on each NodePool two DisruptionPolicies select; DisruptionBlocked on each pool in a calendar hold."""
    for c in ctx.policies.conflicts:
        ctx.event("NodePool", c.nodepool, EventReason.DISRUPTION_POLICY_CONFLICT,
                  events.policy_conflict(c.nodepool, c.first, c.second), "Warning")
    conflicted = {c.nodepool for c in ctx.policies.conflicts}
    for pool in ctx.policies.holds:
        if pool not in conflicted:
            ctx.event("NodePool", pool, EventReason.DISRUPTION_BLOCKED, ctx.policies.hold_message(pool) or "")


def _calendar_gate(ctx: PassContext, method: Method, cands: list[Any]) -> list[Any]:
    """The candidates whose pool is in no calendar hold; the held ones of a deciding method are listed as blocked.
    Voluntary methods only: forceful expiration and repair never come through here (docs/semantics.md §15.4)."""
    if not ctx.policies.holds:
        return cands
    out = []
    for c in cands:
        why = ctx.policies.hold_message(c.pool.name)
        if why is None:
            out.append(c)
        elif method.name in DECIDING_METHODS:
            ctx.block(c.node, why)
    return out


def _rollout_gate(ctx: PassContext, cands: list[Any]) -> list[Any]:
    """The drift candidates whose pool's drift rollout is not baking or halted; the others are listed as blocked
    with the rollout's wave and deadline or halt reason (docs/semantics.md §15.2)."""
    out = []
    for c in cands:
        why = rollout_block(c.pool)
        if why is None:
            out.append(c)
        else:
            ctx.block(c.node, why)
    return out


def _backoff_gate(ctx: PassContext, cands: list[Any]) -> list[Any]:
    """The drift candidates whose pool's drift is not backed off; the others are blocked with the pool and the
    time it waits until, and the pool gets a DisruptionBlocked Event (planning/policies/drift_backoff.py)."""
    out = []
    for c in cands:
        held = None if _rolls_out_in_waves(ctx, c.pool) else drift_held(c.pool.annotations, ctx.at)
        if held is None:
            out.append(c)
            continue
        ctx.block(c.node, held.message(c.pool.name))
        ctx.event("NodePool", c.pool.name, EventReason.DISRUPTION_BLOCKED, held.message(c.pool.name))
    return out


def _rolls_out_in_waves(ctx: PassContext, pool: Any) -> bool:
    """A pool whose drift a DriftRolloutWorkflow carries out (its policy rolls drift out in waves, or a rollout's
    note is on it) has the rollout's own answer to failed replacements: halt at maxFailedReplacements until
    `nodeflow rollout resume`. The back-off would hold a resumed rollout's wave a second time (§4.4)."""
    policy = ctx.policies.of(pool.name)
    drift = policy.spec.drift if policy is not None else None
    return bool(drift is not None and drift.waves) or L.ROLLOUT_ANNOTATION in pool.annotations


def _repairs(cluster: Cluster, at: datetime, busy: set[str], policies: Sequence[RepairPolicy],
             pools: Mapping[str, PoolRepair] | None = None, memo: IdentityMemo | None = None) -> RepairDecision:
    """Node repair (planning/disruption/repair.py) over the managed nodes: one in flight, expiring or deleting counts
    toward its pool's health but is not repaired again. `pools`: the pools' DisruptionPolicy repair settings."""
    if not policies:
        return RepairDecision()
    fields = memo.get_all("NodeHealth", [n.raw for n in cluster.nodes], health_fields) if memo is not None \
        else map(health_fields, (n.raw for n in cluster.nodes))
    health = [NodeHealth.of(f, n.pool, n.claim is not None and not n.marked_for_deletion and n.name not in busy)
              for f, n in zip(fields, cluster.nodes, strict=True)]
    return static_pools_forceful(decide_repairs(health, at, policies, pools), cluster)


def _pool_repair(policies: PolicyView) -> dict[str, PoolRepair]:
    """Each pool's `spec.repair` of its DisruptionPolicy (docs/semantics.md §13); pools without one keep the worker's
    settings. A pool two policies select keeps them too: repair is not voluntary, so it does not fail closed."""
    out: dict[str, PoolRepair] = {}
    for pool, policy in policies.by_pool.items():
        r = policy.spec.repair
        if r is not None:
            out[pool] = PoolRepair(r.enabled, r.toleration_delta, r.zone_outage_percent, policy.name)
    return out


def _report_repairs(ctx: PassContext, decision: RepairDecision) -> None:
    """A Warning on each node repaired; NodeRepairBlocked on the pool a safety valve holds back and its nodes, and
    on each node karpenter.sh/do-not-repair vetoes."""
    for r in decision.repairs:
        ctx.event("Node", r.node, EventReason.NODE_REPAIR, r.message(), "Warning")
    for r in decision.vetoed:
        ctx.event("Node", r.node, EventReason.NODE_REPAIR_BLOCKED, events.node_repair_vetoed(r.node), "Warning")
    for b in decision.blocked:
        ctx.event("NodePool", b.node_pool, EventReason.NODE_REPAIR_BLOCKED, b.message(), "Warning")
        for name in b.nodes:
            ctx.event("Node", name, EventReason.NODE_REPAIR_BLOCKED, b.message(), "Warning")


def _report_launch_blockers(ctx: PassContext) -> None:
    """An Event on each NodePool whose EC2NodeClass is missing or not Ready: it gets no new node from this pass
    (the scheduler offers none) and the launcher would refuse one (activities/nodeclass_launch.py)."""
    for pool in ctx.cluster.pools.values():
        blocker = ctx.scheduler.launch_blocker(pool)
        if blocker is not None:
            ctx.event("NodePool", pool.name, EventReason.NODE_CLASS_NOT_READY, f"no launch: {blocker}")


def _report_rejections(ctx: PassContext, rejected: CandidateSet, consolidation_only: bool = False) -> None:
    """Blocked nodes and their Events; the do-not-consolidate ones (`consolidation_only`) after the methods ran,
    so a node that drift or expiry blocked for another reason is listed with that reason (§15.9)."""
    for r in rejected.rejected:
        if r.consolidation_only != consolidation_only:
            continue
        if r.blocking:
            ctx.block(r.node, r.message, EventReason.UNCONSOLIDATABLE if consolidation_only else
                      EventReason.DISRUPTION_BLOCKED)
            if r.refusal is NodeRefusal.NOMINATED:  # consolidation would otherwise take the capacity (§3.1)
                ctx.node_event(r.node, EventReason.UNCONSOLIDATABLE, r.message)
        elif r.event:
            ctx.node_event(r.node, EventReason.DISRUPTION_BLOCKED, r.message)


def _live(cluster: Cluster) -> list[Any]:
    return [n for n in cluster.nodes if not n.marked_for_deletion]


def plan(snapshot: Any, at: datetime, catalog: InstanceTypeCatalog | None = None, until_stable: bool = False,
         exclude_nodes: set[str] | frozenset[str] = frozenset(), limits: Limits | None = None,
         max_passes: int = MAX_PASSES, optimize: bool = False, parsed: Parsed | None = None,
         repair: Sequence[RepairPolicy] = DEFAULT_POLICIES, rollouts: bool = False,
         planned: Mapping[str, str] | None = None) -> PlanResult:
    """The planner's decision for `snapshot` at `at` (docs/contracts.md §3). Pure: no I/O, the snapshot stays as is.
    `parsed`: parts of the snapshot already parsed (first pass only; later passes plan on changed copies).
    Node repairs are the first pass's (their replacements are the provisioner's, not simulated here).
    `rollouts`, `planned`: see run_pass. The collector waits until the pass's own objects are gone (freed as their
    last reference goes), not just until the pass ends, when it would walk them all once more."""
    with gc_paused():
        result = _plan(snapshot, _utc(at), catalog, until_stable, exclude_nodes, limits, max_passes, optimize,
                       parsed, repair, rollouts, planned).result
    return result


@dataclass
class ExplainedPlan:
    """A plan with every node accounted for (`nodeflow plan`, planning/planner/accounting.py): `nodes` one row per node
    of the snapshot and of the replacements the dry run added; `budget_use` what spent each first-pass budget row."""

    result: PlanResult
    nodes: list[NodeAccount] = field(default_factory=list)
    budget_use: list[dict[str, Any]] = field(default_factory=list)


def _plan(snapshot: Any, at: datetime, catalog: InstanceTypeCatalog | None, until_stable: bool,
          exclude_nodes: set[str] | frozenset[str], limits: Limits | None, max_passes: int, optimize: bool,
          parsed: Parsed | None, repair: Sequence[RepairPolicy], rollouts: bool,
          planned: Mapping[str, str] | None, explain: bool = False) -> ExplainedPlan:
    """plan(), and with `explain` the accounting of every node (each pass keeps the facts it needs)."""
    first = run_pass(snapshot, at, catalog, exclude_nodes, limits, optimize=optimize, parsed=parsed, repair=repair,
                     rollouts=rollouts, planned=planned, explain=explain)
    if not until_stable:
        removed = {n for c in first.commands for n in c.nodes}
        live = [n for n in _live(first.cluster) if n.name not in removed]
        added = [r for c in first.commands for r in c.replacements]
        final = FinalState(nodes=len(live) + len(added), passes=1,
                           cost_per_hour=round(sum(n.price for n in live) + sum(r.price for r in added), 6))
        result = PlanResult(at=at, budgets=first.budgets, commands=first.commands, blocked=first.blocked,
                            final=final, events=first.events, repairs=first.repair.repairs,
                            repairs_blocked=first.repair.blocked, repairs_vetoed=first.repair.vetoed,
                            static_node_pools=first.static, eligible=first.eligible, scored_moves=first.scored,
                            scheduling_counts=first.scheduling, **_policy_fields(first, snapshot))
        return _explained(result, first, first, {}) if explain else ExplainedPlan(result)
    commands: list[Command] = []
    outcome, snap, passes = first, snapshot, 1
    earlier: dict[str, tuple[str, str]] = {}  # nodes the commands of the passes before the last take
    while outcome.commands and passes < max_passes:
        if explain:
            labels = label_commands(outcome.commands, _numbered(commands) + 1)
            earlier |= disrupted_by(labels, prefix=f"pass {passes}, ")
        commands += outcome.commands
        snap = apply_commands(snap, outcome.commands, at=at, catalog=catalog, tag=f"p{passes}")
        outcome = run_pass(snap, at, catalog, exclude_nodes, limits, optimize=optimize, repair=repair,
                           rollouts=rollouts, planned=planned, explain=explain)
        passes += 1
    live = _live(outcome.cluster)
    final = FinalState(nodes=len(live), cost_per_hour=outcome.cluster.cost_per_hour(live), passes=passes)
    result = PlanResult(at=at, budgets=first.budgets, commands=commands, blocked=outcome.blocked, final=final,
                        events=outcome.events, repairs=first.repair.repairs, repairs_blocked=first.repair.blocked,
                        repairs_vetoed=first.repair.vetoed, static_node_pools=first.static, eligible=first.eligible,
                        scored_moves=first.scored, scheduling_counts=first.scheduling,
                        **_policy_fields(outcome, snapshot))
    return _explained(result, first, outcome, earlier, last_commands=False) if explain else ExplainedPlan(result)


def _numbered(commands: Sequence[Command]) -> int:
    """How many of `commands` the plan's public `commands` list numbers (StaticDrift is reported elsewhere)."""
    return sum(1 for c in commands if c.method != MethodName.STATIC_DRIFT)


def _explained(result: PlanResult, first: PassOutcome, last: PassOutcome, earlier: dict[str, tuple[str, str]],
               last_commands: bool = True) -> ExplainedPlan:
    """Every node's row: the nodes earlier passes' commands took, then the last pass's cluster node by node.
    The first pass's repairs and static scale-downs count as disrupted (the dry run does not apply them)."""
    assert first.facts is not None and last.facts is not None
    first_labels = label_commands(first.commands)
    if last_commands:
        last.facts.commands = first_labels
        last.facts.disrupted = disrupted_by(first_labels)
    repairs = [r.node for r in first.repair.repairs]
    removals = {r.node: p.node_pool for p in first.static for r in p.remove}
    last.facts.disrupted |= disrupted_by((), repairs, removals, prefix="" if last is first else "pass 1, ")
    rows = account_pass(last.facts)
    seen = {r.node for r in rows}
    rows += [NodeAccount(name, _pool_of(first, name), Outcome.DISRUPTED, reason, detail)
             for name, (reason, detail) in earlier.items() if name not in seen]
    rows.sort(key=lambda r: r.node)
    use = budget_use(first.budgets, first_labels, first.cluster, first.facts.exclude)
    return ExplainedPlan(result, rows, use)


def _pool_of(outcome: PassOutcome, name: str) -> str:
    node = outcome.cluster.by_name.get(name)
    return node.pool if node is not None else ""


def explain_plan(snapshot: Any, at: datetime | None = None, until_stable: bool = False,
                 catalog: InstanceTypeCatalog | None = None,
                 exclude_nodes: set[str] | frozenset[str] = frozenset(), optimize: bool = False,
                 repair: Sequence[RepairPolicy] = DEFAULT_POLICIES) -> ExplainedPlan:
    """run_plan with every node accounted for: `nodeflow plan`'s `nodes` and `budgetUse` (docs/contracts.md §3.1)."""
    return _plan(snapshot, _utc(at or datetime.now(UTC)), catalog, until_stable, exclude_nodes, None, MAX_PASSES,
                 optimize, None, repair, True, None, explain=True)


def _policy_fields(outcome: PassOutcome, snapshot: Any) -> dict[str, Any]:
    """PlanResult's policy_pools and skipped, from the pass that decided them."""
    names = [p.name for p in snapshot.node_pools]
    return {"policy_pools": outcome.policies.pools_public(names), "skipped": list(outcome.policies.skipped)}


def run_plan(snapshot: Any, at: datetime | None = None, until_stable: bool = False,
             catalog: InstanceTypeCatalog | None = None,
             exclude_nodes: set[str] | frozenset[str] = frozenset(), optimize: bool = False,
             repair: Sequence[RepairPolicy] = DEFAULT_POLICIES) -> PlanResult:
    """`nodeflow plan`'s entry point, for a snapshot file or a live cluster read into a snapshot; a pool's baking
    or halted drift rollout shows as its drifted nodes' blocked reason."""
    return plan(snapshot, at or datetime.now(UTC), catalog=catalog, until_stable=until_stable,
                exclude_nodes=exclude_nodes, optimize=optimize, repair=repair, rollouts=True)


# ---- applying commands to a copy of the snapshot -----------------------------------------------------

def _replace(snapshot: Any, **fields: Any) -> Any:
    if dataclasses.is_dataclass(snapshot):
        return dataclasses.replace(snapshot, **fields)
    if hasattr(snapshot, "model_copy"):
        return snapshot.model_copy(update=fields)
    clone = copy.copy(snapshot)
    for k, v in fields.items():
        setattr(clone, k, v)
    return clone


def _new_node_objects(rep: Replacement, name: str, pool: Any, catalog: InstanceTypeCatalog, at: datetime,
                      node_classes: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """A Ready, initialized Node and its NodeClaim for a launched replacement (cheapest allowed offering), its
    capacity and allocatable as Karpenter computes them for the pool's EC2NodeClass (api/allocatable.py)."""
    best = None
    zones = set()
    for req in rep.requirements or ():
        if req.key == L.ZONE_LABEL:
            zones = set(req.values)
    for type_name in rep.instance_types:
        it = catalog.get(type_name)
        if it is None:
            continue
        off = it.cheapest({rep.zone} if rep.zone else (zones or None), {rep.capacity_type})
        if off is not None and (best is None or off.price < best[1].price):
            best = (it, off)
    if best is None:
        raise ValueError(f"replacement {rep.instance_types} has no available offering")
    it, off = best
    node_labels = dict(pool.template_labels) if pool is not None else {}
    node_labels.update(type_labels(it))
    node_labels.update({
        L.NODEPOOL_LABEL: rep.node_pool or "", L.INSTANCE_TYPE_LABEL: it.name, L.CAPACITY_TYPE_LABEL: off.capacity_type,
        L.ZONE_LABEL: off.zone, L.INITIALIZED_LABEL: "true", L.REGISTERED_LABEL: "true", L.HOSTNAME_LABEL: name,
        L.ARCH_LABEL: it.arch, L.OS_LABEL: "linux",
    })
    ts = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    node_class = (node_classes or {}).get(pool.node_class) if pool is not None else None
    computed = for_node_class(it, node_class, catalog.vm_memory_overhead_percent)
    capacity, allocatable = computed.capacity.quantities(), computed.allocatable.quantities()
    provider_id = f"aws:///{off.zone}/i-{hashlib.sha1(name.encode()).hexdigest()[:17]}"
    node = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": node_labels, "creationTimestamp": ts},
        "spec": {"providerID": provider_id, "taints": list(pool.taints) if pool is not None else []},
        "status": {"capacity": capacity, "allocatable": allocatable,
                   "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": ts}]},
    }
    claim_meta: dict[str, Any] = {"name": name, "uid": f"uid-claim-{name}", "labels": dict(node_labels),
                                  "creationTimestamp": ts}
    if pool is not None and pool.template_hash:
        claim_meta["annotations"] = {L.TEMPLATE_HASH_ANNOTATION: pool.template_hash}
    claim = {
        "apiVersion": L.API_VERSION, "kind": "NodeClaim", "metadata": claim_meta,
        "spec": {"requirements": [r.model_dump(mode="json") for r in rep.requirements or ()]},
        "status": {"nodeName": name, "providerID": provider_id, "conditions": [
            {"type": t, "status": "True", "lastTransitionTime": ts, "reason": t}
            for t in ("Launched", "Registered", "Initialized")]},
    }
    return node, claim


def apply_commands(snapshot: Any, commands: list[Command], at: datetime | None = None,
                   catalog: InstanceTypeCatalog | None = None, tag: str = "r") -> Any:
    """A copy of `snapshot` as if `commands` completed: replacements joined, pods moved, nodes gone."""
    at = _utc(at or datetime.now(UTC))
    catalog = catalog or getattr(snapshot, "catalog", None) or load_default_catalog()
    cluster_pools = {p.name: p for p in (parse_pool(np) for np in snapshot.node_pools)}
    classes = {c.metadata.name: c for c in getattr(snapshot, "node_classes", ())}
    removed = {n for c in commands for n in c.nodes}
    new_nodes: list[dict[str, Any]] = []
    new_claims: list[Any] = []
    moves: dict[str, str] = {}
    for ci, cmd in enumerate(commands):
        names: dict[str, str] = {}
        for ri, rep in enumerate([*cmd.replacements, *cmd.provisioning]):
            digest = hashlib.sha1(f"{tag}/{ci}/{ri}/{','.join(cmd.nodes)}".encode()).hexdigest()[:6]
            name = f"{rep.node_pool or cmd.node_pool}-{tag}-{digest}"
            node, claim = _new_node_objects(rep, name, cluster_pools.get(rep.node_pool or cmd.node_pool), catalog, at,
                                            classes)
            new_nodes.append(node)
            new_claims.append(NodeClaim.model_validate(claim))
            names[f"new-{ri}"] = name
        for mv in cmd.pods:
            moves[mv.pod] = names.get(mv.to, mv.to)
    pods = []
    for raw in snapshot.pods:
        meta = raw.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"
        node_name = (raw.get("spec") or {}).get("nodeName")
        if key in moves:
            moved = copy.deepcopy(raw)
            moved.setdefault("spec", {})["nodeName"] = moves[key]
            pods.append(moved)
        elif node_name not in removed:
            pods.append(raw)
    pods += _daemon_pods_for(snapshot, new_nodes)
    nodes = [n for n in snapshot.nodes if (n.get("metadata") or {}).get("name") not in removed] + new_nodes
    claims = [c for c in snapshot.node_claims if _claim_node(c) not in removed] + new_claims
    return _replace(snapshot, nodes=nodes, pods=pods, node_claims=claims)


def _daemon_pods_for(snapshot: Any, new_nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pool's DaemonSet pods (one per DaemonSet) on each new node, so later passes count their overhead."""
    pool_of = {(n.get("metadata") or {}).get("name"): ((n.get("metadata") or {}).get("labels") or {}).get(
        L.NODEPOOL_LABEL, "") for n in snapshot.nodes}
    per_pool: dict[str, dict[str, dict[str, Any]]] = {}
    for raw in snapshot.pods:
        meta = raw.get("metadata") or {}
        owner = next((o for o in meta.get("ownerReferences") or () if o.get("kind") == "DaemonSet"), None)
        node_name = (raw.get("spec") or {}).get("nodeName")
        if owner is not None and node_name in pool_of and not meta.get("deletionTimestamp"):
            per_pool.setdefault(pool_of[node_name], {}).setdefault(owner.get("uid") or owner.get("name", ""), raw)
    out = []
    for node in new_nodes:
        meta = node["metadata"]
        for ds in per_pool.get(meta["labels"].get(L.NODEPOOL_LABEL, ""), {}).values():
            clone = copy.deepcopy(ds)
            owner_name = next(o.get("name", "") for o in clone["metadata"]["ownerReferences"]
                              if o.get("kind") == "DaemonSet")
            clone["metadata"]["name"] = f"{owner_name}-{meta['name']}"
            clone["metadata"]["uid"] = f"uid-{owner_name}-{meta['name']}"
            clone["spec"]["nodeName"] = meta["name"]
            out.append(clone)
    return out


def _claim_node(claim: Any) -> str:
    status = getattr(claim, "status", None)
    if status is not None and not isinstance(claim, dict):
        return status.node_name or ""
    return ((claim.get("status") or {}).get("nodeName")) or ""
