"""A region's catalog from what discovery read: types, zones per type, on-demand and spot prices. Pure.

Offerings as Karpenter's AWS provider builds them (pkg/providers/instancetype/offering/base_resolver.go): one per
zone the type is offered in and capacity type it supports (SupportedUsageClasses), available only with a price.
Spot prices follow pkg/providers/pricing/pricing.go: until a spot price history has been read, a spot offering
takes the on-demand price; once one has, a zone without a spot price has none. An offering without a price is
listed at 0, unavailable: the type stays visible (`nodeflow instance-types`) but is never planned on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from api.catalog import InstanceType, InstanceTypeCatalog, Offering
from api.instance_types.from_describe import from_describe


def offerings(item: Mapping[str, Any], zones: set[str], on_demand: float | None,
              spot: Mapping[tuple[str, str], float]) -> list[Offering]:
    """The type's offerings in `zones`; `spot` empty means no spot history was read (spot takes on-demand)."""
    classes = set(item.get("SupportedUsageClasses") or ("on-demand",))
    name = item["InstanceType"]
    out: list[Offering] = []
    for zone in sorted(zones):
        if "spot" in classes:
            price = spot.get((name, zone)) if spot else on_demand
            out.append(Offering(zone=zone, capacity_type="spot", price=price or 0.0, available=price is not None))
        if "on-demand" in classes:
            out.append(Offering(zone=zone, capacity_type="on-demand", price=on_demand or 0.0,
                                available=on_demand is not None))
    return out


def build_catalog(region: str, items: Sequence[Mapping[str, Any]], zones: Mapping[str, set[str]],
                  on_demand: Mapping[str, float], spot: Mapping[tuple[str, str], float],
                  overhead_percent: float = 0.075, metadata: dict[str, Any] | None = None) -> InstanceTypeCatalog:
    """Every type of `items` Kubernetes can run that is offered somewhere in `zones`."""
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
