"""The drains a worker is running, exported as their start times so an alert can see a drain that never ends.

`nodeflow_drain_duration_seconds` is observed only when a drain finishes, so a drain blocked for hours by a
PodDisruptionBudget leaves no trace there. The drain activity marks its node on every round; an entry not
marked for `ttl` seconds is dropped (the drain moved to another worker, or its termination was cancelled), so
a series never outlives its drain by more than that. Between two drain activities of one termination the entry
stays, so the series does not blink out.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

DEFAULT_TTL = 300.0  # well past the longest wait between two rounds of one drain (the eviction backoff cap)


@dataclass
class _Drain:
    reason: str
    started_at: float
    seen_at: float


class RunningDrains(Collector):
    """A gauge family `{name}{node, reason}` = the Unix time the node's termination started."""

    def __init__(self, name: str, ttl: float = DEFAULT_TTL, clock: Callable[[], float] = time.time) -> None:
        self.name = name
        self.ttl = ttl
        self._clock = clock
        self._drains: dict[str, _Drain] = {}
        self._lock = threading.Lock()  # collect() runs on the metrics server's thread or loop

    def running(self, node: str, reason: str, started_at: float | None) -> None:
        """A drain round of `node`; `started_at` None keeps the first time this worker saw it."""
        now = self._clock()
        with self._lock:
            known = self._drains.get(node)
            start = started_at if started_at is not None else (known.started_at if known else now)
            self._drains[node] = _Drain(reason=reason, started_at=start, seen_at=now)

    def finished(self, node: str) -> None:
        with self._lock:
            self._drains.pop(node, None)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(self.name, "Unix time at which the termination of each node this worker is "
                                   "draining started (series present while the drain runs).",
                                   labels=["node", "reason"])
        cutoff = self._clock() - self.ttl
        with self._lock:
            for node in [n for n, d in self._drains.items() if d.seen_at < cutoff]:
                del self._drains[node]
            rows = sorted(self._drains.items())
        for node, drain in rows:
            family.add_metric([node, drain.reason], drain.started_at)
        yield family
