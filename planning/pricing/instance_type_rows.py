"""What `nodeflow instance-types` shows: the types a NodePool may launch under an EC2NodeClass, one row each.

Per type: Karpenter's capacity and allocatable (api/allocatable.py), its well-known labels, and the offerings the
pool's requirements and the class's zones allow, sorted by the cheapest available offering (docs/contracts.md
§8). The requirement rules are the scheduler's (planning/scheduling/simulation.py `_pool_req_ok`). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from api import labels as L
from api.allocatable import extended_resources, for_node_class
from api.catalog import InstanceType, InstanceTypeCatalog, Offering
from planning.scheduling.simulation import Scheduler


def allowed_offerings(it: InstanceType, requirements: Sequence[Mapping[str, Any]],
                      zones: set[str] | None) -> list[Offering]:
    """The type's offerings (available or not) in `zones` that every requirement allows."""
    out = []
    for o in it.offerings:
        if zones is not None and o.zone not in zones:
            continue
        labels = it.labels | {L.ZONE_LABEL: o.zone, L.CAPACITY_TYPE_LABEL: o.capacity_type}
        if all(Scheduler._pool_req_ok(dict(r), labels) for r in requirements):
            out.append(o)
    return out


def row(it: InstanceType, offerings: Iterable[Offering], node_class: Any, catalog: InstanceTypeCatalog
        ) -> dict[str, Any]:
    """One type as the command's JSON shows it (quantities as Kubernetes quantity strings)."""
    res = for_node_class(it, node_class, catalog.vm_memory_overhead_percent)
    capacity = res.capacity.quantities() | {k: str(v) for k, v in extended_resources(it).items()}
    alloc = res.allocatable.quantities()
    labels = dict(it.labels) | ({L.REGION_LABEL: catalog.region} if catalog.region else {})
    return {
        "name": it.name,
        "capacity": capacity,
        "allocatable": {k: alloc[k] for k in ("cpu", "memory", "pods")},
        "labels": labels,
        "offerings": [{"zone": o.zone, "capacityType": o.capacity_type, "price": o.price, "available": o.available}
                      for o in sorted(offerings, key=lambda o: (o.price, o.zone, o.capacity_type))],
    }


def _cheapest(r: Mapping[str, Any]) -> float:
    prices = [o["price"] for o in r["offerings"] if o["available"]]
    return min(prices) if prices else float("inf")


def instance_type_rows(catalog: InstanceTypeCatalog, requirements: Sequence[Mapping[str, Any]] = (),
                       node_class: Any = None, zones: set[str] | None = None) -> list[dict[str, Any]]:
    """Every type with an allowed offering, cheapest available offering first (then by name)."""
    rows = []
    for it in catalog.instance_types:
        offs = allowed_offerings(it, requirements, zones)
        if offs:
            rows.append(row(it, offs, node_class, catalog))
    rows.sort(key=lambda r: (_cheapest(r), r["name"]))
    return rows
