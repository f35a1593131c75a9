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


def quantity(name: str, value: Any) -> int:
    """A resource quantity in the scheduler's unit: millicores for cpu, the integer (rounded up) for the rest."""
    try:
        q = parse_quantity(value)
    except (QuantityError, TypeError, ValueError):
        return 0
    scaled = q * 1000 if name == CPU else q
    whole = int(scaled)
    return whole + 1 if scaled > whole else whole


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


def insufficient(request: Requests, allocatable: Requests, used: Requests, pod_count: int) -> list[str]:
    """The fit filter's reasons, in its order: `Too many pods`, then `Insufficient <resource>` for each resource
    the pod requests (a zero request is never checked, so a pod asking nothing fits an overcommitted node)."""
    reasons = []
    if pod_count + 1 > allocatable.get(PODS, 0):
        reasons.append("Too many pods")
    for name in sorted(request, key=lambda k: (k not in (CPU, MEMORY, "ephemeral-storage"), k)):
        amount = request[name]
        if amount <= 0 or name == PODS:
            continue
        if amount > allocatable.get(name, 0) - used.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return reasons
