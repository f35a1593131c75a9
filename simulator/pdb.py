"""PodDisruptionBudget status the way the disruption controller computes it, and whether a removal broke it.

expectedPods: for an integer minAvailable, the number of matching pods; otherwise the sum of the
replicas of the matching pods' controllers (or the pod count when a pod has no scalable controller).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

from simulator.pods import controller_ref, labels, pod_healthy
from simulator.selectors import match_label_selector_object
from simulator.store import now_rfc3339

ScaleLookup = Callable[[str, dict[str, Any]], int | None]  # (namespace, ownerRef) -> replicas


def _int_or_percent(value: Any, total: int, round_up: bool) -> int:
    """Kubernetes' GetScaledValueFromIntOrPercent, in exact arithmetic (floats make 7% of 100 round up to 8)."""
    if isinstance(value, str) and value.endswith("%"):
        scaled = Fraction(value[:-1]) * total / 100
        return math.ceil(scaled) if round_up else math.floor(scaled)
    return int(value)


def pdb_matches(pdb: dict[str, Any], pod: dict[str, Any]) -> bool:
    if (pod.get("metadata") or {}).get("namespace") != (pdb.get("metadata") or {}).get("namespace"):
        return False
    selector = (pdb.get("spec") or {}).get("selector")
    if selector is None:
        return False
    return match_label_selector_object(selector, labels(pod))


def expected_and_desired(pdb: dict[str, Any], matching: list[dict[str, Any]], scale: ScaleLookup) -> tuple[int, int]:
    """(expectedPods, desiredHealthy) of a PDB over its matching pods, as the disruption controller derives them."""
    spec = pdb.get("spec") or {}
    min_available = spec.get("minAvailable")
    max_unavailable = spec.get("maxUnavailable")
    if min_available is not None and not (isinstance(min_available, str) and min_available.endswith("%")):
        return len(matching), int(min_available)
    expected = _expected_from_controllers(matching, scale)
    if max_unavailable is not None:
        return expected, max(expected - _int_or_percent(max_unavailable, expected, round_up=True), 0)
    if min_available is not None:
        return expected, _int_or_percent(min_available, expected, round_up=True)
    return expected, expected


def removal_violates(pdb: dict[str, Any], pods: Iterable[dict[str, Any]], scale: ScaleLookup,
                     removed: dict[str, Any]) -> bool:
    """Whether removing `removed` leaves the PDB below the desiredHealthy it had just before the removal.

    The budget is judged as the controller saw it before (the pod still counts towards expectedPods and
    finds its controller's scale); health is counted after (the pod no longer serves).
    """
    uid = (removed.get("metadata") or {}).get("uid")
    matching = [p for p in pods if pdb_matches(pdb, p) and (p.get("metadata") or {}).get("uid") != uid]
    _, desired = expected_and_desired(pdb, [*matching, removed] if pdb_matches(pdb, removed) else matching, scale)
    return sum(1 for p in matching if pod_healthy(p)) < desired


def compute_status(pdb: dict[str, Any], pods: Iterable[dict[str, Any]], scale: ScaleLookup) -> dict[str, Any]:
    """The PDB status fields for the given namespace pods."""
    matching = [p for p in pods if pdb_matches(pdb, p)]
    healthy = sum(1 for p in matching if pod_healthy(p))
    expected, desired = expected_and_desired(pdb, matching, scale)
    status = dict(pdb.get("status") or {})
    status.update({
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "disruptionsAllowed": max(healthy - desired, 0),
        "observedGeneration": (pdb.get("metadata") or {}).get("generation", 1),
    })
    status.setdefault("disruptedPods", {})
    allowed = status["disruptionsAllowed"] > 0
    status["conditions"] = [{
        "type": "DisruptionAllowed",
        "status": "True" if allowed else "False",
        "reason": "SufficientPods" if allowed else "InsufficientPods",
        "message": "",
        "observedGeneration": status["observedGeneration"],
        "lastTransitionTime": _transition_time(pdb, allowed),
    }]
    return status


def _transition_time(pdb: dict[str, Any], allowed: bool) -> str:
    for c in (pdb.get("status") or {}).get("conditions") or []:
        if c.get("type") == "DisruptionAllowed" and (c.get("status") == "True") == allowed:
            return c.get("lastTransitionTime") or now_rfc3339()
    return now_rfc3339()


def _expected_from_controllers(pods: list[dict[str, Any]], scale: ScaleLookup) -> int:
    seen: dict[str, int] = {}
    loose = 0
    for p in pods:
        ref = controller_ref(p)
        replicas = scale((p.get("metadata") or {}).get("namespace") or "", ref) if ref else None
        if ref is None or replicas is None:
            loose += 1
        else:
            seen[ref.get("uid") or ref.get("name")] = replicas
    return sum(seen.values()) + loose
