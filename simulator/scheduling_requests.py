"""What a pod asks of a node and whether the node has it: kube-scheduler's NodeResourcesFit filter.

A pod's request is computed as k8s.io/component-helpers/resource PodRequests does: the sum over its containers,
where a sidecar (an init container with `restartPolicy: Always`) adds to that sum and to every later init
container's peak, the result raised to the largest init-container peak, plus `spec.overhead`; pod-level
`spec.resources.requests` replace the cpu / memory totals (PodLevelResources). CPU is counted in millicores and
memory in bytes, as integers, so a fit is decided exactly as kube-scheduler decides it (no float rounding).
"""

from __future__ import annotations

from typing import Any

from api.quantity import QuantityError, parse_quantity

Obj = dict[str, Any]
Requests = dict[str, int]
CPU, MEMORY, PODS = "cpu", "memory", "pods"


_CACHE: dict[tuple[bool, Any], int] = {}


def quantity(name: str, value: Any) -> int:
    """A resource quantity in the scheduler's unit: millicores for cpu, the integer (rounded up) for the rest.
    Cached: a cluster repeats a handful of quantity strings, and parsing one is the scheduler's hottest step."""
    key = (name == CPU, value)
    try:
        return _CACHE[key]
    except KeyError:
        pass
    except TypeError:  # an unhashable value: not a quantity
        return 0
    try:
        q = parse_quantity(value)
    except (QuantityError, TypeError, ValueError):
        q = None
    if q is None:
        result = 0
    else:
        scaled = q * 1000 if key[0] else q
        whole = int(scaled)
        result = whole + 1 if scaled > whole else whole
    if len(_CACHE) < 100_000:
        _CACHE[key] = result
    return result


def resource_list(values: Obj | None) -> Requests:
    return {k: quantity(k, v) for k, v in (values or {}).items()}


def _add(into: Requests, more: Requests) -> None:
    for k, v in more.items():
        into[k] = into.get(k, 0) + v


def _raise_to(into: Requests, other: Requests) -> None:
    for k, v in other.items():
        if v > into.get(k, 0):
            into[k] = v


def pod_requests(pod: Obj) -> Requests:
    """The pod's effective requests (see the module docstring for the rule, and why)."""
    spec = pod.get("spec") or {}
    reqs: Requests = {}
    for c in spec.get("containers") or ():
        _add(reqs, resource_list((c.get("resources") or {}).get("requests")))
    sidecars: Requests = {}
    init_peak: Requests = {}
    for c in spec.get("initContainers") or ():
        own = resource_list((c.get("resources") or {}).get("requests"))
        if c.get("restartPolicy") == "Always":
            _add(reqs, own)
            _add(sidecars, own)
            peak = dict(sidecars)
        else:
            peak = dict(own)
            _add(peak, sidecars)
        _raise_to(init_peak, peak)
    _raise_to(reqs, init_peak)
    pod_level = resource_list((spec.get("resources") or {}).get("requests"))
    for k in (CPU, MEMORY):
        if k in pod_level:
            reqs[k] = pod_level[k]
    _add(reqs, resource_list(spec.get("overhead")))
    return reqs


def node_allocatable(node: Obj) -> Requests:
    status = node.get("status") or {}
    alloc = resource_list(status.get("allocatable") or status.get("capacity"))
    alloc.setdefault(PODS, 0)
    return alloc


def checked(request: Requests) -> list[tuple[str, int]]:
    """The requests the fit filter compares, in its order (cpu, memory, ephemeral-storage, then the rest): a zero
    request is never checked, so a pod asking nothing fits an overcommitted node."""
    return [(k, request[k]) for k in sorted(request, key=lambda k: (k not in (CPU, MEMORY, "ephemeral-storage"), k))
            if request[k] > 0 and k != PODS]


def insufficient(request: list[tuple[str, int]], allocatable: Requests, used: Requests, pod_count: int) -> list[str]:
    """The fit filter's reasons, in its order: `Too many pods`, then `Insufficient <resource>` (`request`: from
    `checked`)."""
    reasons = []
    if pod_count + 1 > allocatable.get(PODS, 0):
        reasons.append("Too many pods")
    for name, amount in request:
        if amount > allocatable.get(name, 0) - used.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return reasons
