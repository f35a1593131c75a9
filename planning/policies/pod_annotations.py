"""The pod annotations of DisruptionPolicy round two that consolidation reads (docs/semantics.md §15.9).

`nodeflow.dev/do-not-consolidate: "true"` keeps a pod's node out of consolidation only (kubernetes-sigs/karpenter#2756,
aws/karpenter-provider-aws#4756): drift and expiry still replace it. `nodeflow.dev/disruption-cost: "5"`
weighs a pod in a policy's per-pod disruption cost (§15.3): a relative weight, 1 when absent.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal, InvalidOperation

from api.policy_controls import DISRUPTION_COST_ANNOTATION, DO_NOT_CONSOLIDATE_ANNOTATION
from planning.cluster import NodeInfo, PodInfo

DEFAULT_WEIGHT = Decimal(1)
MAX_WEIGHT = Decimal(1000)  # a typo ("50000") must not make a node unconsolidatable for ever: clamp, as EvictionCost


def do_not_consolidate(pod: PodInfo) -> bool:
    """An active pod annotated `nodeflow.dev/do-not-consolidate: "true"` (any other value: no effect, as
    karpenter.sh/do-not-disrupt takes only "true" on a node)."""
    return pod.active and pod.annotations.get(DO_NOT_CONSOLIDATE_ANNOTATION) == "true"


def consolidation_block(node: NodeInfo) -> str | None:
    """Why the node is no consolidation candidate: the first pod (by key) that asks not to be consolidated."""
    # do_not_consolidate, the annotation asked first: every node's pods are walked each pass, few carry it
    pinned = sorted(p.key for p in node.pods if p.annotations.get(DO_NOT_CONSOLIDATE_ANNOTATION) == "true"
                    and p.active)
    if not pinned:
        return None
    return f'pod has "{DO_NOT_CONSOLIDATE_ANNOTATION}" annotation (Pod={pinned[0]})'


def disruption_weight(pod: PodInfo) -> Decimal:
    """The pod's `nodeflow.dev/disruption-cost`: a decimal >= 0 (clamped to MAX_WEIGHT); absent or unparsable: 1,
    as Karpenter ignores an unparsable pod-deletion-cost."""
    raw = pod.annotations.get(DISRUPTION_COST_ANNOTATION)
    if raw is None:
        return DEFAULT_WEIGHT
    try:
        value = Decimal(raw.strip())
    except (InvalidOperation, AttributeError):
        return DEFAULT_WEIGHT
    if not value.is_finite() or value < 0:
        return DEFAULT_WEIGHT
    return min(value, MAX_WEIGHT)


def disruption_units(pods: Iterable[PodInfo]) -> Decimal:
    """How many units of perPodDisruptionCost evicting `pods` costs: the sum of their weights."""
    return sum((disruption_weight(p) for p in pods), Decimal(0))
