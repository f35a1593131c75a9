"""Well-known Kubernetes label, annotation, taint and finalizer names (Karpenter v1 spelling).

One place for the strings every part shares, so a typo cannot split the system in two.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

GROUP = "karpenter.sh"
API_VERSION = "karpenter.sh/v1"

NODEPOOL_LABEL = "karpenter.sh/nodepool"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
INITIALIZED_LABEL = "karpenter.sh/initialized"
REGISTERED_LABEL = "karpenter.sh/registered"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
ARCH_LABEL = "kubernetes.io/arch"
OS_LABEL = "kubernetes.io/os"
HOSTNAME_LABEL = "kubernetes.io/hostname"
EXCLUDE_LB_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"

DO_NOT_DISRUPT_ANNOTATION = "karpenter.sh/do-not-disrupt"
DO_NOT_REPAIR_ANNOTATION = "karpenter.sh/do-not-repair"  # on a Node: node repair leaves it alone (v1.15)
NODEPOOL_HASH_ANNOTATION = "karpenter.sh/nodepool-hash"
NODEPOOL_HASH_VERSION_ANNOTATION = "karpenter.sh/nodepool-hash-version"
NODEPOOL_HASH_VERSION = "v3"
TERMINATION_TIMESTAMP_ANNOTATION = "karpenter.sh/nodeclaim-termination-timestamp"
POD_DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"

# the tags on the instances nodeflow launches (Karpenter's, and nodeflow's claim uid that tells a same-named
# claim's instance apart)
NODECLAIM_TAG = "karpenter.sh/nodeclaim"
NODEPOOL_TAG = NODEPOOL_LABEL
NODECLAIM_UID_TAG = "nodeflow.dev/nodeclaim-uid"

# nodeflow's own annotations
PAUSED_ANNOTATION = "nodeflow.dev/paused"  # on a NodePool: "true" stops voluntary disruption of its nodes
REBALANCE_ANNOTATION = "nodeflow.dev/rebalance"  # on a NodePool: ignore | event | drain
TEMPLATE_HASH_ANNOTATION = "nodeflow.dev/template-hash"  # on a NodeClaim: hash of the template it came from
CONSOLIDATION_MODE_ANNOTATION = "nodeflow.dev/consolidation-mode"  # on a NodePool: "optimize" = CP-SAT moves
# On a pod: the pod-deletion-cost nodeflow wrote (feature gate PodDeletionCostManagement). A pod-deletion-cost equal
# to it is nodeflow's (rewritten, removed, and ignored by its own eviction cost); any other value is someone else's.
MANAGED_DELETION_COST_ANNOTATION = "nodeflow.dev/managed-deletion-cost"
DISRUPTION_ANNOTATION = "nodeflow.dev/disruption"  # on a replacement NodeClaim: the disruption that launched it
# On a NodeClaim: the id of the one TerminationWorkflow that owns its machine, written by the first to start,
# so a later path (the claim deleting after its Node is gone, a restarted watcher) joins it, never starts another.
TERMINATION_WORKFLOW_ANNOTATION = "nodeflow.dev/termination-workflow"
# On a Node whose disruption an operator cancelled (RFC 3339 times): the planner holds it from re-planning until
# held-until (planning/disruption/candidates.py); `nodeflow resume NODE` removes both.
DISRUPTION_CANCELLED_AT_ANNOTATION = "nodeflow.dev/disruption-cancelled-at"
DISRUPTION_HELD_UNTIL_ANNOTATION = "nodeflow.dev/disruption-held-until"
# on a NodePool: its drift rollout's wave, phase, bake deadline, halt reason (JSON; api/rollout_state.py)
ROLLOUT_ANNOTATION = "nodeflow.dev/rollout"
# On a NodeClaim (or a Node without one): until when (RFC 3339) the provisioner expects pending pods to land on it,
# Karpenter's nomination (planning/disruption/nomination.py): a nominated node is no disruption candidate. Kept on the
# object, not in a worker's memory, so every worker replica and every planner pass, live or `plan -f`, sees it.
NOMINATED_UNTIL_ANNOTATION = "nodeflow.dev/nominated-until"
# On a NodePool whose drift replacements failed: its drift back-off (JSON failures and until; planning/policies/
# drift_backoff.py), read by every planner pass and `nodeflow plan`, cleared by a successful drift replacement.
DRIFT_BACKOFF_ANNOTATION = "nodeflow.dev/drift-backoff"

TERMINATION_FINALIZER = "karpenter.sh/termination"
DISRUPTED_TAINT_KEY = "karpenter.sh/disrupted"
DISRUPTED_TAINT_EFFECT = "NoSchedule"
# The taint a disruption or termination puts on its node (copy it before adding `timeAdded`).
DISRUPTED_TAINT = {"key": DISRUPTED_TAINT_KEY, "effect": DISRUPTED_TAINT_EFFECT}
UNSCHEDULABLE_TAINT_KEY = "node.kubernetes.io/unschedulable"


def disrupted_taint_in(taints: Iterable[Any] | None) -> bool:
    """Whether a Node's `spec.taints` carry the disrupted taint (entries that are not objects are skipped)."""
    return any(isinstance(t, Mapping) and t.get("key") == DISRUPTED_TAINT_KEY for t in taints or ())

CRITICAL_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})

REASON_EMPTY = "Empty"
REASON_DRIFTED = "Drifted"
REASON_UNDERUTILIZED = "Underutilized"
REASON_EXPIRED = "Expired"
REASON_UNHEALTHY = "Unhealthy"  # node repair (planning/disruption/repair.py): Karpenter's disruption reason for it
BUDGET_REASONS = (REASON_EMPTY, REASON_DRIFTED, REASON_UNDERUTILIZED)
# What a budget's `reasons` may list (the CRD enum): v1.15 adds node repair's reason (kubernetes-sigs/karpenter#3311).
BUDGET_REASON_VALUES = (*BUDGET_REASONS, REASON_UNHEALTHY)

CAPACITY_SPOT = "spot"
CAPACITY_ON_DEMAND = "on-demand"
