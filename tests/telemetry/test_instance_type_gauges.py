"""Karpenter's provider instance-type gauges, read from the catalog in force when /metrics is scraped
(telemetry/karpenter_metrics.py InstanceTypeGauges, fed by gateways/instance_types.py)."""

from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from api.catalog import InstanceType, InstanceTypeCatalog, Offering
from gateways.instance_types import karpenter_instance_types
from telemetry.metrics import REGISTRY

PREFIX = "karpenter_cloudprovider_instance_type_"


def _samples() -> dict[str, dict[tuple[str, ...], float]]:
    out: dict[str, dict[tuple[str, ...], float]] = {}
    for family in text_string_to_metric_families(generate_latest(REGISTRY).decode()):
        if family.name.startswith(PREFIX):
            assert family.type == "gauge"
            for s in family.samples:
                key = tuple(s.labels[k] for k in ("instance_type", "capacity_type", "zone") if k in s.labels)
                out.setdefault(s.name.removeprefix(PREFIX), {})[key] = s.value
    return out


def _catalog(*types: InstanceType) -> InstanceTypeCatalog:
    return InstanceTypeCatalog(instance_types=list(types), region="eu-west-1")


M5 = InstanceType(name="m5.large", cpu="2", memory="8Gi", pods=29, offerings=(
    Offering(zone="eu-west-1a", capacity_type="on-demand", price=0.107),
    Offering(zone="eu-west-1a", capacity_type="spot", price=0.0, available=False)))
C5 = InstanceType(name="c5.xlarge", cpu="4", memory="8Gi", pods=58, offerings=(
    Offering(zone="eu-west-1b", capacity_type="spot", price=0.07),))


def test_each_type_and_offering_is_a_series_with_karpenters_labels() -> None:
    karpenter_instance_types(_catalog(M5, C5))
    got = _samples()
    assert got["cpu_cores"] == {("m5.large",): 2.0, ("c5.xlarge",): 4.0}
    assert got["memory_bytes"] == {("m5.large",): 8 * 2**30, ("c5.xlarge",): 8 * 2**30}
    assert got["offering_available"] == {("m5.large", "on-demand", "eu-west-1a"): 1.0,
                                         ("m5.large", "spot", "eu-west-1a"): 0.0,
                                         ("c5.xlarge", "spot", "eu-west-1b"): 1.0}
    assert got["offering_price_estimate"][("m5.large", "on-demand", "eu-west-1a")] == 0.107


def test_a_refreshed_catalog_replaces_every_series() -> None:
    karpenter_instance_types(_catalog(M5, C5))
    karpenter_instance_types(_catalog(C5))
    got = _samples()
    assert set(got["cpu_cores"]) == {("c5.xlarge",)}  # m5.large left the catalog: no stale series
    assert set(got["offering_price_estimate"]) == {("c5.xlarge", "spot", "eu-west-1b")}
