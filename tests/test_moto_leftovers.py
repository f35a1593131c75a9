"""Each test leaves the process's shared EC2 stand-in with nothing running (tests/support/moto_fixtures.py): every
simulated world lists all of its region's live instances each poll, so what one test leaves costs every later one."""

from __future__ import annotations

import boto3
from support.moto_fixtures import end_leftovers

IMAGE = "ami-12c6146b"  # in moto's bundled image list


def _live(ec2: object, ids: list[str]) -> list[str]:
    found = ec2.describe_instances(InstanceIds=ids)["Reservations"]  # type: ignore[attr-defined]
    return [i["InstanceId"] for r in found for i in r["Instances"] if i["State"]["Name"] != "terminated"]


def test_what_runs_in_either_region_is_terminated_and_counted(moto_endpoint: str) -> None:
    regions = {r: boto3.client("ec2", region_name=r, endpoint_url=moto_endpoint) for r in ("us-east-1", "eu-west-1")}
    east, west = regions["us-east-1"], regions["eu-west-1"]
    end_leftovers(moto_endpoint)  # whatever an earlier test of this process left
    ran = [i["InstanceId"] for i in east.run_instances(ImageId=IMAGE, MinCount=3, MaxCount=3)["Instances"]]
    east.terminate_instances(InstanceIds=ran[:1])  # already ended: not counted again
    west_ids = [i["InstanceId"] for i in west.run_instances(ImageId=IMAGE, MinCount=2, MaxCount=2)["Instances"]]
    west.stop_instances(InstanceIds=west_ids[:1])  # stopped still lists, and still costs a poll

    assert end_leftovers(moto_endpoint) == 4
    assert _live(east, ran) == [] and _live(west, west_ids) == []
    assert end_leftovers(moto_endpoint) == 0
