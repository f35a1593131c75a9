"""The AWS Price List Query API (`pricing`) for the EC2 stand-in, answered from the bundled price table.

moto has no `pricing` backend, so the stand-in answers three of its JSON-1.1 operations itself, in AWS's shapes
(botocore's pricing-2017-10-15 model): GetProducts (`PriceList` is a list of JSON strings, one product document
each: `product.productFamily`, `product.attributes`, `terms.OnDemand.<sku>.<offerTermCode>.priceDimensions.
<rateCode>.pricePerUnit.USD`), DescribeServices and GetAttributeValues, with NextToken paging. Filters compare a
Field (an attribute name, `productFamily`, `sku` or `ServiceCode`; names case-insensitive, as AWS does for
Karpenter's `serviceCode`) with TERM_MATCH / EQUALS (exact), CONTAINS, ANY_OF and NONE_OF (comma-separated).

Only AmazonEC2 compute products are served: one per (region, type) in api/data/prices/on_demand.json, Linux,
shared tenancy, no pre-installed software, capacity status Used, on-demand; a type the table lacks has no
product, as the table never estimates a price. vCPU and memory come from moto's DescribeInstanceTypes data.

Routing: the boto3 client signs for service `pricing` and sends `X-Amz-Target: AWSPriceListService.<Op>`;
`install()` wraps moto's server dispatcher so those requests reach `handle()` and everything else reaches moto.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any

from api import price_table
from devstack.kept import Kept

SERVICE_CODE = "AmazonEC2"
TARGET_PREFIX = "AWSPriceListService."
FORMAT_VERSION = "aws_v1"
ON_DEMAND_TERM = "JRTCKXETXF"
HOURLY_RATE = "6YS6EN2CT7"
PAGE_MAX = 100
REGION_NAMES = {
    "af-south-1": "Africa (Cape Town)", "ap-east-1": "Asia Pacific (Hong Kong)",
    "ap-northeast-1": "Asia Pacific (Tokyo)", "ap-northeast-2": "Asia Pacific (Seoul)",
    "ap-northeast-3": "Asia Pacific (Osaka)", "ap-south-1": "Asia Pacific (Mumbai)",
    "ap-south-2": "Asia Pacific (Hyderabad)", "ap-southeast-1": "Asia Pacific (Singapore)",
    "ap-southeast-2": "Asia Pacific (Sydney)", "ap-southeast-3": "Asia Pacific (Jakarta)",
    "ap-southeast-4": "Asia Pacific (Melbourne)", "ap-southeast-5": "Asia Pacific (Malaysia)",
    "ap-southeast-7": "Asia Pacific (Thailand)", "ca-central-1": "Canada (Central)",
    "ca-west-1": "Canada West (Calgary)", "eu-central-1": "EU (Frankfurt)", "eu-central-2": "EU (Zurich)",
    "eu-north-1": "EU (Stockholm)", "eu-south-1": "EU (Milan)", "eu-south-2": "EU (Spain)",
    "eu-west-1": "EU (Ireland)", "eu-west-2": "EU (London)", "eu-west-3": "EU (Paris)",
    "il-central-1": "Israel (Tel Aviv)", "me-central-1": "Middle East (UAE)", "me-south-1": "Middle East (Bahrain)",
    "mx-central-1": "Mexico (Central)", "sa-east-1": "South America (Sao Paulo)",
    "us-east-1": "US East (N. Virginia)", "us-east-2": "US East (Ohio)", "us-gov-east-1": "AWS GovCloud (US-East)",
    "us-gov-west-1": "AWS GovCloud (US-West)", "us-west-1": "US West (N. California)",
    "us-west-2": "US West (Oregon)",
}


class PricingError(Exception):
    """An error in the Pricing API's JSON shape: `__type` and `Message`, HTTP 400."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _sku(region: str, instance_type: str) -> str:
    return hashlib.sha256(f"{region}|{instance_type}".encode()).hexdigest()[:16].upper()


def _memory(mib: int | None) -> str:
    if not mib:
        return "NA"
    gib = mib / 1024
    return f"{gib:,.0f} GiB" if gib == int(gib) else f"{gib:,g} GiB"


def _attributes(region: str, instance_type: str) -> dict[str, str]:
    from moto.ec2.models.instance_types import INSTANCE_TYPES

    info = INSTANCE_TYPES.get(instance_type, {})
    arch = info.get("ProcessorInfo", {}).get("SupportedArchitectures", [])
    return {
        "servicecode": SERVICE_CODE, "servicename": "Amazon Elastic Compute Cloud",
        "instanceType": instance_type, "instanceFamily": "Compute Instance",
        "vcpu": str(info.get("VCpuInfo", {}).get("DefaultVCpus", "NA")),
        "memory": _memory(info.get("MemoryInfo", {}).get("SizeInMiB")),
        "processorArchitecture": "64-bit" if arch else "NA",
        "currentGeneration": "Yes" if info.get("CurrentGeneration") else "No",
        "regionCode": region, "location": REGION_NAMES.get(region, region), "locationType": "AWS Region",
        "operatingSystem": "Linux", "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used",
        "licenseModel": "No License required", "marketoption": "OnDemand", "operation": "RunInstances",
    }


@cache
def _catalog() -> tuple[tuple[str, str, float, dict[str, str]], ...]:
    """(region, type, price, filterable fields) for every product, built once per process."""
    rows = []
    for region in price_table.regions():
        for instance_type, price in sorted(price_table.region_prices(region).items()):
            fields = _attributes(region, instance_type)
            family = "Compute Instance (bare metal)" if ".metal" in instance_type else "Compute Instance"
            fields |= {"productFamily": family, "sku": _sku(region, instance_type)}
            rows.append((region, instance_type, price, fields))
    return tuple(rows)


def product_document(region: str, instance_type: str, price: float, fields: dict[str, str]) -> str:
    """One PriceList entry: the product and its on-demand term, serialized as AWS sends it (a JSON string)."""
    sku = fields["sku"]
    rate = f"{sku}.{ON_DEMAND_TERM}.{HOURLY_RATE}"
    attributes = {k: v for k, v in fields.items() if k not in ("productFamily", "sku")}
    date = price_table.table_date()
    term = {"priceDimensions": {rate: {
        "unit": "Hrs", "endRange": "Inf", "beginRange": "0", "appliesTo": [], "rateCode": rate,
        "description": f"${price:g} per On Demand Linux {instance_type} Instance Hour",
        "pricePerUnit": {"USD": f"{price:.10f}"}}},
        "sku": sku, "effectiveDate": f"{date}T00:00:00Z", "offerTermCode": ON_DEMAND_TERM, "termAttributes": {}}
    doc = {"product": {"productFamily": fields["productFamily"], "attributes": attributes, "sku": sku},
           "serviceCode": SERVICE_CODE, "terms": {"OnDemand": {f"{sku}.{ON_DEMAND_TERM}": term}},
           "version": date.replace("-", "") + "000000", "publicationDate": f"{date}T00:00:00Z"}
    return json.dumps(doc, separators=(",", ":"))


_MATCHERS: dict[str, Callable[[str, str], bool]] = {
    "TERM_MATCH": lambda have, want: have == want,
    "EQUALS": lambda have, want: have == want,
    "CONTAINS": lambda have, want: want in have,
    "ANY_OF": lambda have, want: have in [v.strip() for v in want.split(",")],
    "NONE_OF": lambda have, want: have not in [v.strip() for v in want.split(",")],
}


def _field(fields: dict[str, str], name: str) -> str | None:
    lowered = name.lower()
    if lowered == "servicecode":
        return SERVICE_CODE
    return next((v for k, v in fields.items() if k.lower() == lowered), None)


def _filter_ok(fields: dict[str, str], filters: Iterable[dict[str, str]]) -> bool:
    for flt in filters:
        kind = flt.get("Type", "")
        if kind not in _MATCHERS or not flt.get("Field") or flt.get("Value") is None:
            raise PricingError("InvalidParameterException", f"Invalid filter {flt!r}")
        have = _field(fields, flt["Field"])
        if have is None and kind != "NONE_OF":
            return False
        if have is not None and not _MATCHERS[kind](have, flt["Value"]):
            return False
    return True


def _page(items: list[Any], body: dict[str, Any], fingerprint: str, default: int) -> tuple[list[Any], str | None]:
    """Slice `items` by MaxResults / NextToken; the token names the query it belongs to."""
    limit = body.get("MaxResults", default)
    if not isinstance(limit, int) or not 1 <= limit <= PAGE_MAX:
        raise PricingError("InvalidParameterException", f"MaxResults must be between 1 and {PAGE_MAX}")
    offset = 0
    if body.get("NextToken"):
        try:
            doc = json.loads(base64.urlsafe_b64decode(str(body["NextToken"]).encode()))
            offset, ok = int(doc["o"]), doc["q"] == fingerprint
        except (ValueError, KeyError, TypeError) as err:
            raise PricingError("InvalidNextTokenException", "The pagination token is invalid") from err
        if not ok:
            raise PricingError("InvalidNextTokenException", "The pagination token belongs to another query")
    page = items[offset:offset + limit]
    more = offset + limit < len(items)
    token = base64.urlsafe_b64encode(json.dumps({"o": offset + limit, "q": fingerprint}).encode()).decode()
    return page, token if more else None


def _fingerprint(body: dict[str, Any]) -> str:
    query = {k: v for k, v in body.items() if k not in ("NextToken", "MaxResults")}
    return hashlib.sha256(json.dumps(query, sort_keys=True).encode()).hexdigest()[:16]


def _require_service(code: Any) -> None:
    if code != SERVICE_CODE:
        raise PricingError("NotFoundException", f"Service code {code!r} is not served by this stand-in "
                                                f"(only {SERVICE_CODE})")


_matched: Kept[str, list[tuple[str, str, float, dict[str, str]]]] = Kept(16)  # query fingerprint -> its rows


def _matching(fingerprint: str, filters: list[dict[str, str]]) -> list[tuple[str, str, float, dict[str, str]]]:
    """The products a query's filters match, computed once per query rather than once per page: filtering the
    whole table was a third of the stand-in's CPU in a discovery (six pages of one query, each filtering it all)."""
    rows = _matched.get(fingerprint)
    if rows is None:
        rows = [row for row in _catalog() if _filter_ok(row[3], filters)]
        _matched.put(fingerprint, rows)
    return rows


def get_products(body: dict[str, Any]) -> dict[str, Any]:
    _require_service(body.get("ServiceCode"))
    fingerprint = _fingerprint(body)
    rows = _matching(fingerprint, body.get("Filters") or [])
    page, token = _page(rows, body, fingerprint, PAGE_MAX)
    out: dict[str, Any] = {"FormatVersion": FORMAT_VERSION, "PriceList": [_document(row) for row in page]}
    return out | ({"NextToken": token} if token else {})


_documents: dict[tuple[str, str], str] = {}


def _document(row: tuple[str, str, float, dict[str, str]]) -> str:
    """`product_document` of one catalog row, rendered once per process (the table does not change)."""
    doc = _documents.get(row[:2])
    if doc is None:
        doc = _documents[row[:2]] = product_document(*row)
    return doc


def _attribute_names() -> list[str]:
    rows = _catalog()
    return sorted({k for k in rows[0][3] if k != "sku"} | {"productFamily"}) if rows else []


def describe_services(body: dict[str, Any]) -> dict[str, Any]:
    code = body.get("ServiceCode")
    services = [] if code not in (None, "", SERVICE_CODE) else [
        {"ServiceCode": SERVICE_CODE, "AttributeNames": _attribute_names()}]
    page, token = _page(services, body, _fingerprint(body), PAGE_MAX)
    out: dict[str, Any] = {"Services": page, "FormatVersion": FORMAT_VERSION}
    return out | ({"NextToken": token} if token else {})


def get_attribute_values(body: dict[str, Any]) -> dict[str, Any]:
    _require_service(body.get("ServiceCode"))
    name = str(body.get("AttributeName") or "")
    if name.lower() not in {n.lower() for n in _attribute_names()}:
        raise PricingError("NotFoundException", f"Attribute {name!r} not found for {SERVICE_CODE}")
    values = sorted({v for row in _catalog() if (v := _field(row[3], name)) is not None})
    page, token = _page([{"Value": v} for v in values], body, _fingerprint(body), PAGE_MAX)
    return {"AttributeValues": page} | ({"NextToken": token} if token else {})


OPERATIONS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "GetProducts": get_products, "DescribeServices": describe_services, "GetAttributeValues": get_attribute_values,
}


def handle(target: str, raw_body: bytes) -> tuple[int, dict[str, Any]]:
    """(HTTP status, JSON body) for one Pricing request, errors in the JSON-1.1 protocol's shape."""
    operation = target.removeprefix(TARGET_PREFIX)
    try:
        if operation not in OPERATIONS:
            raise PricingError("UnknownOperationException", f"Operation {operation} is not served by this stand-in")
        body = json.loads(raw_body or b"{}")
        return 200, OPERATIONS[operation](body)
    except PricingError as err:
        return 400, {"__type": err.code, "Message": str(err)}
    except json.JSONDecodeError:
        return 400, {"__type": "SerializationException", "Message": "request body is not JSON"}


def wsgi_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    """The Pricing API as a WSGI application (what the dispatcher patch hands these requests to)."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    status, body = handle(environ.get("HTTP_X_AMZ_TARGET", ""), environ["wsgi.input"].read(length))
    payload = json.dumps(body).encode()
    headers = [("Content-Type", "application/x-amz-json-1.1"), ("Content-Length", str(len(payload))),
               ("x-amzn-RequestId", hashlib.sha256(payload).hexdigest()[:32])]
    if status != 200:
        headers.append(("x-amzn-ErrorType", str(body["__type"])))
    start_response(f"{status} {'OK' if status == 200 else 'Bad Request'}", headers)
    return [payload]


def install() -> None:
    """Route `AWSPriceListService.*` requests in this moto server process to `wsgi_app` (idempotent)."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    original = getattr(DomainDispatcherApplication.__call__, "__wrapped_moto__", DomainDispatcherApplication.__call__)

    def __call__(self: Any, environ: dict[str, Any], start_response: Any) -> Any:
        if str(environ.get("HTTP_X_AMZ_TARGET", "")).startswith(TARGET_PREFIX):
            return wsgi_app(environ, start_response)
        return original(self, environ, start_response)

    __call__.__wrapped_moto__ = original  # type: ignore[attr-defined]
    DomainDispatcherApplication.__call__ = __call__  # type: ignore[method-assign]
