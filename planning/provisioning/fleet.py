"""One CreateFleet request per NodeClaim, as Karpenter's AWS provider shapes it (pkg/providers/instance): which
instance types go in (cheapest compatible offering first, name to break ties, at most 60, minValues still met),
which overrides (each type x each allowed zone with a subnet, for the launch's capacity type), which allocation
strategy (`lowest-price` on-demand, `price-capacity-optimized` spot), and what EC2's answer means (an instance,
per-override errors, or both). Pure: the activity (activities/fleet_launch.py) sends and reads.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from api import labels
from api.capacity_reservations import CAPACITY_RESERVED, ReservationType
from api.catalog import Offering
from api.launch_templates import NAME_PREFIX

MAX_INSTANCE_TYPES = 60  # Karpenter's maxInstanceTypes: types, not overrides, per request
ON_DEMAND_STRATEGY = "lowest-price"
SPOT_STRATEGY = "price-capacity-optimized"
ON_DEMAND_PRIORITIZED = "prioritized"  # when a NodeOverlay priced the offerings: EC2 follows the overrides' order
SPOT_PRIORITIZED = "capacity-optimized-prioritized"
CAPACITY_CODES = frozenset({"InsufficientInstanceCapacity", "UnfulfillableCapacity", "Unsupported",
                            "ReservationCapacityExceeded"})
LAUNCH_TEMPLATE_PREFIX = NAME_PREFIX  # Karpenter names its templates karpenter.k8s.aws/<hash>


class LaunchApi(StrEnum):
    """How a NodeClaim's instance is asked of EC2 (the worker's `--launch-api`)."""

    FLEET = "fleet"  # one CreateFleet over every offering, as Karpenter
    RUN_INSTANCES = "run-instances"  # RunInstances per offering, cheapest first, the next after a capacity error


class MinValuesNotMet(ValueError):
    """The truncated types no longer meet a requirement's minValues (Karpenter: InstanceTypeResolutionFailed)."""


@dataclass(frozen=True)
class Override:
    """One (instance type, zone) of the request, with the subnet it launches into there."""

    instance_type: str
    zone: str
    subnet_id: str
    price: float
    image_id: str | None = None
    priority: float | None = None  # only for the prioritized strategies: lower goes first

    def request(self) -> dict[str, Any]:
        """CreateFleet's override: subnet and zone both (the zone lets a fleet error be read without a lookup)."""
        out: dict[str, Any] = {"InstanceType": self.instance_type, "SubnetId": self.subnet_id,
                               "AvailabilityZone": self.zone}
        if self.image_id:
            out["ImageId"] = self.image_id
        if self.priority is not None:
            out["Priority"] = self.priority
        return out


@dataclass(frozen=True)
class FleetError:
    """One entry of CreateFleet's `Errors`: the code, and the override it was about when EC2 names one."""

    code: str
    message: str
    instance_type: str = ""
    zone: str = ""

    @property
    def capacity(self) -> bool:
        """No capacity for this offering now (marks it unavailable for 3 minutes)."""
        return self.code in CAPACITY_CODES


@dataclass(frozen=True)
class FleetAnswer:
    """What an instant fleet answered: the instance (if any) and every error beside it."""

    instance_id: str | None
    instance_type: str | None
    errors: tuple[FleetError, ...] = field(default_factory=tuple)
    override: Mapping[str, Any] = field(default_factory=dict)  # the override it was launched from, as EC2 echoes it

    @property
    def all_capacity(self) -> bool:
        """No instance, and every error is a capacity error: Karpenter's InsufficientCapacityError."""
        return self.instance_id is None and bool(self.errors) and all(e.capacity for e in self.errors)


def order_types(offers: Iterable[tuple[str, Offering]]) -> list[str]:
    """Instance types by their cheapest offering among `offers`, then by name (Karpenter's OrderByPrice)."""
    cheapest: dict[str, float] = {}
    for name, off in offers:
        if name not in cheapest or off.price < cheapest[name]:
            cheapest[name] = off.price
    return sorted(cheapest, key=lambda n: (cheapest[n], n))


def min_values(requirements: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """{label key: minValues} of the requirements that set one."""
    return {str(q["key"]): int(q["minValues"]) for q in requirements if q.get("minValues") and q.get("key")}


def truncate(types: Sequence[str], mins: Mapping[str, int], values_of: Callable[[str, str], str | None],
             limit: int = MAX_INSTANCE_TYPES, strict: bool = True) -> list[str]:
    """The first `limit` of `types` (already ordered). With minValues, the kept types must still carry enough
    distinct values of each key (`values_of(type, key)`), else MinValuesNotMet: Karpenter refuses the launch
    rather than send a request that could land on a type the NodePool forbids by minValues. Not `strict`
    (`--min-values-policy BestEffort`): the cut types as they are, as Karpenter's `Truncate` then."""
    kept = list(types[:limit])
    if not strict:
        return kept
    short = {key: n for key, n in mins.items()
             if len({v for t in kept if (v := values_of(t, key)) is not None}) < n}
    if short:
        raise MinValuesNotMet("minValues requirement is not met for label(s) " + ", ".join(sorted(short)))
    return kept


def one_reservation_type(offers: Sequence[tuple[str, Offering]]) -> list[tuple[str, Offering]]:
    """A reserved launch goes into reservations of one type only (a capacity block and a default reservation need
    different requests: aws instancefilter CapacityReservationTypeFilter): the cheapest offering's type. Offerings
    of no reservation pass unchanged."""
    reserved = [o for _, o in offers if o.reservation_id]
    if not reserved:
        return list(offers)
    rtype = min(reserved, key=lambda o: (o.price, o.zone)).reservation_type
    return [(t, o) for t, o in offers if not o.reservation_id or o.reservation_type == rtype]


def overrides(types: Sequence[str], offers: Iterable[tuple[str, Offering]], subnets: Mapping[str, str],
              images: Mapping[str, str] | None = None, prioritized: bool = False) -> list[Override]:
    """Each (type, zone) of `offers` whose type is kept and whose zone has a subnet, in the types' order (within a
    type: cheapest zone first, then by name). `prioritized`: each carries its offering's price as its Priority,
    so EC2 takes them in the order the overlays priced them."""
    rank = {t: i for i, t in enumerate(types)}
    chosen = [(t, o) for t, o in offers if t in rank and o.zone in subnets]
    chosen.sort(key=lambda p: (rank[p[0]], p[1].price, p[1].zone))
    seen: set[tuple[str, str]] = set()
    out: list[Override] = []
    for t, o in chosen:
        if (t, o.zone) not in seen:
            seen.add((t, o.zone))
            out.append(Override(t, o.zone, subnets[o.zone], o.price, (images or {}).get(t),
                                o.price if prioritized else None))
    return out


def allocation_options(capacity_type: str, prioritized: bool = False,
                       reservation_type: str | None = None) -> dict[str, Any]:
    """SpotOptions or OnDemandOptions of the request, as Karpenter sets them (the prioritized strategies when a
    NodeOverlay priced the offerings: EC2's own prices would undo the overlay's order). A launch into a capacity
    block carries neither (aws instance/types.go Build)."""
    if capacity_type == CAPACITY_RESERVED and reservation_type == ReservationType.CAPACITY_BLOCK:
        return {}
    if capacity_type == labels.CAPACITY_SPOT:
        return {"SpotOptions": {"AllocationStrategy": SPOT_PRIORITIZED if prioritized else SPOT_STRATEGY}}
    return {"OnDemandOptions": {"AllocationStrategy": ON_DEMAND_PRIORITIZED if prioritized else ON_DEMAND_STRATEGY}}


def template_name(data: Mapping[str, Any]) -> str:
    """A launch template's name from its data: the same parameters always name (and reuse) the same template."""
    digest = hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:20]
    return LAUNCH_TEMPLATE_PREFIX + digest


def target_capacity_type(capacity_type: str, reservation_type: str | None = None) -> str:
    """EC2's DefaultTargetCapacityType: a reserved launch is `on-demand` into the reservation its launch template
    targets, or `capacity-block` for a capacity block (EC2 knows no `reserved`)."""
    if capacity_type != CAPACITY_RESERVED:
        return capacity_type
    return "capacity-block" if reservation_type == ReservationType.CAPACITY_BLOCK else labels.CAPACITY_ON_DEMAND


def reservation_template(reservation_id: str, reservation_type: str | None) -> dict[str, Any]:
    """What a launch template adds to launch into one capacity reservation (aws launchtemplate/types.go): only that
    reservation (`capacity-reservations-only`, so a full one is an error, not an on-demand instance), and the
    capacity-block market for a block."""
    out: dict[str, Any] = {"CapacityReservationSpecification": {
        "CapacityReservationPreference": "capacity-reservations-only",
        "CapacityReservationTarget": {"CapacityReservationId": reservation_id}}}
    if reservation_type == ReservationType.CAPACITY_BLOCK:
        out["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
    return out


def fleet_request(configs: Sequence[tuple[str, Sequence[Override]]], capacity_type: str, tags: Mapping[str, str],
                  token: str, prioritized: bool = False, reservation_type: str | None = None) -> dict[str, Any]:
    """The CreateFleet parameters: type instant, one instance of `capacity_type`, a config per launch template
    (name, its overrides), tags on the instance, its volumes and the fleet, and the idempotency token."""
    tag_list = [{"Key": k, "Value": v} for k, v in tags.items()]
    return {
        "Type": "instant",
        "ClientToken": token,
        "TargetCapacitySpecification": {"TotalTargetCapacity": 1,
                                        "DefaultTargetCapacityType": target_capacity_type(capacity_type,
                                                                                          reservation_type)},
        "LaunchTemplateConfigs": [
            {"LaunchTemplateSpecification": {"LaunchTemplateName": name, "Version": "$Latest"},
             "Overrides": [o.request() for o in ovs]} for name, ovs in configs if ovs],
        "TagSpecifications": [{"ResourceType": r, "Tags": tag_list} for r in ("instance", "volume", "fleet")],
        **allocation_options(capacity_type, prioritized, reservation_type),
    }


def read_answer(resp: Mapping[str, Any]) -> FleetAnswer:
    """CreateFleet's answer: the first instance launched (one was asked for) and every error."""
    errors = []
    for e in resp.get("Errors") or ():
        ov = ((e.get("LaunchTemplateAndOverrides") or {}).get("Overrides")) or {}
        errors.append(FleetError(str(e.get("ErrorCode") or ""), str(e.get("ErrorMessage") or ""),
                                 str(ov.get("InstanceType") or ""), str(ov.get("AvailabilityZone") or "")))
    for inst in resp.get("Instances") or ():
        ids = inst.get("InstanceIds") or []
        if ids:
            override = ((inst.get("LaunchTemplateAndOverrides") or {}).get("Overrides")) or {}
            return FleetAnswer(str(ids[0]), str(inst.get("InstanceType") or ""), tuple(errors), dict(override))
    return FleetAnswer(None, None, tuple(errors))


def combined_message(errors: Sequence[FleetError]) -> str:
    """Karpenter's combined fleet error: each distinct `code: message` once, sorted."""
    return "; ".join(sorted({f"{e.code}: {e.message}" for e in errors})) or "CreateFleet launched no instance"


def overlay_priced(offers: Iterable[tuple[str, Offering]], base_price: Callable[[str, Offering], float | None]
                   ) -> bool:
    """Whether a NodeOverlay changed the price of any offering of the launch (`base_price`: the catalog's own)."""
    return any((p := base_price(t, o)) is not None and p != o.price for t, o in offers)
