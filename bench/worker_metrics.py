"""The worker's own Prometheus counters read over HTTP (its `--metrics-port`), so a bench can say what the
worker did in a phase: how many disruption commands it validated and why the others failed (by typed verdict),
and whether it plans on the instance types it discovered yet."""

from __future__ import annotations

import asyncio
import os
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

VALIDATIONS = "nodeflow_disruption_validations"
DISCOVERED = "nodeflow_instance_types_discovered"
LEADER = "nodeflow_leader"
DECISIONS = "nodeflow_disruption_decisions"
OUTCOMES = "nodeflow_disruption_outcomes"
EVALUATION = "karpenter_voluntary_disruption_decision_evaluation_duration_seconds"
CREATED = "karpenter_nodeclaims_created"


def ready(port: int, timeout: float = 1.0) -> bool:
    """Whether the worker's /readyz answers 200 (Temporal reachable, cluster cache synced); not listening yet, or
    any other answer, is not ready."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=timeout) as resp:
            return resp.status == 200
    except OSError:  # urllib's HTTPError (a 503) and URLError are OSErrors
        return False


def _scrape(port: int) -> str | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            return resp.read().decode()
    except OSError:
        return None


def _samples(text: str, family: str) -> Iterator[Any]:
    """The samples of metric family `family` in a /metrics text."""
    for fam in text_string_to_metric_families(text):
        if fam.name == family:
            yield from fam.samples


def instance_types_discovered(port: int) -> float | None:
    """The types of the worker's last successful instance-type discovery: 0 before its first, while the bundled
    catalog stands in (gateways/instance_types.py); None when the worker does not answer."""
    text = _scrape(port)
    if text is None:
        return None
    return sum(sample.value for sample in _samples(text, DISCOVERED))


def is_leader(port: int) -> bool:
    """Whether the worker runs the in-worker controllers (its `nodeflow_leader` gauge is 1): the pending-pod
    intake and the NodeClaim lifecycle wait for it, so a bench that times them starts after it."""
    text = _scrape(port) or ""
    return any(sample.value == 1 for sample in _samples(text, LEADER))


def validations(port: int) -> dict[str, float]:
    """result -> validations so far (summed over methods); empty when the worker does not answer."""
    text = _scrape(port)
    return {} if text is None else totals(text, VALIDATIONS, ("result",))


def launches(port: int) -> dict[str, float]:
    """reason -> NodeClaims created so far (summed over pools): `provisioning` for pending pods, a disruption reason
    (`underutilized`, `drifted`, ...) for a command's replacements. A consolidation phase that creates NodeClaims
    for pending pods moved pods that then found no room (the churn a bench should show)."""
    text = _scrape(port)
    return {} if text is None else totals(text, CREATED, ("reason",))


def since(before: dict[str, float], after: dict[str, float]) -> dict[str, int]:
    """What the counters added between two reads (results that did not move are left out)."""
    return {k: int(v - before.get(k, 0.0)) for k, v in sorted(after.items()) if v - before.get(k, 0.0) > 0}



def read(port: int, attempts: int = 3, timeout: float = 10.0) -> str | None:
    """The worker's /metrics text, retried: a busy worker on a loaded machine misses a 5 s scrape now and then (one
    reading of several counters from one text also keeps them consistent with each other)."""
    for _ in range(attempts):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout) as resp:
                return resp.read().decode()
        except OSError:
            continue
    return None


def totals(text: str, family: str, labels: tuple[str, ...]) -> dict[str, float]:
    """A counter's totals in a /metrics text by the given labels joined with "/" (other labels summed). E.g.
    decisions by method and decision: totals(text, DECISIONS, ("method", "decision"))."""
    out: dict[str, float] = {}
    for sample in _samples(text, family):
        if sample.name == f"{family}_total":
            key = "/".join(sample.labels.get(label, "") for label in labels)
            out[key] = out.get(key, 0.0) + sample.value
    return out


def histogram_sum_count(text: str, family: str) -> tuple[float, float]:
    """A histogram's (sum, count) in a /metrics text, over all its labels."""
    total = count = 0.0
    for sample in _samples(text, family):
        if sample.name == f"{family}_sum":
            total += sample.value
        elif sample.name == f"{family}_count":
            count += sample.value
    return total, count


LAG = "nodeflow_worker_event_loop_lag_seconds"
LAG_THRESHOLDS = (1.0, 5.0, 15.0)  # seconds: a second behind; a third of a drain's heartbeat timeout; all of it
START_DELAY = "nodeflow_activity_start_delay_seconds"


def histogram_over(text: str | None, family: str, thresholds: tuple[float, ...],
                   where: dict[str, str] | None = None) -> dict[str, float]:
    """A histogram's samples in a /metrics text (those whose labels include `where`): how many, and how many were
    above each threshold (`over5s`, ...), from its cumulative buckets; empty without a text."""
    if text is None:
        return {}
    buckets: dict[float, float] = {}
    count = 0.0
    for sample in _samples(text, family):
        if where and any(sample.labels.get(k) != v for k, v in where.items()):
            continue
        if sample.name == f"{family}_bucket":
            le = float(sample.labels["le"])
            buckets[le] = buckets.get(le, 0.0) + sample.value
        elif sample.name == f"{family}_count":
            count += sample.value
    return {"samples": count, **{f"over{t:g}s": count - buckets.get(t, count) for t in thresholds}}


def event_loop_lag(text: str | None) -> dict[str, float]:
    """The worker's event-loop lag samples: how many, and how many were later than each of LAG_THRESHOLDS."""
    return histogram_over(text, LAG, LAG_THRESHOLDS)


def drain_start_delay(text: str | None) -> dict[str, float]:
    """Drain attempts by how long after Temporal recorded them started they began in the worker (over 5 / 15 s:
    at 15 s a drain's heartbeat timeout has already run out)."""
    return histogram_over(text, START_DELAY, (5.0, 15.0), {"activity_type": "termination.drain"})


def discovers_instance_types() -> bool:
    """Whether the worker will discover its catalog (its default) rather than read a given or the bundled one."""
    off = (os.environ.get("NODEFLOW_NO_INSTANCE_TYPE_DISCOVERY") or "").lower() in ("1", "true", "yes")
    return not (os.environ.get("NODEFLOW_CATALOG") or off)


async def wait_for_discovery(port: int, timeout: float) -> float:
    """Until the worker plans on the instance types it discovered; returns the seconds waited. Its /readyz does not
    wait for discovery, and until the first refresh the bundled 48 types stand in: a scale-out started before it
    launched from those (153 r5/m5 nodes instead of 95 on the discovered types, in one run of basic)."""
    t0 = time.monotonic()
    while not await asyncio.to_thread(instance_types_discovered, port):
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"the worker discovered no instance types in {timeout:.0f}s")
        await asyncio.sleep(0.5)
    return time.monotonic() - t0
