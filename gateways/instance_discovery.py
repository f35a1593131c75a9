"""Reading instance types, offerings and prices from EC2 and the Pricing API (boto3 clients come in).

What is asked follows aws/karpenter-provider-aws: pkg/providers/instancetype/instancetype.go (DescribeInstanceTypes,
DescribeInstanceTypeOfferings by availability zone) and pkg/providers/pricing/pricing.go (GetProducts for AmazonEC2,
Linux, shared tenancy, no pre-installed software, capacity status Used, the cluster's region; the latest
DescribeSpotPriceHistory entry per type and zone for Linux/UNIX). docs/semantics.md "Instance types and allocatable".
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

ON_DEMAND = "on-demand"
SPOT = "spot"
PRICING_FILTERS = (("ServiceCode", "AmazonEC2"), ("operatingSystem", "Linux"), ("tenancy", "Shared"),
                   ("preInstalledSw", "NA"), ("capacitystatus", "Used"))


@dataclass(slots=True)
class Discovered:
    """One region's raw answers: DescribeInstanceTypes items, zones per type, and prices."""

    region: str
    types: list[dict[str, Any]]
    zones: dict[str, set[str]]
    on_demand: dict[str, float] = field(default_factory=dict)
    spot: dict[tuple[str, str], float] = field(default_factory=dict)  # (type, zone) -> USD/hour


PAGE_SIZE = 100  # EC2's largest MaxResults for DescribeInstanceTypes


def describe_instance_types(ec2: Any) -> list[dict[str, Any]]:
    """Every instance type of the client's region, in pages of 100: one 1,400-type answer parsed at once raised the
    worker's peak RSS by 44 MiB (and kept most of it), pages by 12 (docs/benchmarks.md)."""
    out: list[dict[str, Any]] = []
    for page in ec2.get_paginator("describe_instance_types").paginate(PaginationConfig={"PageSize": PAGE_SIZE}):
        out.extend(page.get("InstanceTypes") or ())
    return out


def describe_offerings(ec2: Any, zones: Iterable[str] | None = None) -> dict[str, set[str]]:
    """Zones each type is offered in (LocationType availability-zone), within `zones` when given (the zones of a
    node class's subnets, as Karpenter intersects them)."""
    wanted = set(zones) if zones is not None else None
    out: dict[str, set[str]] = {}
    pages = ec2.get_paginator("describe_instance_type_offerings").paginate(LocationType="availability-zone")
    for page in pages:
        for o in page.get("InstanceTypeOfferings") or ():
            zone = o.get("Location", "")
            if wanted is None or zone in wanted:
                out.setdefault(o["InstanceType"], set()).add(zone)
    return out


def on_demand_prices(pricing: Any, region: str) -> dict[str, float]:
    """Linux shared-tenancy on-demand USD/hour per type in `region`, from GetProducts (paginated)."""
    filters = [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in PRICING_FILTERS if k != "ServiceCode"]
    filters.append({"Type": "TERM_MATCH", "Field": "regionCode", "Value": region})
    out: dict[str, float] = {}
    for page in pricing.get_paginator("get_products").paginate(ServiceCode="AmazonEC2", Filters=filters):
        for doc in page.get("PriceList") or ():
            item = json.loads(doc) if isinstance(doc, str) else doc
            parsed = _product_price(item)
            if parsed is not None:
                out[parsed[0]] = parsed[1]
    return out


def _product_price(item: Mapping[str, Any]) -> tuple[str, float] | None:
    """(instance type, hourly USD) of one PriceList product; None without a positive on-demand hourly rate."""
    name = ((item.get("product") or {}).get("attributes") or {}).get("instanceType")
    for term in ((item.get("terms") or {}).get("OnDemand") or {}).values():
        for dim in (term.get("priceDimensions") or {}).values():
            usd = (dim.get("pricePerUnit") or {}).get("USD")
            if name and usd is not None and float(usd) > 0:
                return name, float(usd)
    return None


def spot_prices(ec2: Any, now: datetime | None = None) -> dict[tuple[str, str], float]:
    """The latest Linux/UNIX spot price per (type, zone): history from `now` back, newest entry wins."""
    latest: dict[tuple[str, str], tuple[datetime, float]] = {}
    pages = ec2.get_paginator("describe_spot_price_history").paginate(
        ProductDescriptions=["Linux/UNIX"], StartTime=now or datetime.now(UTC))
    for page in pages:
        for e in page.get("SpotPriceHistory") or ():
            key = (e["InstanceType"], e["AvailabilityZone"])
            at = e.get("Timestamp") or datetime.min.replace(tzinfo=UTC)
            seen = latest.get(key)
            if seen is None or at > seen[0]:
                latest[key] = (at, float(e["SpotPrice"]))
    return {k: v[1] for k, v in latest.items()}
