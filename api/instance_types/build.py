"""A region's catalog from what discovery read: types, zones per type, on-demand and spot prices. Pure.

Offerings as Karpenter's AWS provider builds them (pkg/providers/instancetype/offering/): one per zone the type is
offered in and capacity type it supports (SupportedUsageClasses); a spot offering without a spot price in its zone
takes the on-demand price, as Karpenter seeds its spot prices from on-demand ones until a spot price is known; a
type without an on-demand price has no offering (nothing to compare it by) and is left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from api.catalog import InstanceType, InstanceTypeCatalog, Offering
from api.instance_types.from_describe import from_describe


def offerings(item: Mapping[str, Any], zones: set[str], on_demand: float | None,
              spot: Mapping[tuple[str, str], float]) -> list[Offering]:
    """The type's offerings in `zones`, cheapest capacity type first within a zone."""
    if on_demand is None:
        return []
    classes = set(item.get("SupportedUsageClasses") or ("on-demand",))
    name = item["InstanceType"]
    out: list[Offering] = []
    for zone in sorted(zones):
        if "spot" in classes:
            out.append(Offering(zone=zone, capacity_type="spot", price=spot.get((name, zone), on_demand)))
        if "on-demand" in classes:
            out.append(Offering(zone=zone, capacity_type="on-demand", price=on_demand))
    return out


def build_catalog(region: str, items: Sequence[Mapping[str, Any]], zones: Mapping[str, set[str]],
                  on_demand: Mapping[str, float], spot: Mapping[tuple[str, str], float],
                  overhead_percent: float = 0.075, metadata: dict[str, Any] | None = None) -> InstanceTypeCatalog:
    """Every type of `items` Kubernetes can run that is offered somewhere in `zones` with a price."""
    types: list[InstanceType] = []
    for item in items:
        name = item.get("InstanceType", "")
        offs = offerings(item, zones.get(name) or set(), on_demand.get(name), spot)
        if not offs:
            continue
        it = from_describe(item, offs)
        if it is not None:
            types.append(it)
    types.sort(key=lambda t: t.name)
    return InstanceTypeCatalog(instance_types=types, vm_memory_overhead_percent=overhead_percent, region=region,
                               metadata=metadata or {"name": f"discovered-{region}"})
