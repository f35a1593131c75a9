"""A pod's effective resource requests, as kube-scheduler and Karpenter count them.

kube's resource helpers (k8s.io/component-helpers/resource PodRequests), which Karpenter's
`resources.RequestsForPods` calls: the containers' requests summed, plus every sidecar (an init container
with `restartPolicy: Always`, which keeps running beside the containers); a plain init container runs alone,
after the sidecars started before it, so it needs its own request plus theirs; the pod needs the larger of the
two, plus `spec.overhead` (RuntimeClass). docs/semantics.md §3.5.

In-place resize (kube-scheduler since 1.33, `PodResourcesOptions.UseStatusResources`, which Karpenter's
`resources.Ceiling` sets, kubernetes-sigs/karpenter#3065): a container or sidecar whose status reports
`resources` counts the larger of its spec requests, `status.containerStatuses[].resources.requests` and
`allocatedResources`, as the kubelet may hold either while a resize is under way; when the resize is
Infeasible (condition `PodResizePending`, reason `Infeasible`) the spec is never applied, so only the status
counts. Plain init containers count their spec.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from api.quantity import QuantityError, parse_cpu, parse_memory

KEYS = ("cpu", "memory", "ephemeral-storage")


@dataclass(frozen=True, slots=True)
class Requests:
    """cpu cores, memory bytes, ephemeral-storage bytes."""

    cpu: float = 0.0
    mem: int = 0
    eph: int = 0

    def __add__(self, other: Requests) -> Requests:
        return Requests(self.cpu + other.cpu, self.mem + other.mem, self.eph + other.eph)

    def max(self, other: Requests) -> Requests:
        return Requests(max(self.cpu, other.cpu), max(self.mem, other.mem), max(self.eph, other.eph))


ZERO = Requests()


@lru_cache(maxsize=8192)
def _quantity_text(key: str, text: str) -> float:
    """Unparsable counts as 0 (a snapshot is read, not validated, here). Cached: values repeat."""
    try:
        return parse_cpu(text) if key == "cpu" else float(parse_memory(text))
    except (QuantityError, TypeError, ValueError):
        return 0.0


def _quantity(key: str, value: Any) -> float:
    return 0.0 if value in (None, "") else _quantity_text(key, str(value))


def resource_list(values: Mapping[str, Any] | None) -> Requests:
    """cpu / memory / ephemeral-storage of a ResourceList (other resources are not simulated)."""
    if not values:
        return ZERO
    return Requests(_quantity("cpu", values.get("cpu")), int(_quantity("memory", values.get("memory"))),
                    int(_quantity("ephemeral-storage", values.get("ephemeral-storage"))))


def container_requests(container: Mapping[str, Any]) -> Requests:
    return resource_list((container.get("resources") or {}).get("requests"))


def is_sidecar(container: Mapping[str, Any]) -> bool:
    """An init container that keeps running (KEP-753 sidecar): `restartPolicy: Always`."""
    return container.get("restartPolicy") == "Always"


def _containers_sum(containers: Any) -> Requests:
    """Summed in plain numbers: parse_pod runs this for every pod of a snapshot."""
    cpu = mem = eph = 0.0
    for c in containers or ():
        req = (c.get("resources") or {}).get("requests")
        if req:
            cpu += _quantity("cpu", req.get("cpu"))
            mem += _quantity("memory", req.get("memory"))
            eph += _quantity("ephemeral-storage", req.get("ephemeral-storage"))
    return Requests(cpu, int(mem), int(eph))


RESIZE_PENDING = "PodResizePending"
_NOTHING_HELD: dict[str, Requests] = {}
INFEASIBLE = "Infeasible"


def resize_infeasible(status: Mapping[str, Any]) -> bool:
    """kube IsPodResizeInfeasible: the first PodResizePending condition has reason Infeasible (clusters before
    1.33 said so in `status.resize`)."""
    for c in status.get("conditions") or ():
        if c.get("type") == RESIZE_PENDING:
            return c.get("reason") == INFEASIBLE
    return status.get("resize") == INFEASIBLE


def status_requests(status: Mapping[str, Any] | None) -> dict[str, Requests]:
    """Per container name, what its status says it holds: max(resources.requests, allocatedResources), for the
    statuses that report `resources` (kube counts no others). Empty for the many pods without them."""
    out: dict[str, Requests] = {}
    if not status:
        return out
    for key in ("containerStatuses", "initContainerStatuses"):
        for cs in status.get(key) or ():
            res = cs.get("resources")
            if res is not None:
                out[cs.get("name", "")] = resource_list(res.get("requests")).max(
                    resource_list(cs.get("allocatedResources")))
    return out


def _resized(containers: Any, held: Mapping[str, Requests], infeasible: bool) -> Requests:
    """The containers summed, each at what kube-scheduler counts while a resize may be under way."""
    total = ZERO
    for c in containers or ():
        total = total + _effective(c, held, infeasible)
    return total


def _effective(c: Mapping[str, Any], held: Mapping[str, Requests], infeasible: bool) -> Requests:
    """kube determineContainerReqs: max(spec, status) with a status; the status alone when Infeasible."""
    got = held.get(c.get("name", ""))
    if got is None:
        return container_requests(c)
    return got if infeasible else got.max(container_requests(c))


def pod_requests(spec: Mapping[str, Any], status: Mapping[str, Any] | None = None) -> Requests:
    """max(containers + all sidecars, each init container + the sidecars before it) + overhead; containers and
    sidecars at their resize-aware requests when `status` reports resources."""
    held = status_requests(status) if status and ("containerStatuses" in status or
                                                  "initContainerStatuses" in status) else _NOTHING_HELD
    infeasible = bool(held) and resize_infeasible(status or {})
    total = _resized(spec.get("containers"), held, infeasible) if held else _containers_sum(spec.get("containers"))
    inits, overhead = spec.get("initContainers"), spec.get("overhead")
    if not inits and not overhead:
        return total
    sidecars = ZERO
    init_peak = ZERO
    for c in inits or ():
        if is_sidecar(c):
            req = _effective(c, held, infeasible)
            sidecars = sidecars + req
            init_peak = init_peak.max(sidecars)
        else:
            init_peak = init_peak.max(container_requests(c) + sidecars)
    return (total + sidecars).max(init_peak) + resource_list(overhead)
