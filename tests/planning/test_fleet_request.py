"""The CreateFleet request as Karpenter's AWS provider shapes it (planning/provisioning/fleet.py): types ordered by
their cheapest offering then name, truncated to 60 with minValues still met, one override per (type, zone with a
subnet), the allocation strategy per capacity type, and EC2's answer read into an instance and errors."""

from __future__ import annotations

import pytest

from api.catalog import Offering
from planning.provisioning import fleet


def _off(zone: str, price: float, capacity: str = "on-demand") -> Offering:
    return Offering(zone=zone, capacityType=capacity, price=price)  # type: ignore[call-arg]


OFFERS = [("m5.large", _off("us-east-1a", 0.096)), ("m5.large", _off("us-east-1b", 0.090)),
          ("c5.large", _off("us-east-1a", 0.085)), ("a1.large", _off("us-east-1b", 0.085)),
          ("r5.large", _off("us-east-1c", 0.126))]


def test_types_go_cheapest_offering_first_then_by_name() -> None:
    # a1 and c5 tie at 0.085: the name decides; m5's cheapest zone (0.090) is what ranks it
    assert fleet.order_types(OFFERS) == ["a1.large", "c5.large", "m5.large", "r5.large"]


def test_at_most_60_types_are_kept_the_cheapest() -> None:
    offers = [(f"t{i:03d}.large", _off("us-east-1a", 1.0 + i / 1000)) for i in range(75)]
    kept = fleet.truncate(fleet.order_types(reversed(offers)), {}, lambda t, k: None)
    assert len(kept) == fleet.MAX_INSTANCE_TYPES == 60
    assert kept[0] == "t000.large" and kept[-1] == "t059.large"


def test_truncation_that_breaks_min_values_refuses_the_launch() -> None:
    families = {f"m{i}.large": "m" if i < 60 else f"x{i}" for i in range(64)}
    families |= {"x61.large": "x61"}
    order = list(families)  # cheapest first: the 60 cheapest are all family m; the other families are past the cut
    mins = fleet.min_values([{"key": "karpenter.k8s.aws/instance-family", "operator": "Exists", "minValues": 2}])
    with pytest.raises(fleet.MinValuesNotMet, match="instance-family"):
        fleet.truncate(order, mins, lambda t, k: families[t])
    # with fewer types, the cut keeps two families and the launch goes ahead
    assert fleet.truncate(["m1.large", "x61.large"], mins, lambda t, k: families[t]) == ["m1.large", "x61.large"]


def test_overrides_cross_types_with_the_zones_that_have_a_subnet() -> None:
    types = fleet.order_types(OFFERS)
    ovs = fleet.overrides(types, OFFERS, {"us-east-1a": "subnet-a", "us-east-1b": "subnet-b"}, {"m5.large": "ami-1"})
    assert [(o.instance_type, o.zone, o.subnet_id) for o in ovs] == [
        ("a1.large", "us-east-1b", "subnet-b"), ("c5.large", "us-east-1a", "subnet-a"),
        ("m5.large", "us-east-1b", "subnet-b"), ("m5.large", "us-east-1a", "subnet-a")]  # r5: no subnet in 1c
    assert ovs[2].request() == {"InstanceType": "m5.large", "SubnetId": "subnet-b", "AvailabilityZone": "us-east-1b",
                                "ImageId": "ami-1"}


@pytest.mark.parametrize(("capacity", "options"), [
    ("on-demand", {"OnDemandOptions": {"AllocationStrategy": "lowest-price"}}),
    ("spot", {"SpotOptions": {"AllocationStrategy": "price-capacity-optimized"}})])
def test_request_is_instant_for_one_instance_with_karpenters_strategy(capacity: str, options: dict) -> None:
    ov = fleet.Override("m5.large", "us-east-1a", "subnet-a", 0.1)
    req = fleet.fleet_request([("nodeflow.dev/abc", [ov]), ("nodeflow.dev/empty", [])], capacity,
                              {"karpenter.sh/nodeclaim": "web-1"}, "tok")
    assert req["Type"] == "instant" and req["ClientToken"] == "tok"
    assert req["TargetCapacitySpecification"] == {"TotalTargetCapacity": 1, "DefaultTargetCapacityType": capacity}
    assert [c["LaunchTemplateSpecification"]["LaunchTemplateName"] for c in req["LaunchTemplateConfigs"]] == \
        ["nodeflow.dev/abc"]  # a template with no override is left out
    assert {k: req[k] for k in options} == options
    assert [t["ResourceType"] for t in req["TagSpecifications"]] == ["instance", "volume", "fleet"]


def test_template_name_follows_its_data() -> None:
    a = fleet.template_name({"ImageId": "ami-1", "UserData": "x"})
    assert a == fleet.template_name({"UserData": "x", "ImageId": "ami-1"}) and a.startswith("nodeflow.dev/")
    assert a != fleet.template_name({"ImageId": "ami-2", "UserData": "x"})


def _err(itype: str, zone: str, code: str = "InsufficientInstanceCapacity") -> dict:
    return {"ErrorCode": code, "ErrorMessage": "no capacity",
            "LaunchTemplateAndOverrides": {"Overrides": {"InstanceType": itype, "AvailabilityZone": zone}}}


def test_an_instance_beside_errors_is_a_launch() -> None:
    answer = fleet.read_answer({"Instances": [{"InstanceIds": ["i-1"], "InstanceType": "c5.large"}],
                                "Errors": [_err("m5.large", "us-east-1a")]})
    assert (answer.instance_id, answer.instance_type) == ("i-1", "c5.large")
    assert [(e.instance_type, e.zone, e.capacity) for e in answer.errors] == [("m5.large", "us-east-1a", True)]
    assert not answer.all_capacity


def test_no_instance_is_insufficient_capacity_only_when_every_error_is_about_capacity() -> None:
    ice = fleet.read_answer({"Instances": [], "Errors": [_err("m5.large", "us-east-1a"),
                                                          _err("c5.large", "us-east-1b", "UnfulfillableCapacity")]})
    assert ice.instance_id is None and ice.all_capacity
    mixed = fleet.read_answer({"Errors": [_err("m5.large", "us-east-1a"), _err("", "", "InvalidParameterValue")]})
    assert not mixed.all_capacity
    assert fleet.combined_message(mixed.errors) == \
        "InsufficientInstanceCapacity: no capacity; InvalidParameterValue: no capacity"


def test_the_answer_keeps_the_override_the_instance_was_launched_from() -> None:
    ov = {"InstanceType": "c5.large", "SubnetId": "subnet-b", "AvailabilityZone": "us-east-1b", "ImageId": "ami-1"}
    answer = fleet.read_answer({"Instances": [{"InstanceIds": ["i-2"], "InstanceType": "c5.large",
                                               "LaunchTemplateAndOverrides": {"Overrides": ov}}]})
    assert answer.override == ov and answer.errors == ()


def test_overlay_prices_make_the_request_prioritized_in_their_order() -> None:
    base = {("m5.large", "us-east-1a"): 0.096, ("c5.large", "us-east-1a"): 0.085}
    overlaid = [("m5.large", _off("us-east-1a", 0.05)), ("c5.large", _off("us-east-1a", 0.085))]
    assert fleet.overlay_priced(overlaid, lambda t, o: base[(t, o.zone)])
    assert not fleet.overlay_priced([("c5.large", _off("us-east-1a", 0.085))], lambda t, o: base[(t, o.zone)])
    ovs = fleet.overrides(fleet.order_types(overlaid), overlaid, {"us-east-1a": "s"}, prioritized=True)
    assert [(o.instance_type, o.request()["Priority"]) for o in ovs] == [("m5.large", 0.05), ("c5.large", 0.085)]
    req = fleet.fleet_request([("lt", ovs)], "spot", {}, "t", prioritized=True)
    assert req["SpotOptions"] == {"AllocationStrategy": "capacity-optimized-prioritized"}
    assert fleet.allocation_options("on-demand", True) == {"OnDemandOptions": {"AllocationStrategy": "prioritized"}}
