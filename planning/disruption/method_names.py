"""The disruption methods' names, in one place: commands, workflows, metrics and the plan JSON carry them as strings.

Light on purpose (no planner imports), so contracts/ and workflows/ can branch on a method without pulling in the
planner. A `StrEnum`, so a member is its string wherever a payload, a label or recorded history holds the name.
"""

from __future__ import annotations

from enum import StrEnum


class MethodName(StrEnum):
    EMPTINESS = "Emptiness"
    DRIFT = "Drift"
    STATIC_DRIFT = "StaticDrift"  # static NodePools; `nodeflow plan` reports it under `staticNodePools`
    MULTI_NODE_CONSOLIDATION = "MultiNodeConsolidation"
    SINGLE_NODE_CONSOLIDATION = "SingleNodeConsolidation"
    EXPIRATION = "Expiration"
    GRACEFUL_EXPIRATION = "GracefulExpiration"  # a DisruptionPolicy's gracefulExpireAfter (planning/policies)
    SPOT_RETURN = "SpotReturn"  # an on-demand fallback goes back to spot (planning/policies/spot_return.py)
    REPAIR = "Repair"  # node repair as a method since Karpenter v1.15 (repair_method.py)


# Drift in either form: replace-then-drain, never validated, held by a pool's drift back-off (docs/semantics.md §4).
DRIFT_METHODS = frozenset({MethodName.DRIFT, MethodName.STATIC_DRIFT})
# Replace-then-drain now, never validated as Karpenter validates consolidation (drift, and repair since v1.15). The
# disruption workflow tests drift and repair apart, each behind its own patch (workflows/disruption.py).
UNVALIDATED_METHODS = frozenset({*DRIFT_METHODS, MethodName.REPAIR})
CONSOLIDATION_METHODS = frozenset({MethodName.MULTI_NODE_CONSOLIDATION, MethodName.SINGLE_NODE_CONSOLIDATION})
