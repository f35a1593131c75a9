"""The benchmarks' moto (`devstack.moto_indexed`) and the tests' shared one (`devstack.moto_fleet`) answer as moto
as shipped does: the same instances, images, tags, tag filters and DescribeTags results, so a figure measured
against them is a figure about nodeflow and a test against them checks nodeflow against moto."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

from devstack.moto_indexed import RenderStore, page
from devstack.moto_tags import exact_resource_id
from devstack.processes import MotoServer

AMI = "ami-0a1b2c3d4e5f60718"
# One xdist worker runs the module: its server and render cache are module fixtures, which four workers would each
# start and fill again.
pytestmark = pytest.mark.xdist_group("moto_indexed")


@pytest.fixture(scope="module")
def render_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh directory for the stand-in's rendered catalog answers (not the user's cache)."""
    path = tmp_path_factory.mktemp("moto-render")
    before = os.environ.get("NODEFLOW_MOTO_RENDER_CACHE")
    os.environ["NODEFLOW_MOTO_RENDER_CACHE"] = str(path)
    try:
        yield path
    finally:
        if before is None:
            os.environ.pop("NODEFLOW_MOTO_RENDER_CACHE", None)
        else:
            os.environ["NODEFLOW_MOTO_RENDER_CACHE"] = before


@pytest.fixture(scope="module")
def plain_endpoint() -> Iterator[str]:
    """moto_server as shipped: what the stand-ins' answers are compared with."""
    with MotoServer(indexed_tags=False) as moto:
        yield moto.endpoint


@pytest.fixture(scope="module")
def indexed_endpoint(render_cache: Path) -> Iterator[str]:
    with MotoServer(indexed_tags=True) as moto:
        yield moto.endpoint


def _ec2(endpoint: str) -> Any:
    return boto3.client("ec2", endpoint_url=endpoint, region_name="eu-west-3",
                        aws_access_key_id="testing", aws_secret_access_key="testing")


def _populate(ec2: Any) -> list[str]:
    """Five instances with overlapping tags, one terminated, one retagged after launch, and two tagged images."""
    ids = []
    for i in range(5):
        tags = [{"Key": "karpenter.sh/nodeclaim", "Value": f"claim-{i}"},
                {"Key": "karpenter.sh/nodepool", "Value": "a" if i % 2 else "b"}, {"Key": "Name", "Value": f"n{i}"}]
        resp = ec2.run_instances(ImageId=AMI, InstanceType="m5.large", MinCount=1, MaxCount=1,
                                 TagSpecifications=[{"ResourceType": "instance", "Tags": tags}])
        ids.append(resp["Instances"][0]["InstanceId"])
    ec2.create_tags(Resources=[ids[1]], Tags=[{"Key": "extra", "Value": "yes"}])
    ec2.delete_tags(Resources=[ids[2]], Tags=[{"Key": "Name"}])
    ec2.terminate_instances(InstanceIds=[ids[3]])
    for i, team in ((0, "a"), (4, "b")):
        image_tags = [{"ResourceType": "image", "Tags": [{"Key": "team", "Value": team}]}]
        image = ec2.create_image(InstanceId=ids[i], Name=f"image-of-{ids[i]}", TagSpecifications=image_tags)
        ids.append(image["ImageId"])
    return ids


def _shape(ec2: Any, ids: list[str]) -> dict[str, Any]:
    """What nodeflow and the simulator read, with moto's generated ids replaced by their launch order."""
    order = {iid: f"#{n}" for n, iid in enumerate(ids)}

    def instances(**kw: Any) -> list[tuple[str, str, list[tuple[str, str]]]]:
        out = [(order[i["InstanceId"]], i["State"]["Name"], [(t["Key"], t["Value"]) for t in i.get("Tags", [])])
               for r in ec2.describe_instances(**kw)["Reservations"] for i in r["Instances"]
               if i["InstanceId"] in order]
        return sorted(out)

    def tags(**kw: Any) -> list[tuple[str, str, str, str]]:
        return sorted((order[t["ResourceId"]], t["ResourceType"], t["Key"], t["Value"])
                      for t in ec2.describe_tags(**kw)["Tags"] if t["ResourceId"] in order)

    def images(**kw: Any) -> list[tuple[str, list[tuple[str, str]]]]:
        return sorted((order[i["ImageId"]], [(t["Key"], t["Value"]) for t in i.get("Tags", [])])
                      for i in ec2.describe_images(**kw)["Images"] if i["ImageId"] in order)

    live = {"Name": "instance-state-name", "Values": ["pending", "running"]}
    return {
        "all": instances(InstanceIds=[i for i in ids if i.startswith("i-")]),
        "by claim tag": instances(Filters=[{"Name": "tag:karpenter.sh/nodeclaim", "Values": ["claim-1", "claim-3"]}]),
        "claim and live": instances(Filters=[{"Name": "tag:karpenter.sh/nodeclaim", "Values": ["claim-3"]}, live]),
        "pool wildcard": instances(Filters=[{"Name": "tag:karpenter.sh/nodepool", "Values": ["a*"]}]),
        "tag-key": instances(Filters=[{"Name": "tag-key", "Values": ["extra"]}]),
        "tags of one": tags(Filters=[{"Name": "resource-id", "Values": [ids[1]]}]),
        "tags of two": tags(Filters=[{"Name": "resource-id", "Values": [ids[0], ids[2]]}]),
        "tags by key": tags(Filters=[{"Name": "key", "Values": ["Name"]}]),
        "images by tag": images(Filters=[{"Name": "tag:team", "Values": ["a"]}]),
        "images by tag-key": images(Filters=[{"Name": "tag-key", "Values": ["team"]}]),
    }


@pytest.mark.parametrize("stand_in", ["indexed_endpoint", "moto_endpoint"])
def test_the_stand_ins_answer_as_moto_does(plain_endpoint: str, stand_in: str,
                                           request: pytest.FixtureRequest) -> None:
    plain, indexed = _ec2(plain_endpoint), _ec2(request.getfixturevalue(stand_in))
    expected, got = _shape(plain, _populate(plain)), _shape(indexed, _populate(indexed))
    assert expected["by claim tag"] and expected["tags of one"] and expected["images by tag"]  # they compare something
    assert got == expected


@pytest.mark.parametrize(("filters", "rid"), [
    ({"resource-id": ["i-0abc"]}, "i-0abc"),
    ({"resource-id": ["i-0*"]}, None),
    ({"resource-id": ["i-1", "i-2"]}, None),
    ({"resource-id": ["i-1"], "key": ["Name"]}, None),
    (None, None),
])
def test_only_a_single_literal_resource_id_takes_the_index(filters: dict[str, list[str]] | None,
                                                           rid: str | None) -> None:
    assert exact_resource_id(filters) == rid


def _catalog_answers(ec2: Any) -> list[Any]:
    """Small static catalog queries (each asked twice: the second answer is the kept rendering) and one error."""
    out: list[Any] = []
    for _ in range(2):
        out.append(ec2.describe_instance_types(InstanceTypes=["m5.large", "c5.large"])["InstanceTypes"])
        out.append(ec2.describe_instance_types(InstanceTypes=["r6g.medium"])["InstanceTypes"])
        out.append(ec2.describe_instance_type_offerings(
            LocationType="availability-zone",
            Filters=[{"Name": "instance-type", "Values": ["m5.large"]}])["InstanceTypeOfferings"])
        with pytest.raises(ec2.exceptions.ClientError) as err:
            ec2.describe_instance_types(InstanceTypes=["m5.nosuch"])
        out.append(err.value.response["Error"]["Code"])
    return out


def test_kept_catalog_answers_are_moto_s_per_query_and_region(indexed_endpoint: str, plain_endpoint: str,
                                                             render_cache: Path) -> None:
    """The rendered DescribeInstanceTypes / DescribeInstanceTypeOfferings answer is kept per query and region:
    a repeat, another query, another region and an error all answer as plain moto does, and so does a second
    stand-in process that reads what the first one kept."""
    plain, indexed = _ec2(plain_endpoint), _ec2(indexed_endpoint)
    expected, got = _catalog_answers(plain), _catalog_answers(indexed)
    assert got == expected
    assert got[0] != got[1] and got[3] == "InvalidInstanceType"  # the queries differ; the error is not kept
    other = boto3.client("ec2", endpoint_url=indexed_endpoint, region_name="us-west-2",
                         aws_access_key_id="testing", aws_secret_access_key="testing")
    zones = {o["Location"] for o in _catalog_answers(other)[2]}
    assert zones and all(z.startswith("us-west-2") for z in zones)
    assert len(list(render_cache.glob("*.json"))) == 6  # 3 queries x 2 regions
    with MotoServer(indexed_tags=True) as second:
        assert _catalog_answers(_ec2(second.endpoint)) == expected


def test_a_spot_price_history_page_is_kept_per_query_and_hour(indexed_endpoint: str) -> None:
    """The stand-in's spot prices depend on the type, zone and hour (devstack.moto_spot), so a rendered page is kept
    by query and the hours its window covers: a second StartTime in the same hour gets the kept page, and a page
    rendered afresh for another query answers the same history."""
    ec2 = _ec2(indexed_endpoint)
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=2)

    def history(start_minute: int, **extra: Any) -> list[dict[str, Any]]:
        return ec2.describe_spot_price_history(InstanceTypes=["m5.large"], StartTime=hour + timedelta(
            minutes=start_minute), EndTime=hour + timedelta(minutes=50), **extra)["SpotPriceHistory"]

    rendered = history(5)
    assert rendered and {r["InstanceType"] for r in rendered} == {"m5.large"}
    assert history(20) == rendered  # kept: the same hours
    assert history(5, MaxResults=999) == rendered  # another query, rendered afresh: the same prices
    other = ec2.describe_spot_price_history(InstanceTypes=["c5.large"], StartTime=hour + timedelta(minutes=5),
                                            EndTime=hour + timedelta(minutes=50))["SpotPriceHistory"]
    assert other and {r["InstanceType"] for r in other} == {"c5.large"}


def test_a_torn_or_foreign_kept_answer_is_rendered_again(tmp_path: Path) -> None:
    key = ("123456789012", "eu-west-3", "DescribeInstanceTypes", (("Action", ("DescribeInstanceTypes",)),))
    RenderStore(tmp_path, "5.2.5").put(key, 200, {"Content-Type": "text/xml"}, "<xml/>")
    assert RenderStore(tmp_path, "5.2.5").get(key) == (200, {"Content-Type": "text/xml"}, "<xml/>")
    assert RenderStore(tmp_path, "5.3.0").get(key) is None  # another moto version
    (path,) = tmp_path.glob("*.json")
    path.write_text(path.read_text()[:20])
    assert RenderStore(tmp_path, "5.2.5").get(key) is None


def test_describe_instance_types_answers_in_pages_as_ec2_does(indexed_endpoint: str) -> None:
    """Asked with MaxResults the stand-in pages (EC2's 5-100 per page, NextToken), and the pages together are moto's
    one answer, in its order; without MaxResults it answers all at once, as before. moto's answer is read from its
    backend in this process: asking a plain moto_server for all 1,395 types cost 5 CPU-s there and 2 here."""
    from moto.ec2.models.instance_types import InstanceTypeBackend

    from gateways.instance_discovery import describe_instance_types

    names = [t["InstanceType"] for t in InstanceTypeBackend().describe_instance_types()]  # what moto answers
    first = _ec2(indexed_endpoint).describe_instance_types(MaxResults=100)
    assert len(first["InstanceTypes"]) == 100 and first["NextToken"]
    paged = [t["InstanceType"] for t in describe_instance_types(_ec2(indexed_endpoint))]
    assert len(names) > 1000 and paged == names


@pytest.mark.parametrize(("max_results", "token", "expected"), [
    (None, None, (list(range(12)), None)),
    (5, None, ([0, 1, 2, 3, 4], "5")),
    (5, "10", ([10, 11], None)),
    (500, None, (list(range(12)), None)),
])
def test_page(max_results: int | None, token: str | None, expected: tuple[list[int], str | None]) -> None:
    assert page(list(range(12)), max_results, token) == expected
