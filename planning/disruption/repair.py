"""Node repair (Karpenter's NodeRepair) as a pure decision (docs/semantics.md §13).

A node whose condition matches a repair policy (Ready False or Unknown by default) for longer than the policy's
toleration (30 min by default) is replaced forcefully: its termination starts with the deadline set to now, and the
provisioner places the displaced pods. Karpenter's safety valve holds a whole NodePool back while more than 20% of
its nodes are unhealthy (rounded up: 1 of 5 may be repaired, 2 of 5 not): a zone outage or a bad AMI must not
delete half a pool. The clock comes in (`now`), so the decision is replayable and testable.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from api import events
from api.duration import DurationError, parse_duration
from api.timestamps import format_timestamp, parse_time

DEFAULT_TOLERATION = timedelta(minutes=30)
MAX_UNHEALTHY_PERCENT = 20  # Karpenter's allowedUnhealthyPercent


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


def policies_for(enabled: bool, toleration: timedelta, extra: Iterable[str] = ()) -> tuple[RepairPolicy, ...]:
    """The worker's policies: Ready False/Unknown at `toleration`, then the configured conditions; none when off."""
    if not enabled:
        return ()
    return (*default_policies(toleration), *(parse_policy(t) for t in extra))


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

    @classmethod
    def from_node(cls, raw: Mapping[str, Any], node_pool: str, repairable: bool = True) -> NodeHealth:
        conds = tuple(Condition(str(c.get("type", "")), str(c.get("status", "")),
                                parse_time(c.get("lastTransitionTime")))
                      for c in (raw.get("status") or {}).get("conditions") or ())
        return cls(str((raw.get("metadata") or {}).get("name", "")), node_pool, conds, repairable)

    def condition(self, kind: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == kind), None)


class RepairBlockReason(StrEnum):
    """Why unhealthy nodes past their toleration were not repaired. Recorded and branched on; never reworded."""

    NODEPOOL_UNHEALTHY = "NodePoolUnhealthy"  # more than MAX_UNHEALTHY_PERCENT of the pool is unhealthy


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

    def message(self) -> str:
        return events.node_repair_blocked(self.node_pool, self.unhealthy, self.total, self.allowed,
                                          MAX_UNHEALTHY_PERCENT)

    def to_public(self) -> dict[str, Any]:
        """An entry of `repairsBlocked` in `nodeflow plan -o json`."""
        return {"nodePool": self.node_pool, "reason": self.reason.value, "unhealthy": self.unhealthy,
                "nodes": self.total, "allowedUnhealthy": self.allowed, "held": list(self.nodes),
                "message": self.message()}


@dataclass(slots=True)
class RepairDecision:
    repairs: list[Repair] = field(default_factory=list)
    blocked: list[RepairBlocked] = field(default_factory=list)


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
                   policies: Sequence[RepairPolicy] = DEFAULT_POLICIES) -> RepairDecision:
    """The nodes to repair now, and the pools the 20% valve holds back. Nodes without a NodePool are left alone."""
    by_pool: dict[str, list[NodeHealth]] = {}
    for node in nodes:
        if node.node_pool:
            by_pool.setdefault(node.node_pool, []).append(node)
    out = RepairDecision()
    for pool, members in sorted(by_pool.items()):
        hits = [(n, unhealthy(n, policies)) for n in members]
        count = sum(1 for _, hit in hits if hit is not None)
        due = [r for n, hit in hits if hit is not None and n.repairable
               and (r := _due(n, pool, *hit, now)) is not None]
        if not due:
            continue
        allowed = allowed_unhealthy(len(members))
        if count > allowed:
            out.blocked.append(RepairBlocked(pool, RepairBlockReason.NODEPOOL_UNHEALTHY, count, len(members), allowed,
                                             tuple(sorted(r.node for r in due))))
            continue
        out.repairs += sorted(due, key=lambda r: (r.since + r.policy.toleration, r.node))
    return out


def _due(node: NodeHealth, pool: str, policy: RepairPolicy, cond: Condition, now: datetime) -> Repair | None:
    """A repair when the condition has lasted its toleration by `now` (the instant itself included)."""
    if cond.since is None or cond.since + policy.toleration > now:
        return None
    return Repair(node.name, pool, policy, cond.since)
