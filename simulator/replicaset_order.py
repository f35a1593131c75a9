"""Which pods a ReplicaSet scale-down deletes first: kube-controller-manager's order (controller_utils.go
`ActivePodsWithRanks.Less`, ranked by replicaset.go `getPodsToDelete`). The world must scale down as kube does, so a
controller that writes `controller.kubernetes.io/pod-deletion-cost` (nodeflow's PodDeletionCostManagement) is tested
against the real rule, not a stand-in.

In order, the first difference decides: unassigned before assigned; Pending before Unknown before Running; not Ready
before Ready; lower pod-deletion-cost first (kube: an int32, anything unparsable is 0); more of the ReplicaSet's
pods on the same node first (doubled up); Ready for less time first; more container restarts first; newer first.
Simpler than kube: the doubled-up count is over this ReplicaSet's active pods (kube also counts the other
ReplicaSets of the same Deployment), and readiness and age compare exactly (kube's LogarithmicScaleDown buckets them
by powers of two, then breaks ties on uid)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from simulator.pods import condition, condition_true, meta, pod_phase

DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}
INT32 = 2**31


def deletion_cost(pod: dict[str, Any]) -> int:
    """The pod's pod-deletion-cost: an int32, else 0 (kube's helper.GetDeletionCostFromPodAnnotations, whose error the
    controller treats as 0)."""
    raw = (meta(pod).get("annotations") or {}).get(DELETION_COST)
    try:
        value = int(str(raw).strip()) if raw is not None else 0
    except ValueError:
        return 0
    return value if -INT32 <= value < INT32 else 0


def _restarts(pod: dict[str, Any]) -> int:
    return sum(int(c.get("restartCount") or 0) for c in (pod.get("status") or {}).get("containerStatuses") or [])


def _key(pod: dict[str, Any], on_node: Counter[str]) -> tuple[Any, ...]:
    """Sort key: smaller is deleted first. Timestamps are RFC 3339 in UTC, so they compare as strings; negating
    one sorts the later first."""
    node = (pod.get("spec") or {}).get("nodeName") or ""
    ready = condition_true(pod, "Ready")
    ready_since = (condition(pod, "Ready") or {}).get("lastTransitionTime") or "" if ready else ""
    return (bool(node), PHASE_RANK.get(pod_phase(pod), 1), ready, deletion_cost(pod), -on_node[node] if node else 0,
            _Later(ready_since), -_restarts(pod), _Later(meta(pod).get("creationTimestamp") or ""))


class _Later(str):
    """A timestamp that sorts the later one first (an empty one first of all, as kube's "empty time")."""

    __slots__ = ()

    def __lt__(self, other: str) -> bool:  # type: ignore[override]
        if not self or not other:
            return not self and bool(other)
        return str.__gt__(self, other)


def scale_down_order(active: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The active pods of one ReplicaSet, the first to delete first."""
    on_node = Counter((p.get("spec") or {}).get("nodeName") or "" for p in active)
    return sorted(active, key=lambda p: _key(p, on_node))
