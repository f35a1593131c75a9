"""A Prometheus summary with quantiles, as client_golang's: prometheus_client's Summary exports only _sum and _count.

Karpenter's `karpenter_nodes_termination_duration_seconds` and `karpenter_pods_startup_duration_seconds` are
summaries with the objectives 0, 0.5, 0.9, 0.99 and 1 (pkg/metrics/constants.go SummaryObjectives), and its
performance dashboard reads them as `{quantile="0.9"}`. client_golang computes them over a sliding window of 10
minutes (DefMaxAge); so does this one, exactly (the window is small: one observation per node or pod).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence

from prometheus_client.core import Metric, SummaryMetricFamily

OBJECTIVES = (0.0, 0.5, 0.9, 0.99, 1.0)
MAX_AGE_SECONDS = 600.0
MAX_WINDOW = 10_000  # observations kept per label set: bounds memory if a burst outruns the window


def quantile(values: Sequence[float], q: float) -> float:
    """The q-quantile of sorted `values` (nearest rank, as a summary reports it); NaN when empty."""
    if not values:
        return math.nan
    rank = min(len(values) - 1, max(0, math.ceil(q * len(values)) - 1))
    return values[rank]


class _Series:
    def __init__(self) -> None:
        self.window: deque[tuple[float, float]] = deque(maxlen=MAX_WINDOW)
        self.count = 0
        self.total = 0.0


class QuantileSummary:
    """A labelled summary collector: `observe(value, **labels)`; register it on a CollectorRegistry."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str] = (),
                 objectives: Sequence[float] = OBJECTIVES, max_age: float = MAX_AGE_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self.objectives = tuple(objectives)
        self.max_age = max_age
        self._clock = clock
        self._series: dict[tuple[str, ...], _Series] = {}
        self._lock = threading.Lock()

    def observe(self, value: float, **labels: str) -> None:
        key = tuple(str(labels.get(n, "")) for n in self.labelnames)
        with self._lock:
            series = self._series.setdefault(key, _Series())
            series.window.append((self._clock(), value))
            series.count += 1
            series.total += value

    def describe(self) -> Iterator[Metric]:
        yield SummaryMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def collect(self) -> Iterator[Metric]:
        family = SummaryMetricFamily(self.name, self.documentation, labels=self.labelnames)
        oldest = self._clock() - self.max_age
        with self._lock:
            for key, series in self._series.items():
                while series.window and series.window[0][0] < oldest:
                    series.window.popleft()
                values = sorted(v for _, v in series.window)
                labels = dict(zip(self.labelnames, key, strict=True))
                for q in self.objectives:
                    family.add_sample(self.name, {**labels, "quantile": _format(q)}, quantile(values, q))
                family.add_metric(list(key), count_value=series.count, sum_value=series.total)
        yield family


def _format(q: float) -> str:
    """0 -> "0", 0.5 -> "0.5", 1 -> "1": the label values client_golang writes and the dashboards select."""
    return f"{q:g}"
