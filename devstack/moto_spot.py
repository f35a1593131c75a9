"""Patch moto's DescribeSpotPriceHistory in the stand-in process to answer from devstack.spot_prices.

Honours what EC2 documents for the call: InstanceTypes, ProductDescriptions, AvailabilityZone, StartTime and
EndTime, the availability-zone / instance-type / product-description / spot-price / timestamp filters (with
`*` and `?` wildcards), and MaxResults / NextToken paging (1000 by default; larger pages are served, as EC2
serves Karpenter's 2000). A page token carries the hours of its window, so a query that pages across an hour
boundary keeps one consistent list.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

from devstack import spot_prices
from devstack.kept import Kept

DEFAULT_PAGE = 1000
_records_kept: Kept[tuple[Any, ...], list[spot_prices.SpotRecord]] = Kept(8)


def _time(value: Any) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _token(offset: int, hours: tuple[int, int]) -> str:
    return base64.urlsafe_b64encode(json.dumps({"o": offset, "h": list(hours)}).encode()).decode()


def _untoken(token: str) -> tuple[int, tuple[int, int]]:
    from moto.ec2.exceptions import InvalidNextToken

    try:
        doc = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(doc["o"]), (int(doc["h"][0]), int(doc["h"][1]))
    except (ValueError, KeyError, TypeError, IndexError) as err:
        raise InvalidNextToken(token) from err


def _frozen(values: dict[str, list[str]]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple(sorted((k, tuple(v)) for k, v in values.items()))


def _records(region: str, filters: dict[str, list[str]], params: dict[str, list[str]],
             hours: tuple[int, int]) -> list[spot_prices.SpotRecord]:
    """The whole answer for one query, cached so that paging through it computes it once."""
    from moto.ec2.models.instance_types import INSTANCE_TYPE_OFFERINGS, INSTANCE_TYPES

    key = (region, hours, _frozen(filters), _frozen(params))
    cached = _records_kept.get(key)
    if cached is not None:
        return cached
    offerings = [(o["InstanceType"], o["Location"])
                 for o in INSTANCE_TYPE_OFFERINGS["availability-zone"].get(region, [])
                 if _passes(o["InstanceType"], o["Location"], params)]

    def on_demand(instance_type: str) -> float | None:
        info = INSTANCE_TYPES.get(instance_type, {})
        return spot_prices.reference_on_demand(region, instance_type, info.get("VCpuInfo", {}).get("DefaultVCpus"),
                                               info.get("MemoryInfo", {}).get("SizeInMiB"))

    start, end = (datetime.fromtimestamp(h * 3600, UTC) for h in hours)
    records = spot_prices.history(offerings, on_demand, start, end, filters)
    _records_kept.put(key, records)
    return records


def _request_filters(response: Any) -> dict[str, list[str]]:
    """The request's filters, with InstanceTypes / ProductDescriptions / AvailabilityZone folded in as filters."""
    from moto.ec2.exceptions import InvalidFilter

    filters = {k: list(v) for k, v in response._filters_from_querystring().items()}
    for name in filters:
        if name not in spot_prices.SUPPORTED_FILTERS:
            raise InvalidFilter(name)
    for param, name in (("InstanceTypes", "instance-type"), ("ProductDescriptions", "product-description")):
        values = response._get_param(param, [])
        if values:
            filters[f"{name}#param"] = list(values)
    zone = response._get_param("AvailabilityZone")
    if zone:
        filters["availability-zone#param"] = [zone]
    return filters


def _merge(filters: dict[str, list[str]]) -> list[dict[str, list[str]]]:
    """Parameters and filters are ANDed: a parameter becomes a second filter on the same field."""
    plain = {k: v for k, v in filters.items() if "#" not in k}
    params = {k.split("#")[0]: v for k, v in filters.items() if "#" in k}
    return [plain, params]


def describe_spot_price_history(self: Any) -> Any:
    """Replacement for moto's `SpotInstances.describe_spot_price_history`."""
    from moto.core.responses import ActionResult
    from moto.ec2.exceptions import InvalidParameterValueError

    filters = _request_filters(self)
    token = self._get_param("NextToken")
    offset, hours = _untoken(token) if token else (0, window_hours(self))
    self.spot_window_hours = hours  # what the answer depends on besides the query (devstack.moto_indexed)
    limit = self._get_int_param("MaxResults") or DEFAULT_PAGE
    if limit < 1:
        raise InvalidParameterValueError(str(limit))
    plain, params = _merge(filters)
    records = _records(self.region, plain, params, hours)
    page = records[offset:offset + limit]
    result: dict[str, Any] = {"SpotPriceHistory": [r.as_api() for r in page]}
    if offset + limit < len(records):
        result["NextToken"] = _token(offset + limit, hours)
    return ActionResult(result)


def window_hours(response: Any) -> tuple[int, int]:
    """The hours (since the epoch) a query without a NextToken covers, from its StartTime / EndTime and now."""
    start, end = spot_prices.window(_time(response._get_param("StartTime")), _time(response._get_param("EndTime")),
                                    datetime.now(UTC))
    return int(start.timestamp() // 3600), int(end.timestamp() // 3600)


def _passes(instance_type: str, zone: str, params: dict[str, list[str]]) -> bool:
    """Exact matches on the InstanceTypes / ProductDescriptions / AvailabilityZone parameters."""
    fields = {"instance-type": instance_type, "availability-zone": zone,
              "product-description": spot_prices.PRODUCT_DESCRIPTION}
    return all(fields[name] in values for name, values in params.items())


def install() -> None:
    """Patch moto's EC2 response class in this process (idempotent)."""
    from moto.ec2.responses.spot_instances import SpotInstances

    SpotInstances.describe_spot_price_history = describe_spot_price_history  # type: ignore[method-assign]
