"""The bundled on-demand price table (api.price_table) and the filter its generator applies to libcloud's data."""

from __future__ import annotations

import importlib.util
import json
import re
import zipfile
from pathlib import Path

import yaml

from api import price_table

ROOT = Path(__file__).resolve().parents[2]


def _generator():  # scripts/ is not a package
    spec = importlib.util.spec_from_file_location("build_price_table", ROOT / "scripts" / "build_price_table.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_table_records_its_date_and_sources() -> None:
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", price_table.table_date())
    assert price_table.table_date() == json.loads(price_table.TABLE_PATH.read_text())["date"]
    names = [s["name"] for s in price_table.sources()]
    assert any("apache-libcloud" in n for n in names) and "api/data/catalog.yaml" in names


def test_lookup_by_region_and_type() -> None:
    assert price_table.on_demand_price("us-east-1", "m5.large") == 0.096
    assert price_table.on_demand_price("eu-central-1", "m5.large") == 0.115
    assert price_table.on_demand_price("us-east-1", "no-such.type") is None
    assert price_table.on_demand_price("xx-nowhere-1", "m5.large") is None
    assert len(price_table.regions()) >= 30 and "eu-west-1" in price_table.regions()
    assert all(p > 0 for r in price_table.regions() for p in price_table.region_prices(r).values())


def test_catalog_us_east_1_prices_are_the_tables() -> None:
    doc = yaml.safe_load((ROOT / "api" / "data" / "catalog.yaml").read_text())
    for item in doc["instanceTypes"]:
        for offering in item["offerings"]:
            if offering["capacityType"] == "on-demand":
                assert price_table.on_demand_price("us-east-1", item["name"]) == offering["price"], item["name"]


def test_generator_keeps_only_cells_on_the_familys_shared_rate(tmp_path: Path) -> None:
    gen = _generator()
    ec2_linux = {
        "m9.large": {"eu-west-1": 0.1, "us-west-2": 0.1},
        "m9.xlarge": {"eu-west-1": 0.22, "us-west-2": 0.2},    # eu-west-1: a Dedicated price (10% up)
        "m9.2xlarge": {"eu-west-1": 0.4, "us-west-2": 0.0},    # us-west-2: a Dedicated Host SKU's 0.0
        "m9.metal": {"eu-west-1": 3.0},                        # no size factor: never provable
        "z9.large": {"eu-west-1": 0.5},                        # one size: nothing to check it against
        "c9.large": {"us-west-2-lax-1": 0.1, "us-west-2": "n/a"},  # a Local Zone, and a non-price
    }
    table, dropped = gen.shared_tenancy_cells(ec2_linux)
    assert dict(table) == {"eu-west-1": {"m9.large": 0.1, "m9.2xlarge": 0.4},
                           "us-west-2": {"m9.large": 0.1, "m9.xlarge": 0.2}}
    assert dropped == 3

    wheel = tmp_path / "apache_libcloud-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr(gen.PRICING_MEMBER, json.dumps({"updated": 1740936978, "compute": {"ec2_linux": {
            "m5.large": {"us-east-1": 0.096, "eu-central-1": 0.115},
            "m5.xlarge": {"us-east-1": 0.192, "eu-central-1": 0.23}}}}))
    out = tmp_path / "on_demand.json"
    gen.write(gen.build(wheel), out)
    doc = json.loads(out.read_text())
    assert doc["date"] == "2025-03-02"
    assert doc["regions"]["eu-central-1"] == {"m5.large": 0.115, "m5.xlarge": 0.23}
    assert doc["regions"]["us-east-1"]["t3.medium"] == 0.0416  # filled from catalog.yaml
