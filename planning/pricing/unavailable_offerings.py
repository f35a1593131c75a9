"""Offerings recently refused by EC2, kept out of every launch and every plan of the worker for 3 minutes.

Karpenter's `UnavailableOfferings` cache (aws/karpenter-provider-aws pkg/cache/unavailableofferings.go, TTL in
pkg/cache/cache.go): an InsufficientInstanceCapacity or UnfulfillableCapacity answer to a launch, or a spot
interruption warning, marks that (instance type, zone, capacity type) unavailable; marking again extends the
entry. One instance per worker process (runtime/wiring.py): the launch activity marks and skips, the
interruption intake marks, and the planning activities plan on `apply(catalog)` (docs/semantics.md §16.1).

Pure and thread-safe: launches run in threads. The clock is injected so tests can expire entries.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from enum import StrEnum
from typing import Any, TypeVar

from pydantic import BaseModel

from api.catalog import InstanceType, InstanceTypeCatalog, current_catalog

TTL_SECONDS = 180.0  # Karpenter's UnavailableOfferingsTTL

OfferingKey = tuple[str, str, str]  # (instance type, zone, capacity type)


class UnavailableReason(StrEnum):
    """Why an offering was marked: the EC2 error code, or the interruption that reclaimed it."""

    INSUFFICIENT_INSTANCE_CAPACITY = "InsufficientInstanceCapacity"
    UNFULFILLABLE_CAPACITY = "UnfulfillableCapacity"
    UNSUPPORTED = "Unsupported"  # the type is not offered in that zone (EC2 says so only when asked)
    RESERVATION_CAPACITY_EXCEEDED = "ReservationCapacityExceeded"  # a capacity reservation with no room left
    SPOT_INTERRUPTION = "SpotInterruption"


# EC2 error codes that mark the offering (Karpenter's IsUnfulfillableCapacity set, as far as they are one
# offering's: the limit codes, VcpuLimitExceeded and MaxSpotInstanceCountExceeded, hold for every offering of the
# account or capacity type, and a subnet out of addresses is the class's; those fail the launch instead).
ERROR_REASONS: dict[str, UnavailableReason] = {
    "InsufficientInstanceCapacity": UnavailableReason.INSUFFICIENT_INSTANCE_CAPACITY,
    "UnfulfillableCapacity": UnavailableReason.UNFULFILLABLE_CAPACITY,
    "Unsupported": UnavailableReason.UNSUPPORTED,
    "ReservationCapacityExceeded": UnavailableReason.RESERVATION_CAPACITY_EXCEEDED,
}


class UnavailableOfferings:
    """(type, zone, capacity type) -> expiry. `seq` changes whenever the set of live entries does, so a caller
    can cache what it derived from it (Karpenter's SeqNum)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, ttl_seconds: float = TTL_SECONDS,
                 on_mark: Callable[[UnavailableReason], None] | None = None) -> None:
        self._clock = clock
        self.ttl_seconds = ttl_seconds
        self._on_mark = on_mark  # e.g. a metric; the pure layer records none itself
        self._expiry: dict[OfferingKey, float] = {}
        self._seq = 0
        self._lock = threading.Lock()
        self._applied: tuple[InstanceTypeCatalog, int, InstanceTypeCatalog] | None = None

    def mark(self, instance_type: str, zone: str, capacity_type: str, reason: UnavailableReason) -> None:
        """Unavailable for the next `ttl_seconds` (from now, also when it was already marked)."""
        with self._lock:
            self._expiry[(instance_type, zone, capacity_type)] = self._clock() + self.ttl_seconds
            self._seq += 1
        if self._on_mark is not None:
            self._on_mark(reason)

    def unavailable(self, instance_type: str, zone: str, capacity_type: str) -> bool:
        with self._lock:
            self._purge()
            return (instance_type, zone, capacity_type) in self._expiry

    @property
    def seq(self) -> int:
        with self._lock:
            self._purge()
            return self._seq

    def marked(self) -> set[OfferingKey]:
        """The offerings unavailable now."""
        with self._lock:
            self._purge()
            return set(self._expiry)

    def apply(self, catalog: InstanceTypeCatalog) -> InstanceTypeCatalog:
        """`catalog` with the marked offerings `available: False`: the same object when none of them is marked,
        else a copy, made once per (catalog, seq). A refreshing catalog source is resolved to its current catalog."""
        catalog = current_catalog(catalog)  # type: ignore[assignment]
        with self._lock:
            self._purge()
            if not self._expiry:
                return catalog
            cached = self._applied
            if cached is not None and cached[0] is catalog and cached[1] == self._seq:
                return cached[2]
            marked, seq = dict(self._expiry), self._seq
        out = without_offerings(catalog, set(marked))
        with self._lock:
            self._applied = (catalog, seq, out)
        return out

    def _purge(self) -> None:
        """Drop expired entries (under the lock); an expiry is a change like a mark."""
        now = self._clock()
        gone = [k for k, at in self._expiry.items() if at <= now]
        for k in gone:
            del self._expiry[k]
        if gone:
            self._seq += 1


def with_unavailable(catalog: InstanceTypeCatalog | None, offerings: UnavailableOfferings | None
                     ) -> InstanceTypeCatalog | None:
    """What an activity plans on: its catalog with the worker's unavailable offerings applied (either may be
    absent: no catalog means the planner's default, applied by nobody; no cache, nothing marked)."""
    catalog = current_catalog(catalog)  # type: ignore[assignment]  # one catalog for the whole pass
    if catalog is None or offerings is None:
        return catalog
    return offerings.apply(catalog)


def without_offerings(catalog: InstanceTypeCatalog, keys: set[OfferingKey]) -> InstanceTypeCatalog:
    """A copy of `catalog` whose offerings named by `keys` are not available (the rest shared, not copied)."""
    types = {k[0] for k in keys}
    if not types & catalog.by_name.keys():
        return catalog
    return replaced(catalog, instance_types=[_without(it, keys) if it.name in types else it
                                             for it in catalog.instance_types])


def _without(it: InstanceType, keys: set[OfferingKey]) -> InstanceType:
    offerings = tuple(o.model_copy(update={"available": False})
                      if o.available and (it.name, o.zone, o.capacity_type) in keys else o for o in it.offerings)
    return replaced(it, offerings=offerings)


M = TypeVar("M", bound=BaseModel)


def replaced(model: M, **fields: Any) -> M:
    """`model` with `fields` replaced and its cached properties (`by_name`, `cpu_cores`, ...) dropped: pydantic's
    model_copy keeps them, so a copied catalog would still look its types up in the original."""
    out = model.model_copy(update=fields)
    for key in [k for k in out.__dict__ if k not in type(model).model_fields]:
        del out.__dict__[key]
    return out
