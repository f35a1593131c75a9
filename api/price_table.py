"""The bundled EC2 on-demand price table: the fallback when the Pricing API cannot be reached.

Karpenter's AWS provider ships such a table (`zz_generated.pricing_aws.go`, used until its pricing controller
has fetched live prices); nodeflow's is api/data/prices/on_demand.json, built from public price data by
scripts/build_price_table.py, which records the data's date and source in the file. A type or region the table
does not hold has no price here (None): the table never estimates one.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

TABLE_PATH = Path(__file__).parent / "data" / "prices" / "on_demand.json"


@cache
def _document() -> dict[str, Any]:
    return json.loads(TABLE_PATH.read_text())


def on_demand_price(region: str, instance_type: str) -> float | None:
    """Linux, shared-tenancy on-demand USD/hour of `instance_type` in `region`, or None when not in the table."""
    price = _document()["regions"].get(region, {}).get(instance_type)
    return float(price) if price is not None else None


def table_date() -> str:
    """The ISO date of the price data the table was built from (e.g. "2025-03-02")."""
    return str(_document()["date"])


def regions() -> list[str]:
    """Region codes the table holds prices for, sorted."""
    return sorted(_document()["regions"])


def region_prices(region: str) -> dict[str, float]:
    """Every instance type's on-demand USD/hour in `region` (empty for a region the table lacks)."""
    return {t: float(p) for t, p in _document()["regions"].get(region, {}).items()}


def sources() -> list[dict[str, Any]]:
    """Where the table's prices came from, as the generator recorded it."""
    return list(_document()["sources"])
