"""boto3 against the EC2 stand-in process (`cloud_endpoint`): DescribeSpotPriceHistory and the Pricing API answer
in EC2's and the Price List API's shapes, honour their filters and page as the real services do."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from api import price_table

pytestmark = pytest.mark.xdist_group("cloud_standin")

REGION = "eu-west-1"
AT = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=3)
KARPENTER_FILTERS = [("serviceCode", "AmazonEC2"), ("preInstalledSw", "NA"), ("operatingSystem", "Linux"),
                     ("capacitystatus", "Used"), ("marketoption", "OnDemand"), ("tenancy", "Shared"),
                     ("productFamily", "Compute Instance")]


def _ec2(endpoint: str, region: str = REGION) -> Any:
    return boto3.client("ec2", endpoint_url=endpoint, region_name=region)


def _pricing(endpoint: str) -> Any:
    return boto3.client("pricing", endpoint_url=endpoint, region_name="us-east-1")


def _terms(**fields: str) -> list[dict[str, str]]:
    return [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in fields.items()]


def _all_spot(ec2: Any, **kwargs: Any) -> list[dict[str, Any]]:
    pages = ec2.get_paginator("describe_spot_price_history").paginate(**kwargs)
    return [r for page in pages for r in page["SpotPriceHistory"]]


def test_spot_prices_in_force_differ_by_zone_and_type(cloud_endpoint: str) -> None:
    history = _ec2(cloud_endpoint).describe_spot_price_history(
        InstanceTypes=["m5.large", "c5.xlarge", "r5.2xlarge"], StartTime=AT, EndTime=AT)["SpotPriceHistory"]
    zones = {r["AvailabilityZone"] for r in history}
    assert len(zones) >= 3 and all(z.startswith(REGION) for z in zones)
    assert len(history) == 3 * len(zones)  # one record in force per (type, zone)
    for instance_type in ("m5.large", "c5.xlarge", "r5.2xlarge"):
        prices = {r["SpotPrice"] for r in history if r["InstanceType"] == instance_type}
        assert len(prices) > 1, instance_type
        reference = price_table.on_demand_price(REGION, instance_type) or price_table.on_demand_price(
            "us-east-1", instance_type)
        assert reference and all(0.25 <= float(p) / reference <= 0.45 for p in prices)
    assert all(r["Timestamp"] <= AT and r["ProductDescription"] == "Linux/UNIX" for r in history)


def test_a_day_of_history_with_timestamps(cloud_endpoint: str) -> None:
    history = _ec2(cloud_endpoint).describe_spot_price_history(
        InstanceTypes=["m5.large"], AvailabilityZone=f"{REGION}b")["SpotPriceHistory"]
    stamps = [r["Timestamp"] for r in history]
    assert len(stamps) >= 4 and stamps == sorted(stamps)
    now = datetime.now(UTC)
    assert stamps[0] <= now - timedelta(hours=23) and stamps[-1] <= now
    assert len({r["SpotPrice"] for r in history}) > 1


def test_start_and_end_time_bound_the_history(cloud_endpoint: str) -> None:
    start, end = AT - timedelta(hours=10), AT - timedelta(hours=2)
    history = _ec2(cloud_endpoint).describe_spot_price_history(
        InstanceTypes=["c5.large"], StartTime=start, EndTime=end)["SpotPriceHistory"]
    by_zone: dict[str, list[datetime]] = {}
    for r in history:
        by_zone.setdefault(r["AvailabilityZone"], []).append(r["Timestamp"])
    for stamps in by_zone.values():
        assert stamps[0] <= start  # the price in force at StartTime
        assert all(start < t <= end for t in stamps[1:])


def test_filters_and_parameters(cloud_endpoint: str) -> None:
    ec2 = _ec2(cloud_endpoint)
    zone_filtered = ec2.describe_spot_price_history(
        StartTime=AT, EndTime=AT, Filters=[{"Name": "availability-zone", "Values": [f"{REGION}a"]},
                                           {"Name": "instance-type", "Values": ["m5.*"]}])["SpotPriceHistory"]
    assert zone_filtered and {r["AvailabilityZone"] for r in zone_filtered} == {f"{REGION}a"}
    assert all(r["InstanceType"].startswith("m5.") for r in zone_filtered)
    assert {"m5.large", "m5.xlarge"} <= {r["InstanceType"] for r in zone_filtered}
    price = next(r["SpotPrice"] for r in zone_filtered if r["InstanceType"] == "m5.large")
    by_price = ec2.describe_spot_price_history(StartTime=AT, EndTime=AT, InstanceTypes=["m5.large", "m5.xlarge"],
                                               Filters=[{"Name": "spot-price", "Values": [price]}])
    assert {r["SpotPrice"] for r in by_price["SpotPriceHistory"]} == {price}
    plain = ec2.describe_spot_price_history(StartTime=AT, EndTime=AT, InstanceTypes=["m5.large"])
    assert plain["SpotPriceHistory"]
    disjoint = ec2.describe_spot_price_history(StartTime=AT, EndTime=AT, InstanceTypes=["m5.large"],
                                               Filters=[{"Name": "instance-type", "Values": ["c5.large"]}])
    assert disjoint["SpotPriceHistory"] == []  # a parameter and a filter on one field are ANDed
    one_zone = ec2.describe_spot_price_history(StartTime=AT, EndTime=AT, InstanceTypes=["m5.large"],
                                               AvailabilityZone=f"{REGION}c")["SpotPriceHistory"]
    assert [(r["InstanceType"], r["AvailabilityZone"]) for r in one_zone] == [("m5.large", f"{REGION}c")]
    windows = ec2.describe_spot_price_history(InstanceTypes=["m5.large"], ProductDescriptions=["Windows"])
    assert windows["SpotPriceHistory"] == []
    both = ec2.describe_spot_price_history(InstanceTypes=["m5.large"], StartTime=AT, EndTime=AT,
                                           ProductDescriptions=["Linux/UNIX", "Linux/UNIX (Amazon VPC)"])
    assert both["SpotPriceHistory"]
    with pytest.raises(ClientError) as err:
        ec2.describe_spot_price_history(Filters=[{"Name": "no-such-filter", "Values": ["x"]}])
    assert err.value.response["Error"]["Code"] == "InvalidFilter"


def test_paging_gives_the_same_records_as_one_page(cloud_endpoint: str) -> None:
    ec2 = _ec2(cloud_endpoint)
    query = {"InstanceTypes": ["m5.large", "m6i.large", "c6g.large"], "StartTime": AT - timedelta(hours=12)}
    whole = ec2.describe_spot_price_history(**query)
    assert "NextToken" not in whole
    first = ec2.describe_spot_price_history(MaxResults=7, **query)
    assert len(first["SpotPriceHistory"]) == 7 and first["NextToken"]
    paged = _all_spot(ec2, PaginationConfig={"PageSize": 7}, **query)
    assert paged == whole["SpotPriceHistory"] and len(paged) > 7


def test_another_region_has_its_own_zones(cloud_endpoint: str) -> None:
    history = _ec2(cloud_endpoint, "ap-southeast-2").describe_spot_price_history(
        InstanceTypes=["m5.large"], StartTime=AT, EndTime=AT)["SpotPriceHistory"]
    assert history and all(r["AvailabilityZone"].startswith("ap-southeast-2") for r in history)


def test_get_products_serves_the_tables_price_in_the_real_shape(cloud_endpoint: str) -> None:
    pricing = _pricing(cloud_endpoint)
    for region in ("us-east-1", "eu-central-1"):
        expected = price_table.on_demand_price(region, "m5.large")
        assert expected is not None
        out = pricing.get_products(ServiceCode="AmazonEC2", FormatVersion="aws_v1",
                                   Filters=_terms(regionCode=region, instanceType="m5.large"))
        assert out["FormatVersion"] == "aws_v1" and len(out["PriceList"]) == 1
        assert isinstance(out["PriceList"][0], str)
        doc = json.loads(out["PriceList"][0])
        product = doc["product"]
        assert product["productFamily"] == "Compute Instance"
        assert {k: product["attributes"][k] for k in ("instanceType", "regionCode", "operatingSystem", "tenancy",
                                                       "preInstalledSw", "capacitystatus", "vcpu", "memory")} == {
            "instanceType": "m5.large", "regionCode": region, "operatingSystem": "Linux", "tenancy": "Shared",
            "preInstalledSw": "NA", "capacitystatus": "Used", "vcpu": "2", "memory": "8 GiB"}
        (term_key, term), = doc["terms"]["OnDemand"].items()
        assert term_key == f"{product['sku']}.{term['offerTermCode']}"
        (dimension,) = term["priceDimensions"].values()
        assert dimension["unit"] == "Hrs" and float(dimension["pricePerUnit"]["USD"]) == expected


def test_term_match_filters_select_a_regions_products_across_pages(cloud_endpoint: str) -> None:
    pricing = _pricing(cloud_endpoint)
    region = "eu-central-1"
    filters = _terms(regionCode=region) + [{"Type": "TERM_MATCH", "Field": f, "Value": v}
                                            for f, v in KARPENTER_FILTERS]
    pages = list(pricing.get_paginator("get_products").paginate(ServiceCode="AmazonEC2", Filters=filters))
    docs = [json.loads(item) for page in pages for item in page["PriceList"]]
    assert len(pages) > 1 and all(len(p["PriceList"]) <= 100 for p in pages)
    prices = {}
    for doc in docs:
        assert doc["product"]["attributes"]["regionCode"] == region
        (term,) = doc["terms"]["OnDemand"].values()
        (dimension,) = term["priceDimensions"].values()
        prices[doc["product"]["attributes"]["instanceType"]] = float(dimension["pricePerUnit"]["USD"])
    assert prices == price_table.region_prices(region)
    none = pricing.get_products(ServiceCode="AmazonEC2", Filters=_terms(regionCode=region, operatingSystem="Windows"))
    assert none["PriceList"] == [] and "NextToken" not in none
    nothing_there = pricing.get_products(ServiceCode="AmazonEC2", Filters=_terms(regionCode="xx-nowhere-1"))
    assert nothing_there["PriceList"] == []


def test_describe_services_attribute_values_and_errors(cloud_endpoint: str) -> None:
    pricing = _pricing(cloud_endpoint)
    (service,) = pricing.describe_services(ServiceCode="AmazonEC2")["Services"]
    assert service["ServiceCode"] == "AmazonEC2"
    assert {"instanceType", "regionCode", "operatingSystem", "tenancy"} <= set(service["AttributeNames"])
    pages = pricing.get_paginator("get_attribute_values").paginate(
        ServiceCode="AmazonEC2", AttributeName="regionCode", PaginationConfig={"PageSize": 10})
    values = [v["Value"] for page in pages for v in page["AttributeValues"]]
    assert values == price_table.regions()
    for call, code in ((lambda: pricing.get_products(ServiceCode="AmazonNoSuch"), "NotFoundException"),
                       (lambda: pricing.get_products(ServiceCode="AmazonEC2", NextToken="garbage"),
                        "InvalidNextTokenException"),
                       (lambda: pricing.get_attribute_values(ServiceCode="AmazonEC2", AttributeName="nope"),
                        "NotFoundException")):
        with pytest.raises(ClientError) as err:
            call()
        assert err.value.response["Error"]["Code"] == code


def test_the_rest_of_ec2_is_still_moto(cloud_endpoint: str) -> None:
    offerings = _ec2(cloud_endpoint).describe_instance_type_offerings(
        LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": ["m5.large"]}])
    assert {o["Location"] for o in offerings["InstanceTypeOfferings"]} >= {f"{REGION}a", f"{REGION}b"}
