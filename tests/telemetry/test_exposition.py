"""telemetry/exposition.py writes what prometheus_client.generate_latest writes, byte for byte: every metric type,
label values that need escaping, names that need underscores, and Karpenter's state gauges over a cluster (on a
fixed clock, so two collections agree); a label set seen again is rendered from the memo and still the same."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Enum, Gauge, Histogram, Info, Summary, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.parser import text_string_to_metric_families

from bench.scrape import cluster
from runtime.karpenter_state import KarpenterStateCollector
from telemetry import exposition
from telemetry.exposition import render


class _Odd:
    """A collector whose names and values need escaping."""

    def collect(self) -> Any:
        fam = GaugeMetricFamily("odd.metric-name", 'help with \\ and\nnewline', labels=["a.b", "zone"])
        fam.add_metric(['quote " back \\ line\nend', "ünïcode"], 1.5)
        fam.add_metric(["", "z"], float("inf"))
        yield fam


def _registry() -> CollectorRegistry:
    reg = CollectorRegistry()
    Counter("things", "Things done.", ["kind"], registry=reg).labels(kind="a").inc(3)
    Gauge("level", "A level.", registry=reg).set(-2.25)
    Histogram("took_seconds", "How long.", ["op"], buckets=(0.1, 1.0), registry=reg).labels(op="x").observe(0.5)
    Summary("sizes", "Sizes.", registry=reg).observe(7)
    Info("build", "Build.", registry=reg).info({"version": "1.2.3"})
    Enum("state", "State.", states=["up", "down"], registry=reg).state("down")
    reg.register(_Odd())
    return reg


def test_every_metric_type_and_escape_is_written_as_generate_latest_writes_it() -> None:
    reg = _registry()
    assert render(reg) == generate_latest(reg)
    assert render(reg) == generate_latest(reg)  # the second time from the memo


def test_the_state_gauges_of_a_cluster_are_written_as_generate_latest_writes_them() -> None:
    reg = CollectorRegistry()
    state = KarpenterStateCollector(clock=lambda: 1_800_000_000.0)
    objs = cluster(20, 2)
    state.attach(lambda: (objs, True))
    reg.register(state)
    exposition._rendered.clear()
    first = render(reg)
    assert first == generate_latest(reg)
    assert exposition._rendered  # node and pod label sets were kept ...
    assert render(reg) == first  # ... and give the same text from the memo
    samples = sum(len(f.samples) for f in text_string_to_metric_families(first.decode()))
    assert samples > 20 * 10  # every node's gauges, not an empty scrape
