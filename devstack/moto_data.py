"""AWS's answers that moto ships as data (`moto/ec2/resources`: DescribeInstanceTypes items, the offerings of each
region), read as files. Reading them through `importlib.resources.files("moto.ec2.resources")` imports the
`moto.ec2` package, which builds moto's whole EC2 backend (1.8 CPU-s); the files themselves parse in 0.06 s."""

from __future__ import annotations

import gzip
import importlib.util
import json
from functools import cache
from pathlib import Path
from typing import Any


@cache
def ec2_resources() -> Path:
    """moto's `ec2/resources` folder, found without importing moto."""
    spec = importlib.util.find_spec("moto")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("moto is not installed (pip install -e '.[sim]')")
    return Path(spec.origin).parent / "ec2" / "resources"


def ec2_resource(relative: str) -> Any:
    """One gzipped JSON file of `ec2/resources`, parsed (e.g. `instance_types.json.gz`)."""
    with gzip.open(ec2_resources() / relative) as data:
        return json.load(data)


def describe_instance_type_items() -> dict[str, dict[str, Any]]:
    """Every instance type's DescribeInstanceTypes item, by name."""
    return ec2_resource("instance_types.json.gz")


def region_offerings(region: str) -> list[dict[str, Any]]:
    """DescribeInstanceTypeOfferings of `region` by availability zone (InstanceType, Location)."""
    return ec2_resource(f"instance_type_offerings/availability-zone/{region}.json.gz")
