"""Capacity reservations of an EC2NodeClass, as Karpenter v1.14's AWS provider resolves and prices them.

`spec.capacityReservationSelectorTerms` (an `id`, or `tags` with an optional `ownerID` and `instanceMatchCriteria`)
become DescribeCapacityReservations queries (`queries`); each reservation EC2 answers becomes one entry of
`status.capacityReservations` (`from_ec2`), and each entry a `reserved` offering of its instance type in its zone
(`reserved_offerings`), priced at the on-demand price / 10,000,000 so that reserved capacity, which is already paid
for, is always chosen first while consolidation keeps the types' relative order.

Karpenter: aws/karpenter-provider-aws `pkg/providers/capacityreservation/types.go` (queries),
`pkg/apis/v1/ec2nodeclass_status.go` (`CapacityReservationFromEC2`: a capacity block is `expiring` 40 minutes
before its end), `pkg/providers/instancetype/offering/reserved_capacity_resolver.go` (offerings and price).
Pure: the node-class activity asks EC2 (activities/nodeclass.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from pydantic import Field

from api.meta import K8sModel

RESERVATION_ID_LABEL = "karpenter.k8s.aws/capacity-reservation-id"
RESERVATION_TYPE_LABEL = "karpenter.k8s.aws/capacity-reservation-type"
CAPACITY_RESERVED = "reserved"
RESERVED_PRICE_DIVISOR = 10_000_000.0  # reserved_capacity_resolver.go: on-demand price / 10,000,000
EXPIRATION_PERIOD = timedelta(minutes=40)  # a capacity block is `expiring` this long before its end time
MATCH_CRITERIA = ("open", "targeted")  # other values EC2 may add are refused, as Karpenter refuses them
# EC2's answers to a launch into a reservation that has no room left: the reservation is used up.
RESERVATION_FULL_CODES = frozenset({"ReservationCapacityExceeded", "InsufficientInstanceCapacity",
                                    "UnfulfillableCapacity"})


class ReservationType(StrEnum):
    DEFAULT = "default"
    CAPACITY_BLOCK = "capacity-block"


class ReservationState(StrEnum):
    ACTIVE = "active"
    EXPIRING = "expiring"


class CapacityReservationSelectorTerm(K8sModel):
    """Karpenter's term: `id` alone, or `tags` (a value `*` is any value) with `ownerID` / `instanceMatchCriteria`."""

    id: str | None = None
    tags: dict[str, str] | None = None
    owner_id: str | None = Field(default=None, alias="ownerID")
    instance_match_criteria: str | None = None


class CapacityReservationStatus(K8sModel):
    """One entry of `status.capacityReservations` (Karpenter's fields; `availableInstanceCount` is nodeflow's: the
    count EC2 answered at the last resolution, which Karpenter keeps in memory)."""

    id: str
    instance_type: str
    availability_zone: str
    owner_id: str = Field(alias="ownerID")
    instance_match_criteria: str = "open"
    reservation_type: ReservationType = ReservationType.DEFAULT
    state: ReservationState = ReservationState.ACTIVE
    end_time: datetime | None = None
    available_instance_count: int = 0


@dataclass(frozen=True)
class ReservationQuery:
    """One DescribeCapacityReservations call: by id, or by filters."""

    term: int
    params: dict[str, Any]


def queries(terms: Sequence[CapacityReservationSelectorTerm]) -> list[ReservationQuery]:
    """A query per term: its id, or its owner / tags / match-criteria filters; active reservations only."""
    out: list[ReservationQuery] = []
    active = {"Name": "state", "Values": ["active"]}
    for i, term in enumerate(terms):
        if term.id:
            out.append(ReservationQuery(i, {"CapacityReservationIds": [term.id], "Filters": [active]}))
        if term.tags or term.instance_match_criteria:
            filters: list[dict[str, Any]] = [active]
            if term.owner_id:
                filters.append({"Name": "owner-id", "Values": [term.owner_id]})
            for key, value in sorted((term.tags or {}).items()):
                filters.append({"Name": "tag-key", "Values": [key]} if value == "*"
                               else {"Name": f"tag:{key}", "Values": [value]})
            if term.instance_match_criteria:
                filters.append({"Name": "instance-match-criteria", "Values": [term.instance_match_criteria]})
            out.append(ReservationQuery(i, {"Filters": filters}))
    return out


def _aware(value: Any) -> datetime | None:
    if value is None or value == "":
        return None
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def from_ec2(cr: Mapping[str, Any], now: datetime) -> CapacityReservationStatus | None:
    """A status entry from one DescribeCapacityReservations item; None for a match criteria or reservation type
    Karpenter does not know (it logs and skips those)."""
    criteria = str(cr.get("InstanceMatchCriteria") or "open")
    try:
        rtype = ReservationType(str(cr.get("ReservationType") or "default"))
    except ValueError:
        return None
    if criteria not in MATCH_CRITERIA:
        return None
    end = _aware(cr.get("EndDate"))
    expiring = rtype is ReservationType.CAPACITY_BLOCK and end is not None and now >= end - EXPIRATION_PERIOD
    return CapacityReservationStatus(
        id=str(cr["CapacityReservationId"]), instanceType=str(cr["InstanceType"]),
        availabilityZone=str(cr["AvailabilityZone"]), ownerID=str(cr.get("OwnerId") or ""),
        instanceMatchCriteria=criteria, reservationType=rtype,
        state=ReservationState.EXPIRING if expiring else ReservationState.ACTIVE, endTime=end,
        availableInstanceCount=int(cr.get("AvailableInstanceCount") or 0))


def resolve(answers: Iterable[Iterable[Mapping[str, Any]]], now: datetime) -> list[CapacityReservationStatus]:
    """Every reservation the terms' queries answered, once each, sorted by id."""
    seen: dict[str, CapacityReservationStatus] = {}
    for answer in answers:
        for cr in answer:
            entry = from_ec2(cr, now)
            if entry is not None:
                seen.setdefault(entry.id, entry)
    return [seen[k] for k in sorted(seen)]


def reserved_price(on_demand_price: float | None) -> float:
    """The price of a reserved offering: the on-demand price / 10,000,000 (0 without an on-demand price)."""
    return (on_demand_price or 0.0) / RESERVED_PRICE_DIVISOR


def usable(r: CapacityReservationStatus) -> bool:
    """Whether a launch may go into `r` now: room left, and not a capacity block about to end."""
    return r.available_instance_count > 0 and r.state is ReservationState.ACTIVE


def per_offering(reservations: Iterable[CapacityReservationStatus]) -> dict[tuple[str, str], CapacityReservationStatus]:
    """(instance type, zone) -> the reservation a launch there goes into: a usable one first, then the one with the
    most room, then by id (Karpenter launches into one reservation per zone)."""
    out: dict[tuple[str, str], CapacityReservationStatus] = {}
    for r in sorted(reservations, key=lambda r: (not usable(r), -r.available_instance_count, r.id)):
        out.setdefault((r.instance_type, r.availability_zone), r)
    return out


def reservation_labels(reservation_id: str | None, reservation_type: str | None) -> dict[str, str]:
    """The labels a NodeClaim and its Node launched into a reservation carry."""
    if not reservation_id:
        return {}
    return {RESERVATION_ID_LABEL: reservation_id, RESERVATION_TYPE_LABEL: reservation_type or "default"}


def expiring_ids(reservations: Iterable[CapacityReservationStatus]) -> set[str]:
    return {r.id for r in reservations if r.state is ReservationState.EXPIRING}

