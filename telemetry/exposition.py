"""The Prometheus text format of a registry, as `prometheus_client.generate_latest` writes it, with each label set
rendered once and then reused.

Karpenter's state gauges (runtime/karpenter_state.py) give every node's samples the node's ~40 well-known labels,
and every pod's samples a dozen: at 1,000 nodes and 4,000 pods a scrape held 17,472 samples, and escaping their
labels one by one was most of the 0.2 s of worker CPU a scrape cost. The same node's labels recur in every family
and scrape, so the rendered `{...}` text is kept by the label names and values (the keys are plain tuples: cheap to
build, and a scrape's lookups find last scrape's). Everything else follows generate_latest: counters' `_total`,
OpenMetrics-only samples (`_created`, `_gsum`, `_gcount`) in gauges of their own, names escaped with underscores.
"""

from __future__ import annotations

import functools
from typing import Any

from prometheus_client.openmetrics.exposition import UNDERSCORES, escape_label_name, escape_metric_name
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

OM_SUFFIXES = ("_created", "_gsum", "_gcount")
KEPT_LABEL_SETS = 200_000  # rendered label sets kept, then the memo starts over
TYPES = {"counter": "counter", "info": "gauge", "stateset": "gauge", "gaugehistogram": "histogram",
         "unknown": "untyped"}
_rendered: dict[tuple[tuple[str, ...], tuple[str, ...]], str] = {}


@functools.lru_cache(maxsize=4096)
def _metric_name(name: str) -> str:
    return escape_metric_name(name, UNDERSCORES)


@functools.lru_cache(maxsize=4096)
def _label_name(name: str) -> str:
    return escape_label_name(name, UNDERSCORES)


def _label_value(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    key = (tuple(labels), tuple(labels.values()))
    text = _rendered.get(key)
    if text is None:
        if len(_rendered) >= KEPT_LABEL_SETS:
            _rendered.clear()
        text = _rendered[key] = "{" + ",".join(
            f'{_label_name(k)}="{_label_value(v)}"' for k, v in sorted(labels.items())) + "}"
    return text


def _line(sample: Any) -> str:
    stamp = "" if sample.timestamp is None else f" {int(float(sample.timestamp) * 1000):d}"
    return f"{_metric_name(sample.name)}{_labels(sample.labels)} {floatToGoString(sample.value)}{stamp}\n"


def _header(name: str, doc: str, kind: str) -> str:
    doc = doc.replace("\\", r"\\").replace("\n", r"\n")
    return f"# HELP {_metric_name(name)} {doc}\n# TYPE {_metric_name(name)} {kind}\n"


def render(registry: Collector) -> bytes:
    """The registry's metrics in the text format (version 0.0.4), as generate_latest(registry) gives them."""
    out: list[str] = []
    for metric in registry.collect():
        name = metric.name + ("_total" if metric.type == "counter" else "_info" if metric.type == "info" else "")
        out.append(_header(name, metric.documentation, TYPES.get(metric.type, metric.type)))
        extra: dict[str, list[str]] = {}
        for sample in metric.samples:
            suffix = next((s for s in OM_SUFFIXES if sample.name == metric.name + s), None)
            if suffix is None:
                out.append(_line(sample))
            else:
                extra.setdefault(suffix, []).append(_line(sample))
        for suffix, lines in sorted(extra.items()):
            out.append(_header(metric.name + suffix, metric.documentation, "gauge"))
            out.extend(lines)
    return "".join(out).encode("utf-8")
