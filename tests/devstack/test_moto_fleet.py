"""The stand-in's instant CreateFleet answers as EC2 (devstack/moto_fleet.py, simulator/ice.py): the template's
parameters reach the instance, a repeated ClientToken gets the first answer, and refused overrides come back as
errors beside the instance of another, or alone."""

from __future__ import annotations

import uuid
from typing import Any

import boto3
import pytest

from simulator.ice import IceInjector

IMAGE = "ami-12c6146b"  # in moto's bundled image list


@pytest.fixture
def ec2(moto_endpoint: str) -> Any:
    return boto3.client("ec2", region_name="us-east-1", endpoint_url=moto_endpoint)


def _world(ec2: Any) -> tuple[dict[str, str], str, str]:
    vpc = ec2.create_vpc(CidrBlock="10.7.0.0/16")["Vpc"]["VpcId"]
    subnets = {z: ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.7.{i}.0/24", AvailabilityZone=z)["Subnet"]["SubnetId"]
               for i, z in enumerate(("us-east-1a", "us-east-1b"))}
    group = ec2.create_security_group(GroupName=f"g-{uuid.uuid4().hex[:8]}", Description="d", VpcId=vpc)["GroupId"]
    name = f"lt-{uuid.uuid4().hex[:8]}"
    ec2.create_launch_template(LaunchTemplateName=name, LaunchTemplateData={
        "ImageId": IMAGE, "SecurityGroupIds": [group],
        "MetadataOptions": {"HttpTokens": "required", "HttpPutResponseHopLimit": 1},
        "BlockDeviceMappings": [{"DeviceName": "/dev/xvda", "Ebs": {"VolumeSize": 50, "VolumeType": "gp3"}}]})
    return subnets, group, name


def _request(name: str, subnets: dict[str, str], types: list[str], token: str) -> dict[str, Any]:
    overrides = [{"InstanceType": t, "SubnetId": s, "AvailabilityZone": z} for t in types for z, s in subnets.items()]
    template = {"LaunchTemplateName": name, "Version": "$Latest"}
    return {"Type": "instant", "ClientToken": token,
            "TargetCapacitySpecification": {"TotalTargetCapacity": 1, "DefaultTargetCapacityType": "on-demand"},
            "OnDemandOptions": {"AllocationStrategy": "lowest-price"},
            "LaunchTemplateConfigs": [{"LaunchTemplateSpecification": template, "Overrides": overrides}],
            "TagSpecifications": [{"ResourceType": "instance", "Tags": [{"Key": "k", "Value": token}]}]}


def _instance(ec2: Any, iid: str) -> dict[str, Any]:
    return ec2.describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0]


def test_the_template_reaches_the_instance_and_the_token_repeats_the_answer(ec2: Any) -> None:
    subnets, group, name = _world(ec2)
    token = uuid.uuid4().hex
    first = ec2.create_fleet(**_request(name, subnets, ["c5.large", "m5.large"], token))
    iid = first["Instances"][0]["InstanceIds"][0]
    inst = _instance(ec2, iid)
    assert inst["InstanceType"] == "c5.large" and inst["SubnetId"] == subnets["us-east-1a"]  # the first override
    assert [g["GroupId"] for g in inst["SecurityGroups"]] == [group]
    assert inst["MetadataOptions"]["HttpTokens"] == "required"
    assert {t["Key"]: t["Value"] for t in inst["Tags"]}["k"] == token
    again = ec2.create_fleet(**_request(name, subnets, ["c5.large", "m5.large"], token))
    assert again["FleetId"] == first["FleetId"] and again["Instances"][0]["InstanceIds"] == [iid]
    tagged = ec2.describe_instances(Filters=[{"Name": "tag:k", "Values": [token]}])["Reservations"]
    assert sum(len(r["Instances"]) for r in tagged) == 1


def test_refused_overrides_are_errors_beside_the_instance_or_alone(ec2: Any) -> None:
    subnets, _, name = _world(ec2)
    ice = IceInjector().install(ec2)
    ice.exhaust("c5.large")
    partial = ec2.create_fleet(**_request(name, subnets, ["c5.large", "m5.large"], uuid.uuid4().hex))
    assert partial["Instances"][0]["InstanceType"] == "m5.large"
    errors = [(e["ErrorCode"], e["LaunchTemplateAndOverrides"]["Overrides"]["InstanceType"],
               e["LaunchTemplateAndOverrides"]["Overrides"]["AvailabilityZone"]) for e in partial["Errors"]]
    assert errors == [("InsufficientInstanceCapacity", "c5.large", "us-east-1a"),
                      ("InsufficientInstanceCapacity", "c5.large", "us-east-1b")]
    ice.exhaust("m5.large", "us-east-1a")
    ice.exhaust("m5.large", "us-east-1b")
    none = ec2.create_fleet(**_request(name, subnets, ["c5.large", "m5.large"], uuid.uuid4().hex))
    assert none.get("Instances", []) == [] and len(none["Errors"]) == 4
