"""AWS's real DescribeInstanceTypes items, as moto ships them (read-only test data)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from devstack.moto_data import describe_instance_type_items


@lru_cache(maxsize=1)
def all_describe_items() -> dict[str, dict[str, Any]]:
    return describe_instance_type_items()


def describe_item(name: str) -> dict[str, Any]:
    return all_describe_items()[name]
