"""Disruption budgets exactly as Karpenter v1 computes them (docs/semantics.md §1.2-1.5), plus an optional timeZone.

- A budget is active iff some schedule hit H satisfies H <= now < H + duration; without schedule it is
  always active; a schedule that never hits within five years makes it always active (robfig quirk).
- Its value is the integer as written (not capped) or ceil(pct * total / 100); inactive means no limit.
- Per NodePool and reason the most restrictive applicable active budget wins; a budget without reasons
  applies to all, `reasons: []` to none. One invalid budget makes the limit 0 for every reason.
- Nodes counted: managed and initialized, not InstanceTerminating; disrupting: NotReady, deleting, or
  tainted karpenter.sh/disrupted by a disruption in flight. The `Unhealthy` row (node repair, v1.15) leaves out
  nodes that are only NotReady: those are what repair is for, and would spend their own repair's budget.
- timeZone (nodeflow): hits are matched on the zone's wall clock (CronJob semantics, see api/cron.py); a
  window still lasts `duration` of real time from its hit, also across a daylight-saving change.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from api import labels
from api.cron import CronError, CronSchedule, load_zone, parse_schedule
from api.duration import check_duration, matches_pattern, parse_duration
from api.nodeclaim import INITIALIZED, INSTANCE_TERMINATING, NodeClaim
from api.nodepool import Budget, NodePool
from api.suggest import did_you_mean

MAX_INT32 = 2**31 - 1
NODES_PATTERN = r"^((100|[0-9]{1,2})%|[0-9]+)$"
SCHEDULE_PATTERN = r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$"
REASONS = labels.BUDGET_REASONS  # Empty, Drifted, Underutilized: also the row order
REASON_VALUES = labels.BUDGET_REASON_VALUES  # what `reasons` may list: the above and Unhealthy (node repair)
ALL_REASONS = REASON_VALUES  # the rows `nodeflow budgets`, the NodePool annotation and the planner show: Unhealthy last


def shown_reasons(pools: Iterable[NodePool]) -> dict[str, tuple[str, ...]]:
    """Per NodePool, the reasons the public budget rows show (`nodeflow budgets`, `nodeflow plan`'s `budgets`): the
    contract's three (Empty, Drifted, Underutilized), and `Unhealthy` only for a pool whose budgets name it, so a
    NodePool written to the contract gets exactly its three rows while one that budgets node repair sees that row.
    The planner, the NodePool annotation and the gauges keep every reason."""
    return {p.name: REASONS + ((labels.REASON_UNHEALTHY,) if any(labels.REASON_UNHEALTHY in (b.reasons or ())
                                                                 for b in p.budgets) else ())
            for p in pools}


class BudgetError(ValueError):
    """A budget Karpenter could not evaluate: it blocks every reason of its NodePool."""


def budget_problems(budget: Budget) -> list[str]:
    """Every rule of docs/semantics.md §1.1 a budget breaks, plus schedule parsing and timeZone (our addition)."""
    problems: list[str] = []
    if not matches_pattern(NODES_PATTERN, budget.nodes):
        problems.append(f"'nodes' {budget.nodes!r} must be a count or a percentage 0%-100% (pattern {NODES_PATTERN})")
    if budget.reasons is not None:
        if len(budget.reasons) > 50:
            problems.append(f"'reasons' has {len(budget.reasons)} items, at most 50 allowed")
        for r in budget.reasons:
            if r not in REASON_VALUES:
                problems.append(f"'reasons' value {r!r} is not one of {', '.join(REASON_VALUES)}"
                                f"{did_you_mean(r, REASON_VALUES)}")
        if len(set(budget.reasons)) != len(budget.reasons):
            problems.append("'reasons' must not repeat a value (it is a set)")
    if (budget.schedule is None) != (budget.duration is None):
        problems.append("'schedule' must be set with 'duration'")
    if budget.duration is not None:
        bad = check_duration("duration", budget.duration)
        if bad:
            problems.append(f"'duration' {bad} (only h and m units)")
    zone_ok = True
    if budget.time_zone is not None:
        if budget.schedule is None:
            problems.append("'timeZone' requires 'schedule'")
        try:
            load_zone(budget.time_zone)
        except CronError as exc:
            zone_ok = False
            problems.append(f"'timeZone': {exc}")
    if budget.schedule is not None:
        if not matches_pattern(SCHEDULE_PATTERN, budget.schedule):
            problems.append(
                f"'schedule' {budget.schedule!r} must be a 5-field cron expression or one of @yearly, @annually, "
                "@monthly, @weekly, @daily, @midnight, @hourly"
            )
        else:
            try:
                parse_schedule(budget.schedule, budget.time_zone if zone_ok else None)
            except CronError as exc:
                problems.append(f"'schedule' {budget.schedule!r} cannot be parsed: {exc}")
    return problems


def _schedule(budget: Budget) -> CronSchedule:
    try:
        return parse_schedule(budget.schedule or "", budget.time_zone)
    except CronError as exc:
        raise BudgetError(f"schedule {budget.schedule!r}: {exc}") from exc


def _window(budget: Budget) -> timedelta:
    try:
        return parse_duration(budget.duration or "")
    except ValueError as exc:
        raise BudgetError(f"duration {budget.duration!r}: {exc}") from exc


def _utc(at: datetime) -> datetime:
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def is_active(budget: Budget, at: datetime) -> bool:
    """Budget.IsActive: active iff the first hit after `at - duration` is not after `at`."""
    if budget.schedule is None and budget.duration is None:
        return True
    if budget.schedule is None or budget.duration is None:
        raise BudgetError("'schedule' must be set with 'duration'")
    at = _utc(at)
    hit = _schedule(budget).next_after(at - _window(budget))
    return hit is None or hit <= at  # no hit within five years: robfig's zero time, always active


def budget_value(budget: Budget, total: int) -> int:
    """The budget's node count for a pool of `total` nodes: integers as written, percentages rounded up."""
    text = budget.nodes
    if re.fullmatch(r"[0-9]+", text):
        return int(text)
    if text.endswith("%") and re.fullmatch(r"[0-9]+", text[:-1]):
        return math.ceil(int(text[:-1]) * total / 100)
    raise BudgetError(f"invalid value for nodes {text!r}: not a count or a percentage")


def allowed_disruptions(budget: Budget, at: datetime, total: int) -> int:
    """Budget.GetAllowedDisruptions: MaxInt32 when inactive, else the value; raises BudgetError (fail closed)."""
    problems = budget_problems(budget)
    if problems:
        raise BudgetError("; ".join(problems))
    if not is_active(budget, at):
        return MAX_INT32
    return budget_value(budget, total)


def applies_to(budget: Budget, reason: str) -> bool:
    """No reasons (None) means every reason; an explicit empty list means none."""
    return budget.reasons is None or reason in budget.reasons


def pool_limit(pool: NodePool, at: datetime, total: int, reason: str) -> tuple[int | None, list[str]]:
    """Most restrictive active budget value for `reason` (None: no active budget), and the invalid budgets.

    Every budget is evaluated, whatever its reasons; any error makes the limit 0 (MustGetAllowedDisruptions).
    """
    limit: int | None = None
    errors: list[str] = []
    for i, budget in enumerate(pool.budgets):
        try:
            value = allowed_disruptions(budget, at, total)
        except BudgetError as exc:
            errors.append(f"spec.disruption.budgets[{i}]: {exc}")
            continue
        if value != MAX_INT32 and applies_to(budget, reason):
            limit = value if limit is None else min(limit, value)
    if errors:
        return 0, errors
    return limit, errors


class PoolCount(NamedTuple):
    total: int
    disrupting: int


def _get(obj: dict[str, Any], *path: str) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)  # type: ignore[assignment]
    return obj


def _claims(node_claims: Iterable[NodeClaim | dict[str, Any]]) -> list[NodeClaim]:
    return [c if isinstance(c, NodeClaim) else NodeClaim.model_validate(c) for c in node_claims]


def _node_ready(node: dict[str, Any]) -> bool:
    for c in _get(node, "status", "conditions") or ():
        if isinstance(c, dict) and c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def count_nodes(
    nodes: Iterable[dict[str, Any]], node_claims: Iterable[NodeClaim | dict[str, Any]],
    not_ready_disrupts: bool = True,
) -> dict[str, PoolCount]:
    """BuildDisruptionBudgetMapping's counting (docs/semantics.md §1.5), per NodePool name.

    A Node is managed when a NodeClaim links to it (status.nodeName or providerID) or, for snapshots written
    without NodeClaims, when it carries the karpenter.sh/nodepool label. Initialized: the Node label
    karpenter.sh/initialized=true or the NodeClaim's Initialized condition. Disrupting: Ready is not True,
    or the NodeClaim or Node is deleting, or the Node carries the karpenter.sh/disrupted taint (nodeflow's
    durable form of Karpenter's in-memory MarkedForDeletion). `not_ready_disrupts` False: NotReady alone does not
    make a node disrupting (the `Unhealthy` reason's count).
    """
    counts, sick_free = count_both(nodes, node_claims)
    return counts if not_ready_disrupts else sick_free


def count_both(
    nodes: Iterable[dict[str, Any]], node_claims: Iterable[NodeClaim | dict[str, Any]],
) -> tuple[dict[str, PoolCount], dict[str, PoolCount]]:
    """`count_nodes` with NotReady counted as disrupting and without, in one walk over the nodes (a pass at 5,000
    nodes walked them twice)."""
    return count_facts(map(node_facts, nodes), map(claim_facts, _claims(node_claims)))


class NodeFacts(NamedTuple):
    """What the counting reads of a Node."""

    name: Any
    provider_id: Any
    pool: str | None  # its karpenter.sh/nodepool label
    initialized: bool  # its karpenter.sh/initialized label
    deleting: bool
    disrupted: bool  # tainted karpenter.sh/disrupted
    ready: bool


class ClaimFacts(NamedTuple):
    """What the counting reads of a NodeClaim."""

    node_name: str | None
    provider_id: str | None
    node_pool: str | None
    initialized: bool
    terminating: bool  # InstanceTerminating
    deleting: bool


def node_facts(node: dict[str, Any]) -> NodeFacts:
    """A Node's NodeFacts; derived from the object alone, so a caller may keep them while it is the same object
    (the planner's pass, planning/identity_memo.py)."""
    node_labels = _get(node, "metadata", "labels") or {}
    return NodeFacts(_get(node, "metadata", "name"), _get(node, "spec", "providerID"),
                     node_labels.get(labels.NODEPOOL_LABEL), node_labels.get(labels.INITIALIZED_LABEL) == "true",
                     _get(node, "metadata", "deletionTimestamp") is not None,
                     labels.disrupted_taint_in(_get(node, "spec", "taints")), _node_ready(node))


def claim_facts(claim: NodeClaim) -> ClaimFacts:
    """A NodeClaim model's ClaimFacts (kept likewise)."""
    return ClaimFacts(claim.node_name, claim.provider_id, claim.node_pool, claim.is_true(INITIALIZED),
                      claim.is_true(INSTANCE_TERMINATING), claim.deleting)


def count_facts(nodes: Iterable[NodeFacts], claims: Iterable[ClaimFacts]
                ) -> tuple[dict[str, PoolCount], dict[str, PoolCount]]:
    """`count_both` on the facts of the Nodes and NodeClaims."""
    claims = list(claims)
    by_node = {c.node_name: c for c in claims if c.node_name}
    by_provider = {c.provider_id: c for c in claims if c.provider_id}
    totals: dict[str, int] = {}
    disrupting: dict[str, int] = {}
    sick_free: dict[str, int] = {}  # disrupting when NotReady alone does not count
    for node in nodes:
        claim = by_node.get(node.name) or by_provider.get(node.provider_id)
        pool = node.pool or (claim.node_pool if claim else None)
        if claim is None and pool is None:
            continue  # not managed
        initialized = node.initialized or (claim is not None and claim.initialized)
        if not initialized or pool is None:
            continue
        if claim is not None and claim.terminating:
            continue
        totals[pool] = totals.get(pool, 0) + 1
        deleting = (claim is not None and claim.deleting) or node.deleting
        if deleting or node.disrupted:
            sick_free[pool] = sick_free.get(pool, 0) + 1
            disrupting[pool] = disrupting.get(pool, 0) + 1
        elif not node.ready:
            disrupting[pool] = disrupting.get(pool, 0) + 1
    return ({p: PoolCount(t, disrupting.get(p, 0)) for p, t in totals.items()},
            {p: PoolCount(t, sick_free.get(p, 0)) for p, t in totals.items()})


class BudgetRow(BaseModel):
    """One row of `nodeflow budgets -o json` (docs/contracts.md §2)."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    node_pool: str = Field(alias="nodePool")
    reason: str
    limit: int | None
    total: int
    disrupting: int
    allowed: int
    errors: list[str] = Field(default_factory=list)


def _pools(node_pools: Iterable[NodePool | dict[str, Any]]) -> list[NodePool]:
    return [p if isinstance(p, NodePool) else NodePool.model_validate(p) for p in node_pools]


def compute_budget_rows(
    node_pools: Iterable[NodePool | dict[str, Any]],
    nodes: Iterable[dict[str, Any]],
    node_claims: Iterable[NodeClaim | dict[str, Any]],
    at: datetime,
    reasons: Sequence[str] = REASONS,
    counted: tuple[dict[str, PoolCount], dict[str, PoolCount]] | None = None,
) -> list[BudgetRow]:
    """One row per NodePool (by name) and reason (`reasons`: Empty, Drifted, Underutilized unless told; ALL_REASONS
    adds Unhealthy, whose `disrupting` leaves out nodes that are only NotReady). `counted`: `count_both` of the
    nodes and NodeClaims, when the caller has it already (then they are not read).

    allowed = max(min(limit ?? total, total) - disrupting, 0).
    """
    counts, sick_free = count_both(nodes, node_claims) if counted is None else counted
    rows: list[BudgetRow] = []
    for pool in sorted(_pools(node_pools), key=lambda p: p.name):
        for reason in reasons:
            total, disrupting = (sick_free if reason == labels.REASON_UNHEALTHY else counts).get(pool.name,
                                                                                                 PoolCount(0, 0))
            limit, errors = pool_limit(pool, at, total, reason)
            cap = total if limit is None else min(limit, total)
            rows.append(
                BudgetRow(
                    node_pool=pool.name,
                    reason=reason,
                    limit=limit,
                    total=total,
                    disrupting=disrupting,
                    allowed=max(cap - disrupting, 0),
                    errors=errors,
                )
            )
    return rows


def allowed(rows: Sequence[BudgetRow], pool: str, reason: str) -> int:
    """Nodes of `pool` that may still be disrupted for `reason`; 0 for a pool or reason without a row."""
    for row in rows:
        if row.node_pool == pool and row.reason == reason:
            return row.allowed
    return 0


class Transition(NamedTuple):
    """When a budget's window next changes: `opens` True means it becomes active at `at`."""

    at: datetime
    opens: bool


MAX_CHAINED_WINDOWS = 500


def next_transition(budget: Budget, at: datetime) -> Transition | None:
    """The next instant the budget turns active (window opens) or inactive (closes); None if it never changes.

    Windows that overlap or touch are chained, as IsActive sees them. A budget without schedule, one whose
    schedule never hits, or one whose windows chain for more than MAX_CHAINED_WINDOWS hits gives None.
    """
    if budget.schedule is None or budget.duration is None:
        return None
    at = _utc(at)
    sched, window = _schedule(budget), _window(budget)
    if window <= timedelta(0):
        return None
    hit = sched.next_after(at - window)
    if hit is None:
        return None
    if hit > at:
        return Transition(hit, True)
    end = (sched.last_at_or_before(at) or hit) + window
    for _ in range(MAX_CHAINED_WINDOWS):
        last = sched.last_at_or_before(end)  # a hit in (end - window, end] keeps the window open at `end`
        if last is None or last <= end - window:
            return Transition(end, False)
        end = last + window
    return None
