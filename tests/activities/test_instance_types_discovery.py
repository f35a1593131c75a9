"""Instance-type discovery against moto_server through boto3 (gateways/instance_types.py): DescribeInstanceTypes
and DescribeInstanceTypeOfferings answer with AWS's real data for every region; the devstack's EC2 stand-in adds
spot price history and the Pricing API over the bundled price table."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.config import Config

from api import price_table
from api.instance_types import labels as T
from gateways.instance_discovery import on_demand_prices, spot_prices
from gateways.instance_types import InstanceTypeProvider
from telemetry.metrics import INSTANCE_TYPE_REFRESHES

# One xdist worker runs the module, so `_CACHE` serves every test: spread over four workers, each discovered the
# regions again (a discovery is ~3.5 CPU-s here and as much in the EC2 stand-in).
pytestmark = pytest.mark.xdist_group("instance_discovery")

DEAD = "http://127.0.0.1:9"  # nothing listens: connection refused at once
NO_RETRY = Config(retries={"total_max_attempts": 1}, connect_timeout=2)


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


_CACHE: dict[tuple[str, str, str], tuple[InstanceTypeProvider, _Clock, object]] = {}


def _first_discovery(endpoint: str, region: str,
                     zones: frozenset[str] | None = None) -> tuple[InstanceTypeProvider, _Clock, object]:
    """One discovery per region and endpoint for the module: each still takes a few seconds (botocore parses 5.8 MB
    of DescribeInstanceTypes XML). The provider (on a clock the test moves) and its first catalog: the refresh test
    goes on from that first read instead of paying for another."""
    key = (endpoint, region, ",".join(sorted(zones or ())))
    if key not in _CACHE:
        ec2, pricing = _clients(endpoint, region)
        clock = _Clock()
        provider = InstanceTypeProvider(ec2, pricing, zones=set(zones) if zones else None, refresh_seconds=3600,
                                        clock=clock)
        _CACHE[key] = (provider, clock, provider.catalog())
    return _CACHE[key]


def _discovered(endpoint: str, region: str, zones: frozenset[str] | None = None) -> object:
    return _first_discovery(endpoint, region, zones)[2]


def _clients(endpoint: str, region: str) -> tuple[object, object]:
    ec2 = boto3.client("ec2", region_name=region, endpoint_url=endpoint)
    pricing = boto3.client("pricing", region_name="us-east-1", endpoint_url=endpoint)
    return ec2, pricing


@pytest.mark.parametrize("region", ["eu-west-1", "us-east-1"])
def test_a_region_gets_its_own_zones_and_types(cloud_endpoint: str, region: str) -> None:
    catalog = _discovered(cloud_endpoint, region)
    assert catalog.region == region
    zones = {o.zone for it in catalog.instance_types for o in it.offerings}
    assert zones and all(z.startswith(region) for z in zones)
    assert len(catalog.instance_types) > 300
    c5 = catalog.get("c5.large")  # the bundled table (the stand-in's Pricing API) lacks m5.large in eu-west-1
    assert c5 is not None and c5.max_enis == 3 and c5.ipv4_per_eni == 10
    assert c5.labels[T.CPU_MANUFACTURER] == "intel"
    assert {o.capacity_type for o in c5.offerings} == {"on-demand", "spot"}
    od = {o.price for o in c5.offerings if o.capacity_type == "on-demand"}
    assert od == {price_table.on_demand_price(region, "c5.large")}
    assert catalog.metadata["onDemandPrices"] == "pricing-api"


def test_offerings_limited_to_the_node_class_zones(cloud_endpoint: str) -> None:
    catalog = _discovered(cloud_endpoint, "eu-west-1", frozenset({"eu-west-1b"}))
    assert {o.zone for it in catalog.instance_types for o in it.offerings} == {"eu-west-1b"}


def test_spot_prices_vary_and_are_the_latest_per_type_and_zone(cloud_endpoint: str) -> None:
    ec2, _ = _clients(cloud_endpoint, "us-east-1")
    prices = spot_prices(ec2)
    assert prices
    c5 = {z: p for (t, z), p in prices.items() if t == "c5.large"}
    assert c5 and len(set(prices.values())) > 1
    catalog = _discovered(cloud_endpoint, "us-east-1")
    spot = [o for o in catalog.get("c5.large").offerings if o.capacity_type == "spot"]  # type: ignore[union-attr]
    assert spot
    for o in spot:
        assert o.price == c5.get(o.zone, o.price)


def test_pricing_api_filters_to_the_region(cloud_endpoint: str) -> None:
    _, pricing = _clients(cloud_endpoint, "us-east-1")
    prices = on_demand_prices(pricing, "eu-west-1")
    assert prices["c5.large"] == price_table.on_demand_price("eu-west-1", "c5.large")
    assert prices["c5.large"] != price_table.on_demand_price("us-east-1", "c5.large")


def test_pricing_api_unreachable_falls_back_to_the_bundled_table(cloud_endpoint: str) -> None:
    """GetProducts fails (nothing listens), so on-demand prices come from api/data/prices/."""
    ec2 = boto3.client("ec2", region_name="eu-west-1", endpoint_url=cloud_endpoint)
    pricing = boto3.client("pricing", region_name="us-east-1", endpoint_url=DEAD, config=NO_RETRY)
    provider = InstanceTypeProvider(ec2, pricing)
    catalog = provider.catalog()
    assert provider.price_source.startswith("price-table")
    od = [o.price for o in catalog.get("c5.large").offerings if o.capacity_type == "on-demand"]  # type: ignore
    assert od and od[0] == price_table.on_demand_price("eu-west-1", "c5.large")


def test_a_failed_refresh_keeps_the_last_good_catalog_and_refreshes_on_schedule(cloud_endpoint: str) -> None:
    provider, clock, first = _first_discovery(cloud_endpoint, "eu-west-1")  # refresh period 3600 s, clock at 0
    ec2 = provider._ec2
    assert clock.now == 0 and provider.last_error is None
    assert provider.catalog() is first  # within the period: no new read
    provider._ec2 = boto3.client("ec2", region_name="eu-west-1", endpoint_url=DEAD, config=NO_RETRY)
    failed_before = INSTANCE_TYPE_REFRESHES.labels(result="failed")._value.get()
    clock.now = 3600
    assert provider.catalog() is first
    assert provider.last_error is not None
    assert INSTANCE_TYPE_REFRESHES.labels(result="failed")._value.get() == failed_before + 1
    provider._ec2 = ec2
    clock.now = 3600 + 299
    assert provider.catalog() is first  # retried 5 min after a failure, not a whole period later
    clock.now = 3600 + 300
    again = provider.catalog()
    assert again is not first and provider.last_error is None
    assert _without_spot_prices(again.get("c5.large")) == _without_spot_prices(first.get("c5.large"))


def _without_spot_prices(it: Any) -> Any:
    """A type as discovered, its spot prices left out: the stand-in's spot market moves at each hour boundary
    (devstack/spot_prices.py), and a refresh that crosses one rightly reads the new price."""
    return it.model_copy(update={"offerings": tuple(o for o in it.offerings if o.capacity_type != "spot")}), \
        sorted((o.zone, o.available) for o in it.offerings if o.capacity_type == "spot")


def test_before_any_success_the_bundled_catalog_stands_in() -> None:
    ec2 = boto3.client("ec2", region_name="eu-west-1", endpoint_url=DEAD, config=NO_RETRY,
                       aws_access_key_id="x", aws_secret_access_key="x")
    provider = InstanceTypeProvider(ec2, None)
    catalog = provider.catalog()
    assert catalog.region is None and catalog.get("m5.large") is not None and provider.last_error


def test_a_pool_in_eu_west_1_plans_discovered_types_in_its_zones(cloud_endpoint: str) -> None:
    """The provisioner's decision on the discovered eu-west-1 catalog: a pool allowing only generation > 6 gets only
    such types (c7i, m7g, r8g, ... which the bundled catalog lacks), offered in eu-west-1's zones."""
    from planning.provisioning.provisioner import decide
    from tests.planning.planning_factory import nodepool, pod, snapshot

    catalog = _discovered(cloud_endpoint, "eu-west-1")
    pool = nodepool(requirements=[{"key": T.GENERATION, "operator": "Gt", "values": ["6"]},
                                  {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}])
    (launch,) = decide(snapshot(pool, pod("p-1", None, "1", "1Gi", phase="Pending")), catalog).launches
    types = [catalog.get(t) for t in launch.replacement.instance_types]  # type: ignore[union-attr]
    assert types and all(int(it.labels[T.GENERATION]) > 6 for it in types)  # type: ignore[union-attr]
    zones = {o.zone for it in types for o in it.offerings if o.available}  # type: ignore[union-attr]
    assert zones and all(z.startswith("eu-west-1") for z in zones)
    assert launch.replacement.zone is None or launch.replacement.zone.startswith("eu-west-1")
