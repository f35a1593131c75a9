"""`nodeflow demo --region`'s pieces: the region's zones come from EC2's DescribeAvailabilityZones (moto's copy of
AWS's region data), the demo's subnets and the bundled scenario's nodes take them, and the report counts launches by
zone. us-east-1 keeps the zones the demo always had. The whole demo in eu-west-1: tests/e2e/test_demo.py."""

from __future__ import annotations

import boto3
import pytest

from api import labels as L
from api.labels import NODECLAIM_UID_TAG
from devstack.audit import our_launches_by_zone
from devstack.demo_aws import ZONES, DemoAws, region_zones
from devstack.demo_scenario import demo_cluster
from starter.cli import run

EU = ("eu-west-1a", "eu-west-1b", "eu-west-1c")


def _clients(region: str, endpoint: str) -> tuple[object, object]:
    kw = {"region_name": region, "endpoint_url": endpoint}
    return boto3.client("ec2", **kw), boto3.client("iam", **kw)


def test_the_zones_of_a_region_and_its_subnets(moto_endpoint: str) -> None:
    ec2, iam = _clients("eu-west-1", moto_endpoint)
    assert region_zones(ec2) == EU
    assert region_zones(_clients("us-east-1", moto_endpoint)[0]) == ZONES  # the default demo's, as before
    aws = DemoAws(ec2, iam, zones=region_zones(ec2)).create()
    subnets = ec2.describe_subnets(SubnetIds=list(aws.subnets.values()))["Subnets"]
    assert sorted(s["AvailabilityZone"] for s in subnets) == list(EU)


def test_the_bundled_scenario_in_another_region() -> None:
    objs = demo_cluster(node_classes=True, zones=EU)
    nodes = [o for o in objs if o["kind"] in ("Node", "NodeClaim")]
    assert len(nodes) == 60
    assert {n["metadata"]["labels"][L.ZONE_LABEL] for n in nodes} == set(EU)
    for n in nodes:
        provider = n["spec"]["providerID"] if n["kind"] == "Node" else n["status"]["providerID"]
        assert provider.startswith(f"aws:///{n['metadata']['labels'][L.ZONE_LABEL]}/")
    assert "us-east-1" not in repr(objs)


def test_launches_by_zone_count_only_nodeflows() -> None:
    def instance(zone: str, ours: bool) -> dict[str, object]:
        tags = [{"Key": NODECLAIM_UID_TAG, "Value": "u"}] if ours else []
        return {"Placement": {"AvailabilityZone": zone}, "Tags": tags}

    instances = [instance("eu-west-1a", True), instance("eu-west-1a", True), instance("eu-west-1c", True),
                 instance("eu-west-1b", False)]
    assert our_launches_by_zone(instances) == {"eu-west-1a": 2, "eu-west-1c": 1}


def test_an_unknown_region_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["demo", "--headless", "--region", "xx-nowhere-1"]) != 0
    assert "--region xx-nowhere-1: not an EC2 region" in capsys.readouterr().err
