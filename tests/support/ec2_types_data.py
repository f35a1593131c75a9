"""AWS's real DescribeInstanceTypes items, as moto ships them (read-only test data)."""

from __future__ import annotations

import gzip
import json
from functools import lru_cache
from importlib import resources
from typing import Any


@lru_cache(maxsize=1)
def all_describe_items() -> dict[str, dict[str, Any]]:
    with resources.files("moto.ec2.resources").joinpath("instance_types.json.gz").open("rb") as fh:
        return json.load(gzip.open(fh))


def describe_item(name: str) -> dict[str, Any]:
    return all_describe_items()[name]
