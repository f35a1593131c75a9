"""NodeOverlays applied to the instance type catalog: the prices (and extended capacity) every decision reads.

Follows kubernetes-sigs/karpenter pkg/controllers/nodeoverlay (controller.go, store.go): overlays are taken by
weight (highest first; at equal weight the name later in the alphabet first, `OrderByWeight`); an offering keeps the
price of the first overlay that selects it; an overlay of the same weight as the one that already set an offering's
price (or one of a type's capacity resources) conflicts, in any NodePool, and a conflicting overlay is applied
nowhere. Per NodePool, as Karpenter: an overlay selects an offering when its requirements match the pool's name
(`karpenter.sh/nodepool`) and template labels, the type's well-known labels and the offering's zone and capacity
type (docs/semantics.md §16.2). Overlays that name no pool-level key price every pool alike, so they are evaluated
once.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from api import labels as L
from api.catalog import InstanceType, InstanceTypeCatalog, Offering, current_catalog
from api.node_overlay import NodeOverlay, OverlayRequirement, adjusted_price, by_weight
from planning.pricing.unavailable_offerings import replaced
from planning.selectors import match_requirement

OfferingKey = tuple[str, str]  # (zone, capacity type) within one instance type


@dataclass
class _PriceUpdate:
    change: str
    weight: int  # the lowest weight that selected the offering so far


@dataclass
class _CapacityUpdate:
    resources: dict[str, str]
    lowest: dict[str, str]  # the resources of the lowest-weight overlay so far
    weight: int


PoolLabels = Mapping[str, str]  # a NodePool's name label and template labels (`overlay_pool_labels`)


@dataclass
class OverlayResult:
    """What the overlays did: the catalog with their prices (for no pool in particular, and per NodePool when
    some overlay names a pool-level label), each type's added capacity, and who conflicted."""

    catalog: InstanceTypeCatalog
    pools: dict[str, InstanceTypeCatalog] = field(default_factory=dict)  # pool -> its catalog (when they differ)
    capacity: dict[str, dict[str, str]] = field(default_factory=dict)  # type -> extended resources added
    priced: dict[str, int] = field(default_factory=dict)  # overlay -> offerings whose price it decided (most in a pool)
    gave_capacity: dict[str, int] = field(default_factory=dict)  # overlay -> types it added a resource to (same)
    conflicts: list[str] = field(default_factory=list)  # applied nowhere (Karpenter: ValidationSucceeded False)


def _matches(req: OverlayRequirement, have: Mapping[str, str]) -> bool:
    return match_requirement(req.key, req.operator, req.values, have)  # Gte and Lte as well (planning/selectors.py)


_OFFERING_KEYS = (L.ZONE_LABEL, L.CAPACITY_TYPE_LABEL)


def overlay_pool_labels(name: str, template_labels: Mapping[str, str]) -> dict[str, str]:
    """The labels a pool adds to its types for overlays (Karpenter's getOverlaidOfferings): its template labels and
    its name."""
    return {**template_labels, L.NODEPOOL_LABEL: name}


def selected_offerings(overlay: NodeOverlay, it: InstanceType, pool: PoolLabels | None = None) -> list[Offering]:
    """The offerings of `it` the overlay's requirements select in `pool` (none: it does not select the type). The
    type's own labels are checked once, the zone and capacity type per offering (700 types x 10 overlays stay
    cheap)."""
    reqs = overlay.spec.requirements
    type_labels = {**pool, **it.labels} if pool else it.labels
    if not all(_matches(r, type_labels) for r in reqs if r.key not in _OFFERING_KEYS):
        return []
    per_offering = [r for r in reqs if r.key in _OFFERING_KEYS]
    if not per_offering:
        return list(it.offerings)
    return [o for o in it.offerings
            if all(_matches(r, {L.ZONE_LABEL: o.zone, L.CAPACITY_TYPE_LABEL: o.capacity_type}) for r in per_offering)]


class _Store:
    """Karpenter's internalInstanceTypeStore for one NodePool (or none): per type, per offering, the winning change."""

    def __init__(self) -> None:
        self.prices: dict[str, dict[OfferingKey, _PriceUpdate]] = {}
        self.capacity: dict[str, _CapacityUpdate] = {}

    def conflicts(self, overlay: NodeOverlay, selected: dict[str, list[Offering]]) -> bool:
        for name, offerings in selected.items():
            if overlay.price_change is not None:
                prices = self.prices.get(name, {})
                if any((u := prices.get((o.zone, o.capacity_type))) and u.weight == overlay.weight for o in offerings):
                    return True
            cap = self.capacity.get(name)
            if overlay.spec.capacity and cap is not None and cap.weight == overlay.weight \
                    and set(overlay.spec.capacity) & set(cap.lowest):
                return True
        return False

    def store(self, overlay: NodeOverlay, selected: dict[str, list[Offering]]) -> tuple[int, int]:
        """Record the overlay where nothing heavier decided already; returns (offerings priced, types given
        capacity) by it."""
        priced = types = 0
        for name, offerings in selected.items():
            if overlay.price_change is not None:
                prices = self.prices.setdefault(name, {})
                for o in offerings:
                    key = (o.zone, o.capacity_type)
                    if key in prices:
                        prices[key].weight = overlay.weight
                    else:
                        prices[key] = _PriceUpdate(overlay.price_change, overlay.weight)
                        priced += 1
            if overlay.spec.capacity:
                cap = self.capacity.get(name)
                if cap is None:
                    self.capacity[name] = _CapacityUpdate(dict(overlay.spec.capacity), dict(overlay.spec.capacity),
                                                          overlay.weight)
                    types += 1
                else:
                    added = [r for r in overlay.spec.capacity if r not in cap.resources]
                    for res in added:
                        cap.resources[res] = overlay.spec.capacity[res]
                    cap.lowest, cap.weight = dict(overlay.spec.capacity), overlay.weight
                    types += bool(added)
        return priced, types


def evaluate_overlays(catalog: InstanceTypeCatalog, overlays: Sequence[NodeOverlay],
                      pools: Mapping[str, PoolLabels] | None = None) -> OverlayResult:
    """Apply `overlays` to `catalog` (copies; the types no overlay selects are shared, not copied): for no pool in
    particular (`catalog`) and, when an overlay names the pool or one of its template labels, for each pool of
    `pools` (`pools`; else every pool prices as `catalog`). Conflicts count in any pool, as Karpenter validates an
    overlay against every NodePool before storing it."""
    if not overlays:
        return OverlayResult(catalog)
    pool_keys = {L.NODEPOOL_LABEL, *(k for labels in (pools or {}).values() for k in labels)}
    per_pool = bool(pools) and any(r.key in pool_keys for o in overlays for r in o.spec.requirements)
    contexts: dict[str, PoolLabels | None] = {"": None, **(dict(pools or {}) if per_pool else {})}
    stores = {name: _Store() for name in contexts}
    judged = [n for n in contexts if n] or [""]  # Karpenter judges conflicts per NodePool
    result = OverlayResult(catalog)
    for overlay in by_weight(overlays):
        selected = {name: {it.name: offs for it in catalog.instance_types
                           if (offs := selected_offerings(overlay, it, labels))}
                    for name, labels in contexts.items()}
        if any(stores[n].conflicts(overlay, selected[n]) for n in judged):
            result.conflicts.append(overlay.name)
            continue
        counts = {name: stores[name].store(overlay, selected[name]) for name in contexts}
        judged_counts = [counts[n] for n in judged]  # per pool: the most it decided in any one NodePool
        result.priced[overlay.name] = max(c[0] for c in judged_counts)
        result.gave_capacity[overlay.name] = max(c[1] for c in judged_counts)
    result.capacity = {name: dict(u.resources) for name, u in stores[""].capacity.items()}
    result.catalog = _priced_catalog(catalog, stores[""])
    result.pools = {name: _priced_catalog(catalog, stores[name]) for name in contexts if name}
    return result


def _priced_catalog(catalog: InstanceTypeCatalog, store: _Store) -> InstanceTypeCatalog:
    if not store.prices:
        return catalog
    return replaced(catalog, instance_types=[
        _priced(it, store.prices[it.name]) if it.name in store.prices else it for it in catalog.instance_types])


def _priced(it: InstanceType, updates: Mapping[OfferingKey, _PriceUpdate]) -> InstanceType:
    offerings = tuple(o.model_copy(update={"price": adjusted_price(o.price, u.change)})
                      if (u := updates.get((o.zone, o.capacity_type))) is not None else o for o in it.offerings)
    return replaced(it, offerings=offerings)


_CACHE_SIZE = 4  # the planner's catalog and the launch's (each with or without unavailable offerings)
_cache_lock = threading.Lock()
_cache: list[tuple[InstanceTypeCatalog, tuple[Any, ...], OverlayResult]] = []


def priced_by_overlays(catalog: InstanceTypeCatalog, overlays: Sequence[NodeOverlay],
                       pools: Mapping[str, PoolLabels] | None = None) -> OverlayResult:
    """`evaluate_overlays`, the last few results kept by catalog object, overlays and pools: planner passes and
    launches ask with the same inputs again and again."""
    catalog = current_catalog(catalog)  # type: ignore[assignment]  # a refreshing source: its catalog now
    if not overlays:
        return OverlayResult(catalog)
    key = (tuple(o.model_dump_json() for o in overlays),
           tuple(sorted((name, tuple(sorted(labels.items()))) for name, labels in (pools or {}).items())))
    with _cache_lock:
        for i, (cat, k, out) in enumerate(_cache):
            if cat is catalog and k == key:
                _cache.insert(0, _cache.pop(i))
                return out
    out = evaluate_overlays(catalog, overlays, pools)
    with _cache_lock:
        _cache.insert(0, (catalog, key, out))
        del _cache[_CACHE_SIZE:]
    return out


def apply_overlays(catalog: InstanceTypeCatalog, overlays: Sequence[NodeOverlay]) -> InstanceTypeCatalog:
    """The catalog as the overlays price it for no pool in particular: `catalog` itself without overlays."""
    if not overlays:
        return catalog
    return priced_by_overlays(catalog, overlays).catalog


def pool_catalog(catalog: InstanceTypeCatalog, overlays: Sequence[NodeOverlay], pool: str,
                 template_labels: Mapping[str, str]) -> InstanceTypeCatalog:
    """The catalog as the overlays price it for one NodePool (a launch knows its pool)."""
    if not overlays:
        return catalog
    result = priced_by_overlays(catalog, overlays, {pool: overlay_pool_labels(pool, template_labels)})
    return result.pools.get(pool, result.catalog)
