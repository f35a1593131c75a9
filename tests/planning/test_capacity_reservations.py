"""Capacity reservations, pure parts (docs/semantics.md §16.4): selector terms to DescribeCapacityReservations
queries, EC2's answer to status entries (a capacity block expiring 40 minutes before its end), reserved offerings
at the on-demand price / 10,000,000 while the reservation has room, the provisioner planning into a reservation
first only when the pool allows `reserved`, and the CreateFleet request that targets it. No servers."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from api import labels
from api.capacity_reservations import (
    CapacityReservationSelectorTerm,
    CapacityReservationStatus,
    ReservationState,
    ReservationType,
    from_ec2,
    per_offering,
    queries,
    reservation_labels,
    reserved_price,
    resolve,
)
from api.catalog import Offering, load_default_catalog
from api.ec2nodeclass import load_ec2nodeclass
from api.ec2nodeclass_validation import validate_ec2nodeclass
from api.snapshot import Snapshot, load_snapshot
from planning.pricing.reservations import with_reservations
from planning.provisioning import fleet
from planning.provisioning.provisioner import decide

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
AT = datetime(2026, 11, 22, 20, 0, tzinfo=UTC)


def ec2_cr(rid: str = "cr-0a1", count: int = 2, **extra: Any) -> dict[str, Any]:
    return {"CapacityReservationId": rid, "InstanceType": "m5.xlarge", "AvailabilityZone": "us-east-1a",
            "OwnerId": "123456789012", "InstanceMatchCriteria": "targeted", "AvailableInstanceCount": count,
            "TotalInstanceCount": 2, "State": "active", **extra}


def status(rid: str = "cr-0a1", count: int = 2, **extra: Any) -> CapacityReservationStatus:
    entry = from_ec2(ec2_cr(rid, count, **extra), AT)
    assert entry is not None
    return entry


# ---- terms, EC2's answer ----------------------------------------------------------------------------------------

def test_an_id_term_asks_by_id_and_a_tag_term_by_owner_and_tag_filters() -> None:
    terms = [CapacityReservationSelectorTerm(id="cr-0a1"),
             CapacityReservationSelectorTerm.model_validate({"tags": {"team": "ml", "any": "*"},
                                                              "ownerID": "123456789012"})]
    by_id, by_tags = queries(terms)
    assert by_id.params == {"CapacityReservationIds": ["cr-0a1"],
                            "Filters": [{"Name": "state", "Values": ["active"]}]}
    assert by_tags.params["Filters"] == [{"Name": "state", "Values": ["active"]},
                                         {"Name": "owner-id", "Values": ["123456789012"]},
                                         {"Name": "tag-key", "Values": ["any"]},
                                         {"Name": "tag:team", "Values": ["ml"]}]


def test_a_capacity_block_is_expiring_from_40_minutes_before_its_end() -> None:
    block = {"ReservationType": "capacity-block"}
    early = from_ec2(ec2_cr(**block, EndDate=AT + timedelta(minutes=41)), AT)
    late = from_ec2(ec2_cr(**block, EndDate=AT + timedelta(minutes=40)), AT)
    default = from_ec2(ec2_cr(EndDate=AT + timedelta(minutes=5)), AT)  # only blocks expire so
    assert early is not None and early.state is ReservationState.ACTIVE
    assert late is not None and late.state is ReservationState.EXPIRING
    assert late.reservation_type is ReservationType.CAPACITY_BLOCK and late.end_time == AT + timedelta(minutes=40)
    assert default is not None and default.state is ReservationState.ACTIVE


def test_unknown_match_criteria_is_skipped_and_a_reservation_answered_twice_is_kept_once() -> None:
    assert from_ec2(ec2_cr(InstanceMatchCriteria="something-new"), AT) is None
    found = resolve([[ec2_cr("cr-0b2")], [ec2_cr("cr-0a1"), ec2_cr("cr-0b2")]], AT)
    assert [r.id for r in found] == ["cr-0a1", "cr-0b2"]
    dumped = found[0].to_dict()
    assert (dumped["ownerID"], dumped["availabilityZone"], dumped["reservationType"], dumped["state"],
            dumped["availableInstanceCount"]) == ("123456789012", "us-east-1a", "default", "active", 2)


# ---- offerings and price ----------------------------------------------------------------------------------------

def test_a_reserved_offering_costs_the_on_demand_price_over_ten_million_while_it_has_room() -> None:
    catalog = load_default_catalog()
    od = catalog.get("m5.xlarge").offering("us-east-1a", labels.CAPACITY_ON_DEMAND)  # type: ignore[union-attr]
    assert od is not None
    out = with_reservations(catalog, [status(count=1)])
    off = out.get("m5.xlarge").offering("us-east-1a", "reserved")  # type: ignore[union-attr]
    assert off is not None and off.available and off.reservation_id == "cr-0a1"
    assert off.price == reserved_price(od.price) == od.price / 10_000_000
    assert out.get("m5.large") is catalog.get("m5.large")  # other types untouched
    assert catalog.get("m5.xlarge").offering("us-east-1a", "reserved") is None  # type: ignore[union-attr]
    used_up = with_reservations(catalog, [status(count=0)]).get("m5.xlarge")
    assert used_up is not None and used_up.offering("us-east-1a", "reserved").available is False  # type: ignore
    block = status(ReservationType="capacity-block", EndDate=AT + timedelta(minutes=10))
    ending = with_reservations(catalog, [block]).get("m5.xlarge")
    assert ending is not None and ending.offering("us-east-1a", "reserved").available is False  # type: ignore


def test_one_reservation_per_type_and_zone_the_one_with_room_first() -> None:
    chosen = per_offering([status("cr-0a1", 0), status("cr-0b2", 1), status("cr-0c3", 1)])
    assert chosen[("m5.xlarge", "us-east-1a")].id == "cr-0b2"
    assert reservation_labels("cr-0b2", "default") == {"karpenter.k8s.aws/capacity-reservation-id": "cr-0b2",
                                                      "karpenter.k8s.aws/capacity-reservation-type": "default"}


# ---- the provisioner ----------------------------------------------------------------------------------------

def _snapshot(capacity_types: list[str], available: int, pods: int = 1) -> Snapshot:
    objs = load_snapshot(EXAMPLES / "plan-empty.yaml").to_objects()
    pool = next(o for o in objs if o["kind"] == "NodePool")
    reqs = pool["spec"]["template"]["spec"]["requirements"]
    next(q for q in reqs if q["key"] == labels.CAPACITY_TYPE_LABEL)["values"] = capacity_types
    if pods > 1:  # one pod per node: the batch cannot pack them onto a larger type
        reqs.append({"key": labels.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.xlarge"]})
    node_class = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"},
                  "spec": {"role": "r", "amiSelectorTerms": [{"alias": "al2023@latest"}],
                           "capacityReservationSelectorTerms": [{"id": "cr-0a1"}]},
                  "status": {"capacityReservations": [status(count=available).to_dict()],
                             "conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "",
                                             "lastTransitionTime": "2026-11-22T19:00:00Z"}]}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big", "namespace": "default", "uid": "uid-big"},
           "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "3", "memory": "4Gi"}}}]},
           "status": {"phase": "Pending"}}
    more = []
    for i in range(1, pods):
        extra = copy.deepcopy(pod)
        extra["metadata"].update(name=f"big-{i}", uid=f"uid-big-{i}")
        more.append(extra)
    return Snapshot.from_objects([*objs, node_class, copy.deepcopy(pod), *more])


def test_a_pool_that_allows_reserved_launches_into_the_reservation_first() -> None:
    (launch,) = decide(_snapshot(["reserved", "on-demand"], 1), pods=["uid-big"], at=AT).launches
    assert launch.replacement.capacity_type == "reserved"
    assert launch.replacement.instance_types[0] == "m5.xlarge"


def test_a_used_up_reservation_falls_back_to_on_demand_and_a_pool_without_reserved_never_sees_it() -> None:
    (used_up,) = decide(_snapshot(["reserved", "on-demand"], 0), pods=["uid-big"], at=AT).launches
    assert used_up.replacement.capacity_type == "on-demand"
    (plain,) = decide(_snapshot(["on-demand"], 1), pods=["uid-big"], at=AT).launches
    assert plain.replacement.capacity_type == "on-demand"


def test_one_batch_plans_no_more_nodes_into_a_reservation_than_it_has_room_for() -> None:
    decision = decide(_snapshot(["reserved", "on-demand"], 2, pods=3), pods=["uid-big", "uid-big-1", "uid-big-2"],
                      at=AT)
    assert sorted(launch.replacement.capacity_type for launch in decision.launches) == [
        "on-demand", "reserved", "reserved"]


def test_the_class_keeps_its_terms_and_status_through_the_model() -> None:
    nc = load_ec2nodeclass(_snapshot(["reserved"], 1).node_classes[0].to_dict())
    assert nc.spec.capacity_reservation_selector_terms[0].id == "cr-0a1"
    assert nc.status.capacity_reservations is not None and nc.status.capacity_reservations[0].instance_type == \
        "m5.xlarge"


# ---- the fleet request ----------------------------------------------------------------------------------------

def _reserved(rid: str, rtype: str, price: float, zone: str = "us-east-1a") -> Offering:
    return Offering(zone=zone, capacityType="reserved", price=price,  # type: ignore[call-arg]
                    reservationID=rid, reservationType=rtype)


def test_a_reserved_request_targets_the_reservation_on_demand_and_a_block_as_capacity_block() -> None:
    ovs = [("lt", [fleet.Override("m5.xlarge", "us-east-1a", "subnet-a", 0.0)])]
    default = fleet.fleet_request(ovs, "reserved", {}, "t", reservation_type="default")
    assert default["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "on-demand"
    assert default["OnDemandOptions"] == {"AllocationStrategy": "lowest-price"}
    block = fleet.fleet_request(ovs, "reserved", {}, "t", reservation_type="capacity-block")
    assert block["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "capacity-block"
    assert "OnDemandOptions" not in block and "SpotOptions" not in block
    template = fleet.reservation_template("cr-0a1", "capacity-block")
    assert template["CapacityReservationSpecification"] == {
        "CapacityReservationPreference": "capacity-reservations-only",
        "CapacityReservationTarget": {"CapacityReservationId": "cr-0a1"}}
    assert template["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert "InstanceMarketOptions" not in fleet.reservation_template("cr-0a1", "default")


def test_one_launch_goes_into_reservations_of_one_type_the_cheapest_offerings() -> None:
    offers = [("m5.xlarge", _reserved("cr-1", "capacity-block", 0.2)), ("m5.large", _reserved("cr-2", "default", 0.1)),
              ("c5.large", _reserved("cr-3", "default", 0.3, "us-east-1b"))]
    kept = fleet.one_reservation_type(offers)
    assert [o.reservation_id for _, o in kept] == ["cr-2", "cr-3"]
    assert fleet.FleetError("ReservationCapacityExceeded", "full", "m5.large", "us-east-1a").capacity


# ---- validation (nodeflow validate, and a class the CRD would refuse is not Ready) --------------------------

def test_terms_follow_karpenters_crd_rules() -> None:
    def problems(terms: list[dict[str, Any]]) -> list[str]:
        obj = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "n"},
               "spec": {"role": "r", "amiSelectorTerms": [{"alias": "al2023@latest"}],
                        "subnetSelectorTerms": [{"id": "subnet-0a"}], "securityGroupSelectorTerms": [{"id": "sg-0a"}],
                        "capacityReservationSelectorTerms": terms}}
        return [x for x in validate_ec2nodeclass(obj) if "capacityReservationSelectorTerms" in x]

    assert problems([{"id": "cr-0a1"}, {"tags": {"team": "ml"}, "ownerID": "123456789012"}]) == []
    assert problems([]) == []
    assert any("mutually exclusive" in x for x in problems([{"id": "cr-0a1", "ownerID": "123456789012"}]))
    assert any("does not match" in x for x in problems([{"id": "reservation-1"}]))
    assert any("ownerID" in x for x in problems([{"tags": {"a": "b"}, "ownerID": "me"}]))
    assert any("expected at least one" in x for x in problems([{"ownerID": "123456789012"}]))
    assert any("Unsupported value" in x for x in problems([{"instanceMatchCriteria": "any"}]))
