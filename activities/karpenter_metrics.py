"""Karpenter's metrics at the events activities see: a NodeClaim disrupted, an interruption message handled.

The labels need what the event's input does not carry (the node's capacity type, the claim's
terminationGracePeriod, the pool's consolidation policy, the node's reschedulable pods), so they are read here,
best effort: a metric is never worth failing a disruption over (docs/semantics.md §19).
"""

from __future__ import annotations

import logging
from typing import Any

from api import labels
from api.interruption import InterruptionEvent, InterruptionKind
from planning.lifecycle.drain import is_reschedulable
from telemetry import karpenter_metrics as km

log = logging.getLogger(__name__)
CONSOLIDATION_REASONS = frozenset({labels.REASON_EMPTY, labels.REASON_UNDERUTILIZED})


def message_type(event: InterruptionEvent) -> str:
    """The provider's message kinds (pkg/controllers/interruption/messages/types.go) for nodeflow's."""
    if event.kind is InterruptionKind.STATE_CHANGE:
        return "instance_terminated" if event.state in ("terminated", "shutting-down") else "instance_stopped"
    return {InterruptionKind.SPOT_INTERRUPTION: "spot_interrupted",
            InterruptionKind.REBALANCE_RECOMMENDATION: "rebalance_recommendation",
            InterruptionKind.SCHEDULED_CHANGE: "scheduled_change"}[event.kind]


def record_disrupted(kube: Any, node_name: str, claim_name: str | None, node_pool: str | None, reason: str) -> None:
    """karpenter_nodeclaims_disrupted_total and karpenter_pods_disruption_initiated_total for one candidate
    handed to termination (pkg/controllers/disruption/queue.go; expiration, health, interruption likewise)."""
    try:
        node = kube.get_node(node_name) if node_name else None
        claim = kube.get_node_claim(claim_name) if claim_name else None
        node_labels = ((node or claim or {}).get("metadata") or {}).get("labels") or {}
        pool = node_pool or node_labels.get(labels.NODEPOOL_LABEL, "")
        policy = ""
        if reason in CONSOLIDATION_REASONS and pool:  # drift also flows through the queue: no policy for it
            spec = (kube.get_node_pool(pool) or {}).get("spec") or {}
            policy = km.snake(((spec.get("disruption") or {}).get("consolidationPolicy")) or "")
        pods = kube.list_node_pods(node_name) if node is not None else []
    except Exception as exc:  # best effort: count with what is known
        log.debug("karpenter disruption metric for %s: %s", node_name, exc)
        node_labels, pool, policy, pods, claim = {}, node_pool or "", "", [], None
    values = {"reason": km.snake(reason), "nodepool": pool,
              "capacity_type": node_labels.get(labels.CAPACITY_TYPE_LABEL, ""), "consolidation_policy": policy,
              "termination_mode": km.termination_mode(claim)}
    km.NODECLAIMS_DISRUPTED.labels(**values).inc()
    km.PODS_DISRUPTION_INITIATED.labels(**values).inc(sum(1 for p in pods if is_reschedulable(p)))


class Once:
    """Keys already counted by this process (an activity retried after a partial success must not count twice);
    bounded, oldest forgotten first."""

    def __init__(self, size: int = 4096) -> None:
        self._seen: dict[str, None] = {}
        self._size = size

    def first(self, key: str) -> bool:
        if key in self._seen:
            return False
        self._seen[key] = None
        if len(self._seen) > self._size:
            self._seen.pop(next(iter(self._seen)))
        return True


DISRUPTED_ONCE = Once()
