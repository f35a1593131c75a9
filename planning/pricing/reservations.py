"""A NodePool's catalog with its EC2NodeClass's capacity reservations as `reserved` offerings.

Karpenter adds one `reserved` offering per reservation of the class to the reservation's instance type (aws
`reserved_capacity_resolver.go`), priced at the type's on-demand price / 10,000,000, available while the
reservation has room and is not an expiring capacity block. A pool whose requirements allow
`karpenter.sh/capacity-type: reserved` is then planned into the reservation first (it is by far the cheapest
offering); a pool that does not allow it never sees the offering. docs/semantics.md §16.4.
"""

from __future__ import annotations

from collections.abc import Sequence

from api import labels
from api.capacity_reservations import (
    CAPACITY_RESERVED,
    CapacityReservationStatus,
    per_offering,
    reserved_price,
    usable,
)
from api.catalog import InstanceType, InstanceTypeCatalog, Offering
from planning.pricing.unavailable_offerings import replaced


def _on_demand_price(it: InstanceType, zone: str) -> float | None:
    """The type's on-demand price in `zone`, else anywhere (EC2's on-demand price is regional)."""
    own = it.offering(zone, labels.CAPACITY_ON_DEMAND)
    if own is not None:
        return own.price
    return next((o.price for o in it.offerings if o.capacity_type == labels.CAPACITY_ON_DEMAND), None)


def reserved_offering(it: InstanceType, r: CapacityReservationStatus) -> Offering:
    return Offering(zone=r.availability_zone, capacityType=CAPACITY_RESERVED,  # type: ignore[call-arg]
                    price=reserved_price(_on_demand_price(it, r.availability_zone)), available=usable(r),
                    reservationID=r.id, reservationType=r.reservation_type.value)


def with_reservations(catalog: InstanceTypeCatalog,
                      reservations: Sequence[CapacityReservationStatus] | None) -> InstanceTypeCatalog:
    """`catalog` with one `reserved` offering per (type, zone) the reservations cover (the catalog itself when
    there are none). Types the catalog lacks are skipped; the catalog's own reserved offerings are replaced."""
    if not reservations:
        return catalog
    chosen = per_offering(reservations)
    by_type: dict[str, list[CapacityReservationStatus]] = {}
    for (itype, _zone), r in sorted(chosen.items()):
        by_type.setdefault(itype, []).append(r)
    types = []
    for it in catalog.instance_types:
        rs = by_type.get(it.name)
        if not rs:
            types.append(it)
            continue
        zones = {r.availability_zone for r in rs}
        kept = tuple(o for o in it.offerings if not (o.capacity_type == CAPACITY_RESERVED and o.zone in zones))
        types.append(replaced(it, offerings=kept + tuple(reserved_offering(it, r) for r in rs)))
    return replaced(catalog, instance_types=types)
