"""The stand-in's capacity reservations answer as EC2 (devstack/moto_reservations.py): created, described by id
and by filters, a fleet whose template targets one launches into it while it has room and is refused with
ReservationCapacityExceeded once it is used up, and a terminated instance gives its place back."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

IMAGE = "ami-12c6146b"


@pytest.fixture
def ec2(moto_endpoint: str) -> Any:
    return boto3.client("ec2", region_name="us-east-1", endpoint_url=moto_endpoint)


def _reservation(ec2: Any, count: int, tags: dict[str, str], end: datetime | None = None) -> str:
    params: dict[str, Any] = {
        "InstanceType": "m5.large", "InstancePlatform": "Linux/UNIX", "AvailabilityZone": "us-east-1a",
        "InstanceCount": count, "InstanceMatchCriteria": "targeted",
        "TagSpecifications": [{"ResourceType": "capacity-reservation",
                               "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]}
    if end is not None:
        params.update(EndDate=end, EndDateType="limited")
    return str(ec2.create_capacity_reservation(**params)["CapacityReservation"]["CapacityReservationId"])


def _fleet(ec2: Any, reservation: str) -> dict[str, Any]:
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.0.0/24", AvailabilityZone="us-east-1a")["Subnet"]
    name = f"lt-{uuid.uuid4().hex[:8]}"
    ec2.create_launch_template(LaunchTemplateName=name, LaunchTemplateData={
        "ImageId": IMAGE, "CapacityReservationSpecification": {
            "CapacityReservationPreference": "capacity-reservations-only",
            "CapacityReservationTarget": {"CapacityReservationId": reservation}}})
    return {"Type": "instant",
            "TargetCapacitySpecification": {"TotalTargetCapacity": 1, "DefaultTargetCapacityType": "on-demand"},
            "LaunchTemplateConfigs": [{"LaunchTemplateSpecification": {"LaunchTemplateName": name,
                                                                       "Version": "$Latest"},
                                       "Overrides": [{"InstanceType": "m5.large", "SubnetId": subnet["SubnetId"],
                                                      "AvailabilityZone": "us-east-1a"}]}]}


def _available(ec2: Any, rid: str) -> int:
    (cr,) = ec2.describe_capacity_reservations(CapacityReservationIds=[rid])["CapacityReservations"]
    return int(cr["AvailableInstanceCount"])


def test_described_by_id_and_by_tag_filters(ec2: Any) -> None:
    team = uuid.uuid4().hex[:8]
    end = datetime.now(UTC) + timedelta(hours=2)
    block = _reservation(ec2, 2, {"team": team, "nodeflow.dev/reservation-type": "capacity-block"}, end)
    other = _reservation(ec2, 1, {"team": "someone-else"})
    (by_id,) = ec2.describe_capacity_reservations(CapacityReservationIds=[block])["CapacityReservations"]
    assert by_id["ReservationType"] == "capacity-block" and by_id["AvailableInstanceCount"] == 2
    assert abs((by_id["EndDate"] - end).total_seconds()) < 1
    found = ec2.describe_capacity_reservations(Filters=[{"Name": "tag:team", "Values": [team]},
                                                        {"Name": "state", "Values": ["active"]}])
    assert [c["CapacityReservationId"] for c in found["CapacityReservations"]] == [block]
    keyed = ec2.describe_capacity_reservations(Filters=[{"Name": "tag-key", "Values": ["team"]}])
    assert {block, other} <= {c["CapacityReservationId"] for c in keyed["CapacityReservations"]}
    with pytest.raises(Exception, match=r"InvalidCapacityReservationId\.NotFound"):
        ec2.describe_capacity_reservations(CapacityReservationIds=["cr-0000000000000dead"])


def test_a_fleet_fills_the_reservation_then_is_refused_and_a_termination_frees_a_place(ec2: Any) -> None:
    rid = _reservation(ec2, 1, {"team": uuid.uuid4().hex[:8]})
    request = _fleet(ec2, rid)
    first = ec2.create_fleet(**request)
    (iid,) = first["Instances"][0]["InstanceIds"]
    assert _available(ec2, rid) == 0
    refused = ec2.create_fleet(**request)
    assert refused.get("Instances", []) == []
    assert [e["ErrorCode"] for e in refused["Errors"]] == ["ReservationCapacityExceeded"]
    assert refused["Errors"][0]["LaunchTemplateAndOverrides"]["Overrides"]["InstanceType"] == "m5.large"
    ec2.terminate_instances(InstanceIds=[iid])
    assert _available(ec2, rid) == 1
    again = ec2.create_fleet(**request)
    assert again["Instances"][0]["InstanceIds"]
