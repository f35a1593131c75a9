"""Build api/data/prices/on_demand.json: EC2 on-demand Linux prices (USD/hour) per region and instance type.

Source: the `apache-libcloud` package on PyPI (Apache-2.0) ships `libcloud/data/pricing.json`, whose
`compute.ec2_linux` map (instance type -> region -> USD/hour) libcloud's maintainers generate from AWS's
public EC2 price list (the bulk offer file). This script reads that file straight out of the wheel, so
nothing is installed:

    .venv/bin/pip download --no-deps -d /tmp/libcloud apache-libcloud==3.9.1
    .venv/bin/python scripts/build_price_table.py --wheel /tmp/libcloud/apache_libcloud-3.9.1-py3-none-any.whl

libcloud's generator keeps one SKU per (type, region) without filtering on tenancy or capacity status, so some
cells hold the Dedicated-tenancy price (about 10% higher) and some hold 0.0 (Dedicated Host or capacity
reservation SKUs). Shared-tenancy Linux prices within one family and region are linear in the size's
normalization factor (large 4, xlarge 8, 2xlarge 16, ...), and a Dedicated price sits above that line, so a
cell is kept only when its price per factor equals the lowest price per factor of its family in that region
(within 0.2%) and at least two sizes agree on that rate. Everything else is dropped, never estimated: a type
the table lacks has no fallback price. api/data/catalog.yaml's us-east-1 prices (public prices, checked to
agree with every kept us-east-1 cell) then fill and override us-east-1. Local Zones are left out.

Checked on the 2025-03-02 data (3.9.1): 34 regions, 8,594 prices, about half of each region's types. us-east-1
and us-west-2, which price nearly every type alike, agree on all 365 types both hold; us-east-1 and us-east-2
on 326 of 336 (8 Graviton sizes differ by 0.3%, and m5zn's two us-east-2 cells are 10% higher: a family whose
every cell libcloud took from a Dedicated SKU passes the check, so a small residue of such cells remains).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import zipfile
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "api" / "data" / "prices" / "on_demand.json"
CATALOG = ROOT / "api" / "data" / "catalog.yaml"
PRICING_MEMBER = "libcloud/data/pricing.json"
REGION_RE = re.compile(r"^[a-z]{2}(-gov)?-[a-z]+-\d$")
SIZE_FACTORS = {"nano": 0.25, "micro": 0.5, "small": 1.0, "medium": 2.0, "large": 4.0, "xlarge": 8.0}
TOLERANCE = 0.002

Table = dict[str, dict[str, float]]


def size_factor(instance_type: str) -> float | None:
    """AWS's normalization factor of the size part (`m5.2xlarge` -> 16); None for metal and odd sizes."""
    size = instance_type.partition(".")[2]
    if size in SIZE_FACTORS:
        return SIZE_FACTORS[size]
    match = re.fullmatch(r"(\d+)xlarge", size)
    return 8.0 * int(match.group(1)) if match else None


def read_libcloud(wheel: Path) -> tuple[dict[str, dict[str, object]], datetime, str]:
    """libcloud's ec2_linux map, its `updated` time and the wheel's version."""
    with zipfile.ZipFile(wheel) as zf:
        data = json.loads(zf.read(PRICING_MEMBER))
    version = wheel.name.split("-")[1]
    return data["compute"]["ec2_linux"], datetime.fromtimestamp(int(data["updated"]), UTC), version


def shared_tenancy_cells(ec2_linux: dict[str, dict[str, object]]) -> tuple[Table, int]:
    """The cells that sit on their family's lowest per-size rate in their region; and how many positive prices
    were dropped (0.0, "n/a" and Local Zone cells are not counted)."""
    groups: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for instance_type, by_region in ec2_linux.items():
        for region, price in by_region.items():
            if REGION_RE.match(region) and isinstance(price, int | float) and price > 0:
                groups[(region, instance_type.partition(".")[0])][instance_type] = float(price)
    table: Table = defaultdict(dict)
    dropped = 0
    for (region, _family), cells in groups.items():
        rates = {t: p / f for t, p in cells.items() if (f := size_factor(t))}
        lowest = min(rates.values(), default=0.0)
        on_line = [t for t, r in rates.items() if abs(r / lowest - 1) <= TOLERANCE] if lowest else []
        keep = set(on_line) if len(on_line) >= 2 else set()
        for instance_type, price in cells.items():
            if instance_type in keep:
                table[region][instance_type] = price
            else:
                dropped += 1
    return table, dropped


def catalog_prices() -> dict[str, float]:
    """us-east-1 on-demand prices from the bundled catalog."""
    doc = yaml.safe_load(CATALOG.read_text())
    out: dict[str, float] = {}
    for item in doc["instanceTypes"]:
        for offering in item["offerings"]:
            if offering["capacityType"] == "on-demand":
                out[item["name"]] = float(offering["price"])
    return out


def build(wheel: Path) -> dict[str, object]:
    ec2_linux, updated, version = read_libcloud(wheel)
    table, dropped = shared_tenancy_cells(ec2_linux)
    catalog = catalog_prices()
    conflicts = sorted(t for t, p in catalog.items() if t in table["us-east-1"] and table["us-east-1"][t] != p)
    if conflicts:
        sys.exit(f"catalog.yaml and libcloud disagree on us-east-1 {conflicts}: check both before building")
    table["us-east-1"].update(catalog)
    return {
        "comment": "EC2 on-demand prices, Linux, shared tenancy, USD per hour, per region and instance type. "
                   "Public price data, not invented: cells that libcloud's data could not show to be "
                   "shared-tenancy prices were dropped, not estimated. Built by scripts/build_price_table.py.",
        "date": updated.date().isoformat(),
        "sources": [
            {"name": f"apache-libcloud {version} (PyPI), {PRICING_MEMBER} compute.ec2_linux",
             "from": "AWS public EC2 price list", "updated": updated.isoformat().replace("+00:00", "Z"),
             "cellsKept": sum(len(v) for v in table.values()) - len(catalog), "cellsDropped": dropped},
            {"name": "api/data/catalog.yaml", "regions": ["us-east-1"], "cells": len(catalog)},
        ],
        "currency": "USD",
        "unit": "Hrs",
        "regions": {r: dict(sorted(table[r].items())) for r in sorted(table)},
    }


def write(doc: dict[str, object], out: Path) -> None:
    """One region per line, so a regenerated table diffs by region."""
    regions = doc["regions"]
    assert isinstance(regions, dict)
    head = {k: v for k, v in doc.items() if k != "regions"}
    lines = [json.dumps(head, indent=1)[:-2] + ',\n "regions": {']
    body = [f"  {json.dumps(r)}: {json.dumps(p, separators=(',', ':'))}" for r, p in regions.items()]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n" + ",\n".join(body) + "\n }\n}\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--wheel", type=Path, required=True, help="apache_libcloud-*.whl downloaded from PyPI")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    doc = build(args.wheel)
    write(doc, args.out)
    regions = doc["regions"]
    assert isinstance(regions, dict)
    print(f"{args.out}: {len(regions)} regions, {sum(len(v) for v in regions.values())} prices, date {doc['date']}")


if __name__ == "__main__":
    main()
