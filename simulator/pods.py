"""Small facts about pods and nodes that several parts of the simulator ask: readiness, owners, requests."""

from __future__ import annotations

from typing import Any

from api.quantity import QuantityError, parse_cpu, parse_memory
from simulator.store import now_rfc3339


def meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def labels(obj: dict[str, Any]) -> dict[str, str]:
    return meta(obj).get("labels") or {}


def is_deleting(obj: dict[str, Any]) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def condition(obj: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


def condition_true(obj: dict[str, Any], ctype: str) -> bool:
    c = condition(obj, ctype)
    return c is not None and c.get("status") == "True"


def set_condition(obj: dict[str, Any], ctype: str, status: str, reason: str = "", message: str = "") -> bool:
    """Set a status condition in place (on a copy the caller owns); True when something changed."""
    conds = obj.setdefault("status", {}).setdefault("conditions", [])
    for c in conds:
        if c.get("type") == ctype:
            if c.get("status") == status and c.get("reason", "") == reason:
                return False
            c.update(status=status, reason=reason, message=message, lastTransitionTime=now_rfc3339())
            return True
    conds.append({"type": ctype, "status": status, "reason": reason, "message": message,
                  "lastTransitionTime": now_rfc3339()})
    return True


def pod_phase(pod: dict[str, Any]) -> str:
    return (pod.get("status") or {}).get("phase") or "Pending"


def pod_terminal(pod: dict[str, Any]) -> bool:
    return pod_phase(pod) in ("Succeeded", "Failed")


def pod_healthy(pod: dict[str, Any]) -> bool:
    """What a PodDisruptionBudget counts as healthy: running, Ready and not being deleted."""
    return not is_deleting(pod) and pod_phase(pod) == "Running" and condition_true(pod, "Ready")


def controller_ref(obj: dict[str, Any]) -> dict[str, Any] | None:
    for ref in meta(obj).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    refs = meta(obj).get("ownerReferences") or []
    return refs[0] if refs else None


def node_ready(node: dict[str, Any]) -> bool:
    return condition_true(node, "Ready")


_QUANTITY_CACHE: dict[tuple[Any, Any], float] = {}


def _quantity(value: Any, parse: Any) -> float:
    """A parsed quantity (0 when invalid); cached, since a cluster repeats a handful of request strings."""
    key = (value, parse)
    cached = _QUANTITY_CACHE.get(key)
    if cached is not None:
        return cached
    try:
        result = float(parse(value))
    except (QuantityError, TypeError, ValueError):
        result = 0.0
    if len(_QUANTITY_CACHE) < 100_000:
        _QUANTITY_CACHE[key] = result
    return result


def pod_requests(pod: dict[str, Any]) -> tuple[float, float]:
    """(cpu cores, memory bytes) requested: the sum over containers, or the largest init container if bigger."""
    spec = pod.get("spec") or {}
    cpu = mem = 0.0
    for c in spec.get("containers") or []:
        req = (c.get("resources") or {}).get("requests") or {}
        cpu += _quantity(req.get("cpu", 0), parse_cpu)
        mem += _quantity(req.get("memory", 0), parse_memory)
    for c in spec.get("initContainers") or []:
        req = (c.get("resources") or {}).get("requests") or {}
        cpu = max(cpu, _quantity(req.get("cpu", 0), parse_cpu))
        mem = max(mem, _quantity(req.get("memory", 0), parse_memory))
    return cpu, mem


def node_allocatable(node: dict[str, Any]) -> tuple[float, float, int]:
    status = node.get("status") or {}
    alloc = status.get("allocatable") or status.get("capacity") or {}
    cpu = _quantity(alloc.get("cpu", 0), parse_cpu)
    mem = _quantity(alloc.get("memory", 0), parse_memory)
    try:
        pods = int(alloc.get("pods", 110))
    except (TypeError, ValueError):
        pods = 110
    return cpu, mem, pods


def grace_seconds(pod: dict[str, Any]) -> int:
    value = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    return 30 if value is None else int(value)
