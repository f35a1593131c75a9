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
"""

from __future__ import annotations

import sys
from typing import Any

_WILDCARDS = frozenset("*?[")


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


def main(argv: list[str] | None = None) -> None:
    install()
    from devstack import moto_spot, pricing_api

    moto_spot.install()
    pricing_api.install()
    from moto.server import main as moto_main

    moto_main(argv if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    main()
