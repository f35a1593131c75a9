"""moto's tags of one resource read from its own per-resource dict, not by a scan of every tag.

moto (5.2) answers "the tags of resource X" (`TagBackend.describe_tags` with one `resource-id`) by scanning every
tag of every resource, and it asks that once per resource for each tag filter it evaluates and for each resource
it renders. A DescribeImages filtered on a tag (an EC2NodeClass's `amiSelectorTerms: [{tags: ...}]`) therefore
scans every tag once for each of a region's 1,301 images: 0.38 s a call with 40 instances of six tags in moto,
25 ms with this index (moto alone, in one process), and the tests' shared server spent 30 of its 61 CPU-s of
calls on 83 of them. With 1,000 instances a DescribeInstances filtered on a tag took 2.5 s (docs/decisions.md
§17). Real EC2 answers either in a roughly constant time.

`install()` answers the exact-id case from moto's own dict: the same tags, in the same order, without the scan;
any other filter goes through moto's code unchanged. Both stand-ins install it (`devstack.moto_indexed`, the
devstack's; `devstack.moto_fleet`, the tests' shared one), and `tests/devstack/test_moto_indexed.py` checks that
the answers are those of moto as shipped.
"""

from __future__ import annotations

from typing import Any

WILDCARDS = frozenset("*?[")  # fnmatch's pattern characters: a value without them matches only itself


def exact_resource_id(filters: dict[str, list[str]] | None) -> str | None:
    """The one literal resource id a tag query asks for, or None when the query is anything else."""
    if not filters or set(filters) != {"resource-id"} or len(filters["resource-id"]) != 1:
        return None
    rid = filters["resource-id"][0]
    return None if WILDCARDS & set(rid) else rid


def install() -> None:
    """Patch moto's EC2 tag backend in this process (idempotent)."""
    from moto.ec2.models.tags import TagBackend
    from moto.ec2.utils import EC2_PREFIX_TO_RESOURCE, get_prefix

    original = getattr(TagBackend.describe_tags, "__wrapped_scan__", TagBackend.describe_tags)

    def describe_tags(self: Any, filters: dict[str, list[str]] | None = None) -> list[dict[str, str]]:
        rid = exact_resource_id(filters)
        if rid is None:
            return original(self, filters)
        kind = EC2_PREFIX_TO_RESOURCE.get(get_prefix(rid), "")
        return [{"resource_id": rid, "key": k, "value": v, "resource_type": kind}
                for k, v in dict(self.tags.get(rid) or {}).items()]

    describe_tags.__wrapped_scan__ = original  # type: ignore[attr-defined]
    TagBackend.describe_tags = describe_tags  # type: ignore[method-assign]
