"""What a provisioning plan says about the DisruptionPolicies' launch controls (docs/semantics.md §15.10-15.11):
a CostLimitReached Warning on each NodePool a cost limit stopped a launch in, and the metrics
nodeflow_provisioning_blocked_total{nodepool, reason} and nodeflow_cost_limit_headroom_dollars_per_hour{policy}.

The pods themselves get FailedScheduling from the planner activity, its message naming the limit or the
deprecation (planning/provisioning/provisioner.py Exclusion.COST_LIMIT / DEPRECATED).
"""

from __future__ import annotations

from typing import Any

from api.events import EventReason
from planning.provisioning.provisioner import Exclusion
from telemetry import metrics

BLOCKING = (Exclusion.COST_LIMIT, Exclusion.DEPRECATED)


def pool_warnings(decision: Any) -> list[tuple[str, str, str]]:
    """(NodePool, reason, message) of each Warning the plan's cost limits call for."""
    out = []
    for pool, detail in sorted(decision.pools_at_cost_limit.items()):
        waiting = sum(1 for u in decision.unservable for e in u.exclusions
                      if e.node_pool == pool and e.reason is Exclusion.COST_LIMIT)
        out.append((pool, EventReason.COST_LIMIT_REACHED.value, f"{detail}; {waiting} pod(s) wait"))
    return out


def blocked_pods(decision: Any) -> dict[tuple[str, str], int]:
    """(NodePool, reason) -> pods the plan left pending that a pool would have served but for a policy control
    (its cost limit or its deprecation), counted once each, for the first such pool by weight. A pod every pool
    refuses for other reasons (taints, requirements, size) is not counted: the policies did not keep it pending."""
    out: dict[tuple[str, str], int] = {}
    for u in decision.unservable:
        e = next((e for e in u.exclusions if e.reason in BLOCKING), None)
        if e is not None:
            out[(e.node_pool, e.reason.value)] = out.get((e.node_pool, e.reason.value), 0) + 1
    return out


def record_metrics(decision: Any) -> None:
    """Count the pods policies kept pending and set each cost limit's headroom after the plan."""
    for (pool, reason), n in blocked_pods(decision).items():
        metrics.PROVISIONING_BLOCKED.labels(nodepool=pool, reason=reason).inc(n)
    for row in decision.cost_limits:
        metrics.COST_LIMIT_HEADROOM.labels(policy=row["policy"]).set(row["headroom"])
