"""The DisruptionPolicies of one planner pass (docs/semantics.md §15): which pool has which, and what they hold back.

Built once per pass from the snapshot's DisruptionPolicy objects and the pass's clock, so every method asks the
same question the same way: is this pool in a calendar hold, when does its graceful expiry start, is this
consolidation move worth its evictions? A pool two policies select gets neither, and no voluntary disruption of
it starts until that is fixed (fail closed, like Karpenter's invalid budget; a Warning Event names both).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from api import events
from api.disruption_policy import DisruptionPolicy, PolicyConflictError, resolve_policies
from planning.disruption.commands import PolicyPool, SkippedMove
from planning.policies.calendar import CalendarBlock, CalendarHold, calendar_block


@dataclass
class PolicyView:
    """Each NodePool's policy, the pools' calendar holds at `at`, and the consolidation moves skipped so far."""

    at: datetime | None = None
    by_pool: dict[str, DisruptionPolicy] = field(default_factory=dict)
    conflicts: list[PolicyConflictError] = field(default_factory=list)
    holds: dict[str, CalendarBlock] = field(default_factory=dict)
    skipped: list[SkippedMove] = field(default_factory=list)

    @classmethod
    def build(cls, snapshot: Any, at: datetime) -> PolicyView:
        policies = list(getattr(snapshot, "disruption_policies", None) or ())
        if not policies:
            return cls(at)
        chosen, conflicts = resolve_policies(snapshot.node_pools, policies)
        holds = {c.nodepool: CalendarBlock(CalendarHold.CONFLICT, None,
                                           events.policy_conflict(c.nodepool, c.first, c.second))
                 for c in conflicts}  # fail closed: which calendar applies is unknown
        for pool, policy in chosen.items():
            block = calendar_block(policy.spec.calendar, at)
            if block is not None:
                holds[pool] = block
        return cls(at, chosen, conflicts, holds)

    def of(self, pool: str) -> DisruptionPolicy | None:
        return self.by_pool.get(pool)

    def hold(self, pool: str) -> CalendarBlock | None:
        """The calendar hold of `pool` now: no voluntary disruption of its nodes starts (None: may start)."""
        return self.holds.get(pool)

    def hold_message(self, pool: str) -> str | None:
        block = self.holds.get(pool)
        if block is None or pool not in self.by_pool:
            return None if block is None else block.message
        return f"{block.message} (DisruptionPolicy {self.by_pool[pool].name})"

    def graceful_after(self, pool: str) -> timedelta | None:
        policy = self.by_pool.get(pool)
        return policy.graceful_expire_after if policy is not None else None

    def savings_refusal(self, pools: Sequence[str], savings: float, removed_price: float, pods: int,
                        units: Decimal | None = None) -> str | None:
        """Why a move saving `savings` $/h by removing nodes costing `removed_price` $/h and evicting `pods` pods is
        not worth it under the consolidation thresholds of the pools it touches (each must be met), or None.
        `units`: the pods' summed nodeflow.dev/disruption-cost weights (§15.9); None counts each pod as 1."""
        weight = Decimal(pods) if units is None else units
        for pool in dict.fromkeys(pools):
            policy = self.by_pool.get(pool)
            rule = policy.spec.consolidation if policy is not None else None
            if rule is None:
                continue
            if rule.min_per_hour is not None or rule.per_pod_disruption_cost is not None:
                threshold = (rule.min_per_hour or Decimal(0)) + rule.pod_cost * weight
                if Decimal(str(round(savings, 6))) < threshold:
                    if weight == pods:
                        return events.savings_below(savings, float(threshold), pods, float(rule.pod_cost))
                    return _weighted_savings_below(savings, threshold, pods, weight, rule.pod_cost)
            if rule.min_savings_percent is not None and removed_price > 0:
                percent = savings / removed_price * 100
                if percent < rule.min_savings_percent:
                    return events.savings_percent_below(percent, rule.min_savings_percent)
        return None

    def skip(self, move: SkippedMove) -> None:
        if all(m.nodes != move.nodes or m.method != move.method for m in self.skipped):
            self.skipped.append(move)

    def pools_public(self, pool_names: Sequence[str]) -> list[PolicyPool]:
        """One row per pool that has a policy or a conflict (for `nodeflow plan`)."""
        conflicts = {c.nodepool: events.policy_conflict(c.nodepool, c.first, c.second) for c in self.conflicts}
        rows = []
        for name in pool_names:
            policy = self.by_pool.get(name)
            if policy is None and name not in conflicts:
                continue
            block = self.holds.get(name)
            rows.append(PolicyPool(node_pool=name, policy=policy.name if policy else None,
                                   held=block.message if block else None, held_until=block.until if block else None,
                                   conflict=conflicts.get(name), hold=block.hold.value if block else None,
                                   drain=drain_summary(policy)))
        return rows


def _weighted_savings_below(savings: float, threshold: Decimal, pods: int, units: Decimal, per_pod: Decimal) -> str:
    """events.savings_below's text when the pods' nodeflow.dev/disruption-cost weights are not all 1 (§15.9)."""
    extra = f" ({pods} pod(s) weighing {units.normalize():f} x ${events.money(float(per_pod))})" if per_pod else ""
    return f"savings ${events.money(savings)}/h below threshold ${events.money(float(threshold))}/h{extra}"


def drain_summary(policy: DisruptionPolicy | None) -> str | None:
    """`nodeflow plan`'s word on a pool's drain.jobs Wait (docs/semantics.md §15.8); None for Evict or no policy."""
    drain = policy.spec.drain if policy is not None else None
    if drain is None or drain.jobs.value != "Wait":
        return None
    bound = f"up to {drain.max_wait}" if drain.max_wait else "until the grace-period deadline"
    return f"Job pods finish before eviction, {bound}"
