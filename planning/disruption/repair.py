"""Node repair (Karpenter's NodeRepair) as a pure decision (docs/semantics.md §13).

A node whose condition matches a repair policy (Ready False or Unknown by default) for longer than the policy's
toleration (30 min by default) is due for repair. By default (v1.15, kubernetes-sigs/karpenter#3311) repair is a
budgeted disruption method (planning/disruption/repair_method.py): a replacement is pre-spun, then the node drains
honouring PDBs. With `legacy` (`--legacy-node-repair`) it is replaced forcefully: its termination starts with the
deadline set to now, and the provisioner places the displaced pods. Either way: Karpenter's safety valve holds a
whole NodePool back while more than 20% of its nodes are unhealthy (rounded up: 1 of 5 may be repaired, 2 of 5 not);
a zone where more than half the nodes are unhealthy is an outage, not a node fault, and is held back too; a node
annotated karpenter.sh/do-not-repair is never repaired. A NodePool's DisruptionPolicy may switch repair off for
it, or set its own toleration and zone-outage share (`spec.repair`, PoolRepair). The clock comes in (`now`), so the
decision is replayable.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from api import events
from api import labels as L
from api.duration import DurationError, parse_duration
from api.timestamps import format_timestamp, parse_time
from planning.identity_memo import IdentityMemo

DEFAULT_TOLERATION = timedelta(minutes=30)
MAX_UNHEALTHY_PERCENT = 20  # Karpenter's allowedUnhealthyPercent
# A zone with more than this share of its nodes unhealthy is held back as an outage (kubernetes-sigs/karpenter#3031),
# once at least ZONE_OUTAGE_MIN_NODES of them are: one sick node of a two-node zone is still a node fault.
ZONE_OUTAGE_PERCENT = 50
ZONE_OUTAGE_MIN_NODES = 2


@dataclass(frozen=True, slots=True)
class RepairPolicy:
    """A node condition that counts as unhealthy when it has `status`, and how long that is tolerated."""

    condition: str
    status: str
    toleration: timedelta


def default_policies(toleration: timedelta = DEFAULT_TOLERATION) -> tuple[RepairPolicy, ...]:
    """Ready False or Unknown (the kubelet says not ready, or stopped posting status), as Karpenter's AWS provider."""
    return (RepairPolicy("Ready", "False", toleration), RepairPolicy("Ready", "Unknown", toleration))


DEFAULT_POLICIES = default_policies()


def parse_policy(text: str) -> RepairPolicy:
    """`Type=Status:Duration` (e.g. `NetworkingReady=False:10m`), as the worker's --node-repair-condition takes it."""
    kind, _, rest = text.strip().partition("=")
    status, _, duration = rest.partition(":")
    try:
        toleration = parse_duration(duration.strip())
    except DurationError as exc:
        raise ValueError(f"node repair condition {text!r}: {exc}; expected Type=Status:Duration") from exc
    if not kind.strip() or not status.strip() or toleration.total_seconds() < 0:
        raise ValueError(f"node repair condition {text!r}: expected Type=Status:Duration, "
                         "e.g. NetworkingReady=False:10m")
    return RepairPolicy(kind.strip(), status.strip(), toleration)


class RepairPolicies(tuple[RepairPolicy, ...]):
    """Repair policies that also carry how repair runs: `legacy` (forceful, no budget, no pre-spin: Karpenter's
    --legacy-node-repair) and the zone outage share. A plain tuple of policies means the defaults (not legacy)."""

    legacy: bool
    zone_outage_percent: int

    def __new__(cls, policies: Iterable[RepairPolicy] = (), legacy: bool = False,
                zone_outage_percent: int = ZONE_OUTAGE_PERCENT) -> RepairPolicies:
        out = super().__new__(cls, tuple(policies))
        out.legacy, out.zone_outage_percent = legacy, zone_outage_percent
        return out


def as_policies(policies: Iterable[RepairPolicy]) -> RepairPolicies:
    """`policies` with their mode kept (a plain sequence: the defaults); copy with this, never with tuple()."""
    return policies if isinstance(policies, RepairPolicies) else RepairPolicies(policies)


def is_legacy(policies: Sequence[RepairPolicy]) -> bool:
    """Whether repair terminates forcefully (the pre-v1.15 path) rather than as a budgeted method."""
    return bool(getattr(policies, "legacy", False))


def policies_for(enabled: bool, toleration: timedelta, extra: Iterable[str] = (), legacy: bool = False,
                 zone_outage_percent: int = ZONE_OUTAGE_PERCENT) -> RepairPolicies:
    """The worker's policies: Ready False/Unknown at `toleration`, then the configured conditions; none when off."""
    if not enabled:
        return RepairPolicies((), legacy, zone_outage_percent)
    return RepairPolicies((*default_policies(toleration), *(parse_policy(t) for t in extra)), legacy,
                          zone_outage_percent)


@dataclass(frozen=True, slots=True)
class PoolRepair:
    """A NodePool's own repair settings, from its DisruptionPolicy's `repair` (kubernetes-sigs/karpenter#2811); a
    None field keeps the worker's. `policy`: the DisruptionPolicy's name, for the messages that cite it."""

    enabled: bool = True
    toleration: timedelta | None = None
    zone_outage_percent: int | None = None
    policy: str = ""

    def policies(self, policies: Sequence[RepairPolicy]) -> Sequence[RepairPolicy]:
        """The worker's policies with this pool's toleration in each."""
        if self.toleration is None:
            return policies
        return tuple(replace(p, toleration=self.toleration) for p in policies)


WORKER_SETTINGS = PoolRepair()


@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: str
    since: datetime | None  # lastTransitionTime; None when the writer left it out


@dataclass(frozen=True, slots=True)
class NodeHealth:
    """What repair reads of a node. `repairable`: managed by a NodeClaim, not deleting and not already in flight;
    a node that is not still counts toward its pool's health."""

    name: str
    node_pool: str
    conditions: tuple[Condition, ...]
    repairable: bool = True
    zone: str = ""  # topology.kubernetes.io/zone; "" when unknown (no zone outage check)
    do_not_repair: bool = False  # karpenter.sh/do-not-repair: "true" on the Node

    @classmethod
    def from_node(cls, raw: Mapping[str, Any], node_pool: str, repairable: bool = True,
                  memo: IdentityMemo | None = None) -> NodeHealth:
        """`memo`: what the raw Node alone decides (its conditions parsed) carried between passes."""
        return cls.of(health_fields(raw) if memo is None else memo.get("NodeHealth", raw, health_fields), node_pool,
                      repairable)

    @classmethod
    def of(cls, fields: tuple[str, tuple[Condition, ...], str, bool], node_pool: str, repairable: bool = True
           ) -> NodeHealth:
        """From a Node's `health_fields` (kept between passes by the planner's memo)."""
        name, conds, zone, veto = fields
        return cls(name, node_pool, conds, repairable, zone, veto)

    def condition(self, kind: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == kind), None)


def health_fields(raw: Mapping[str, Any]) -> tuple[str, tuple[Condition, ...], str, bool]:
    """A Node's name, conditions (frozen), zone and do-not-repair veto."""
    meta = raw.get("metadata") or {}
    conds = tuple(Condition(str(c.get("type", "")), str(c.get("status", "")), parse_time(c.get("lastTransitionTime")))
                  for c in (raw.get("status") or {}).get("conditions") or ())
    veto = (meta.get("annotations") or {}).get(L.DO_NOT_REPAIR_ANNOTATION) == "true"
    return str(meta.get("name", "")), conds, str((meta.get("labels") or {}).get(L.ZONE_LABEL, "")), veto


class RepairBlockReason(StrEnum):
    """Why unhealthy nodes past their toleration were not repaired. Recorded and branched on; never reworded."""

    NODEPOOL_UNHEALTHY = "NodePoolUnhealthy"  # more than MAX_UNHEALTHY_PERCENT of the pool is unhealthy
    ZONE_OUTAGE = "ZoneOutage"  # more than the zone outage share of a zone's nodes is unhealthy
    DISABLED = "RepairDisabled"  # the pool's DisruptionPolicy sets repair.enabled: false


@dataclass(frozen=True, slots=True)
class Repair:
    """One node to replace: the policy it breaks and since when."""

    node: str
    node_pool: str
    policy: RepairPolicy
    since: datetime

    def message(self) -> str:
        return events.node_repair(self.policy.condition, self.policy.status, self.since, self.policy.toleration)

    def to_public(self) -> dict[str, Any]:
        """An entry of `repairs` in `nodeflow plan -o json` (docs/contracts.md §3)."""
        return {"node": self.node, "nodePool": self.node_pool, "condition": self.policy.condition,
                "status": self.policy.status, "since": format_timestamp(self.since),
                "tolerationSeconds": int(self.policy.toleration.total_seconds())}


@dataclass(frozen=True, slots=True)
class RepairBlocked:
    """A NodePool the safety valve holds back, with the nodes that would otherwise be repaired."""

    node_pool: str
    reason: RepairBlockReason
    unhealthy: int
    total: int
    allowed: int
    nodes: tuple[str, ...]
    zone: str = ""  # ZONE_OUTAGE: the zone; `unhealthy`, `total` and `allowed` then count the zone's nodes
    percent: int = MAX_UNHEALTHY_PERCENT
    policy: str = ""  # DISABLED: the DisruptionPolicy that switches repair off

    def message(self) -> str:
        if self.reason is RepairBlockReason.DISABLED:
            return events.node_repair_disabled(self.node_pool, self.policy)
        if self.reason is RepairBlockReason.ZONE_OUTAGE:
            return events.node_repair_zone_outage(self.node_pool, self.zone, self.unhealthy, self.total, self.percent)
        return events.node_repair_blocked(self.node_pool, self.unhealthy, self.total, self.allowed,
                                          MAX_UNHEALTHY_PERCENT)

    def to_public(self) -> dict[str, Any]:
        """An entry of `repairsBlocked` in `nodeflow plan -o json`."""
        out = {"nodePool": self.node_pool, "reason": self.reason.value, "unhealthy": self.unhealthy,
               "nodes": self.total, "allowedUnhealthy": self.allowed, "held": list(self.nodes),
               "message": self.message()}
        if self.zone:
            out["zone"] = self.zone
        if self.policy:
            out["disruptionPolicy"] = self.policy
        return out


@dataclass(slots=True)
class RepairDecision:
    """`repairs`: forceful (legacy) repairs; `due`: the nodes the Repair method may replace (budgeted, v1.15);
    `blocked`: pools the safety valves hold back; `vetoed`: nodes due but annotated karpenter.sh/do-not-repair."""

    repairs: list[Repair] = field(default_factory=list)
    blocked: list[RepairBlocked] = field(default_factory=list)
    due: list[Repair] = field(default_factory=list)
    vetoed: list[Repair] = field(default_factory=list)


def unhealthy(node: NodeHealth, policies: Sequence[RepairPolicy]) -> tuple[RepairPolicy, Condition] | None:
    """The policy the node breaks whose toleration ends first (Karpenter picks the same), else None. A condition
    without lastTransitionTime counts as unhealthy but its toleration never ends: how long is unknown."""
    found: tuple[RepairPolicy, Condition] | None = None
    end: datetime | None = None
    for policy in policies:
        cond = node.condition(policy.condition)
        if cond is None or cond.status != policy.status:
            continue
        ends = cond.since + policy.toleration if cond.since is not None else None
        if found is None or (ends is not None and (end is None or ends < end)):
            found, end = (policy, cond), ends
    return found


def allowed_unhealthy(total: int) -> int:
    """How many unhealthy nodes a pool of `total` may have and still be repaired (20%, rounded up)."""
    return math.ceil(total * MAX_UNHEALTHY_PERCENT / 100)


def decide_repairs(nodes: Iterable[NodeHealth], now: datetime,
                   policies: Sequence[RepairPolicy] = DEFAULT_POLICIES,
                   pools: Mapping[str, PoolRepair] | None = None) -> RepairDecision:
    """The nodes to repair now, the vetoed ones, and the pools held back: a pool over 20% unhealthy, a zone outage, a
    pool whose DisruptionPolicy switches repair off. `pools`: each pool's own settings (none: the worker's). Nodes
    without a NodePool are left alone. Legacy policies fill `repairs`, others `due`."""
    members = [n for n in nodes if n.node_pool]
    pools = pools or {}
    hits = {n.name: unhealthy(n, pools.get(n.node_pool, WORKER_SETTINGS).policies(policies)) for n in members}
    zones = zone_counts(members, hits)
    by_pool: dict[str, list[NodeHealth]] = {}
    for node in members:
        by_pool.setdefault(node.node_pool, []).append(node)
    out = RepairDecision()
    for pool, group in sorted(by_pool.items()):
        due = [r for n in group if (hit := hits[n.name]) is not None and n.repairable
               and (r := _due(n, pool, *hit, now)) is not None]
        veto = {n.name for n in group if n.do_not_repair}
        out.vetoed += [r for r in due if r.node in veto]
        due = [r for r in due if r.node not in veto]
        if due:
            _decide_pool(out, pool, group, due, hits, zones, pools.get(pool, WORKER_SETTINGS), policies)
    return out


def _decide_pool(out: RepairDecision, pool: str, group: Sequence[NodeHealth], due: list[Repair],
                 hits: Mapping[str, Any], zones: Mapping[str, tuple[int, int]], settings: PoolRepair,
                 policies: Sequence[RepairPolicy]) -> None:
    """One pool's due nodes: held back (repair off, the 20% valve, a zone outage) or repaired, into `out`."""
    count = sum(1 for n in group if hits[n.name] is not None)
    held = tuple(sorted(r.node for r in due))
    if not settings.enabled:
        out.blocked.append(RepairBlocked(pool, RepairBlockReason.DISABLED, count, len(group), 0, held,
                                         policy=settings.policy))
        return
    allowed = allowed_unhealthy(len(group))
    if count > allowed:
        out.blocked.append(RepairBlocked(pool, RepairBlockReason.NODEPOOL_UNHEALTHY, count, len(group), allowed, held))
        return
    percent = settings.zone_outage_percent or getattr(policies, "zone_outage_percent", ZONE_OUTAGE_PERCENT)
    outages = _outages(zones, percent)
    where = {n.name: n.zone for n in group}
    for zone, names in _by_zone([r for r in due if where[r.node] in outages], where).items():
        sick, total = outages[zone]
        out.blocked.append(RepairBlocked(pool, RepairBlockReason.ZONE_OUTAGE, sick, total, 0, tuple(sorted(names)),
                                         zone, percent, settings.policy if settings.zone_outage_percent else ""))
    due = sorted((r for r in due if where[r.node] not in outages),
                 key=lambda r: (r.since + r.policy.toleration, r.node))
    if is_legacy(policies):
        out.repairs += due
    else:
        out.due += due


def zone_counts(nodes: Sequence[NodeHealth], hits: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    """zone -> (unhealthy, nodes) over every pool's nodes with a zone label."""
    counts: dict[str, list[int]] = {}
    for n in nodes:
        if n.zone:
            c = counts.setdefault(n.zone, [0, 0])
            c[0] += hits.get(n.name) is not None
            c[1] += 1
    return {z: (sick, total) for z, (sick, total) in counts.items()}


def _outages(zones: Mapping[str, tuple[int, int]], percent: int) -> dict[str, tuple[int, int]]:
    """The zones where more than `percent`% of the nodes, and at least ZONE_OUTAGE_MIN_NODES, are unhealthy: an
    outage, whose nodes repair would only replace into the same fault."""
    return {z: (sick, total) for z, (sick, total) in zones.items()
            if sick >= ZONE_OUTAGE_MIN_NODES and sick * 100 > total * percent}


def _by_zone(repairs: Iterable[Repair], zones: Mapping[str, str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in repairs:
        out.setdefault(zones[r.node], []).append(r.node)
    return dict(sorted(out.items()))


def _due(node: NodeHealth, pool: str, policy: RepairPolicy, cond: Condition, now: datetime) -> Repair | None:
    """A repair when the condition has lasted its toleration by `now` (the instant itself included)."""
    if cond.since is None or cond.since + policy.toleration > now:
        return None
    return Repair(node.name, pool, policy, cond.since)
