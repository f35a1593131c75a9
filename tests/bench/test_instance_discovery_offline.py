"""bench/instance_discovery.py offline_catalog: a region's discovered catalog from moto's packaged data, for the
planner benchmark's side-by-side run."""

from __future__ import annotations

from bench.instance_discovery import offline_catalog


def test_offline_catalog_is_the_regions() -> None:
    catalog = offline_catalog("eu-west-1")
    assert catalog.region == "eu-west-1"
    zones = {o.zone for it in catalog.instance_types for o in it.offerings}
    assert zones and all(z.startswith("eu-west-1") for z in zones)
    priced = [it for it in catalog.instance_types if it.cheapest() is not None]
    assert len(priced) > 300
    assert catalog.get("c5.large").max_enis == 3  # type: ignore[union-attr]
