"""moto_server with an indexed tag lookup, for the benchmarks that hold hundreds of instances.

moto (5.2) answers "the tags of resource X" by scanning every tag of every resource
(`TagBackend.describe_tags`), and it does so once per instance for each DescribeInstances filter on a tag
and for each instance it renders. With 1,000 instances one DescribeInstances filtered on a tag took 2.5 s,
so a Karpenter-suite run measured moto, not nodeflow (docs/decisions.md §17). Real EC2 answers such a call in
a roughly constant time. This module answers the exact-id case from moto's own per-resource dict instead:
the same tags, in the same order, without the scan. Any other filter goes through moto's code unchanged.

Run as `python -m devstack.moto_indexed -H 127.0.0.1 -p PORT` (the same arguments as `moto_server`). This is
the devstack's EC2 stand-in: besides the tag index, `main()` installs `devstack.moto_spot` (a spot price history
that varies by type, zone and hour) and `devstack.pricing_api` (the Pricing API's GetProducts,
DescribeServices and GetAttributeValues over the bundled price table), both answered on the same port
(docs/architecture.md, "The EC2 stand-in"). The tests' shared `moto_endpoint` stays unpatched, so nodeflow's
own calls are checked against moto as shipped; `tests/devstack/test_moto_indexed.py` checks that both give the
same tag answers, and the `cloud_endpoint` fixture runs this module.

It also keeps the rendered answer of the two static catalog calls, DescribeInstanceTypes and
DescribeInstanceTypeOfferings, per account, region and query: moto builds the same 5.8 MB of XML (1,395 types)
from the same static data on every call, which took 4.6 s of a 5.5 s call, once per discovery (the worker's, the
demo's and each test's). The answer is moto's own, rendered once; `tests/devstack/test_moto_indexed.py` checks that
a second call answers exactly as moto as shipped does.
"""

from __future__ import annotations

import os
import sys
from typing import Any

_WILDCARDS = frozenset("*?[")
STATIC_ACTIONS = frozenset({"DescribeInstanceTypes", "DescribeInstanceTypeOfferings"})


def _exact_resource_id(filters: dict[str, list[str]] | None) -> str | None:
    """The one literal resource id a tag query asks for, or None when the query is anything else."""
    if not filters or set(filters) != {"resource-id"} or len(filters["resource-id"]) != 1:
        return None
    rid = filters["resource-id"][0]
    return None if _WILDCARDS & set(rid) else rid


def install() -> None:
    """Patch moto's EC2 tag backend in this process (idempotent)."""
    from moto.ec2.models.tags import TagBackend
    from moto.ec2.utils import EC2_PREFIX_TO_RESOURCE, get_prefix

    original = getattr(TagBackend.describe_tags, "__wrapped_scan__", TagBackend.describe_tags)

    def describe_tags(self: Any, filters: dict[str, list[str]] | None = None) -> list[dict[str, str]]:
        rid = _exact_resource_id(filters)
        if rid is None:
            return original(self, filters)
        kind = EC2_PREFIX_TO_RESOURCE.get(get_prefix(rid), "")
        return [{"resource_id": rid, "key": k, "value": v, "resource_type": kind}
                for k, v in dict(self.tags.get(rid) or {}).items()]

    describe_tags.__wrapped_scan__ = original  # type: ignore[attr-defined]
    TagBackend.describe_tags = describe_tags  # type: ignore[method-assign]


def _static_key(response: Any) -> tuple[Any, ...] | None:
    """What a static catalog answer depends on (account, region, the query), or None for any other action."""
    action = response._get_action()
    if action not in STATIC_ACTIONS:
        return None
    query = tuple(sorted((k, tuple(v)) for k, v in response.querystring.items()))
    return response.current_account, response.region, action, query


def install_static_cache() -> None:
    """Patch moto's EC2 responses in this process to render each static catalog answer once (idempotent).
    Errors are never kept; the request id is still set per call (moto's `_enrich_response` runs after this)."""
    from moto.ec2.responses import EC2Response

    original = getattr(EC2Response.serialized, "__wrapped_render__", EC2Response.serialized)
    rendered: dict[tuple[Any, ...], tuple[int, dict[str, Any], Any]] = {}

    def serialized(self: Any, action_result: Any) -> Any:
        key = None if isinstance(action_result.result, Exception) else _static_key(self)
        if key is None:
            return original(self, action_result)
        if key not in rendered:
            status, headers, body = original(self, action_result)
            if status != 200:
                return status, headers, body
            rendered[key] = (status, dict(headers), body)
        status, headers, body = rendered[key]
        return status, {**headers, **self.response_headers}, body

    serialized.__wrapped_render__ = original  # type: ignore[attr-defined]
    EC2Response.serialized = serialized  # type: ignore[method-assign]


def _exit_now(signum: int, frame: Any) -> None:
    """SIGTERM/SIGINT: leave at once. moto's own handler calls sys.exit, and tearing down moto's in-memory state
    took 3-5 s per stop; the state is meant to vanish with the process (nothing is written to disk)."""
    os._exit(0)


def main(argv: list[str] | None = None) -> None:
    install()
    install_static_cache()
    from devstack import moto_spot, pricing_api

    moto_spot.install()
    pricing_api.install()
    import moto.server

    moto.server.signal_handler = _exit_now  # main() installs it for SIGTERM and SIGINT
    moto.server.main(argv if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    main()
