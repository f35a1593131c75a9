"""The Temporal SDK's failure counters, copied into nodeflow's Prometheus registry; the planner's pause state.

The SDK core counts failed workflows, failed workflow tasks (a bug or a non-determinism error: Temporal retries
the task until a fixed worker takes it) and failed activity attempts. The worker gives the core a MetricBuffer
(client/connection.py `forward_core_logs`) and `pump` drains it every second into telemetry.metrics, so the
alerts in deploy/monitoring read them from the one `/metrics` endpoint. Other SDK metrics are dropped.

`track_planner_pause` reads the planner schedule's paused state every minute, so the planner-not-running alert
stays quiet while `nodeflow pause` is in effect (a paused schedule starts no passes).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Mapping

from prometheus_client import Counter
from temporalio.client import Client
from temporalio.runtime import BUFFERED_METRIC_KIND_COUNTER, BufferedMetricUpdate, MetricBuffer

from client.planner_schedule import PLANNER_SCHEDULE_ID, planner_paused
from telemetry import metrics

log = logging.getLogger(__name__)

BUFFER_SIZE = 50_000  # updates between two drains; the SDK drops (and logs) updates beyond it
PUMP_SECONDS = 1.0
PAUSE_SECONDS = 60.0

# SDK metric -> (our counter, the SDK attributes that become its labels, in the counter's label order)
FAILURE_COUNTERS: Mapping[str, tuple[Counter, tuple[str, ...]]] = {
    "temporal_workflow_failed": (metrics.WORKFLOW_FAILURES, ("workflow_type",)),
    "temporal_workflow_task_execution_failed": (metrics.WORKFLOW_TASK_FAILURES, ("workflow_type", "failure_reason")),
    "temporal_activity_execution_failed": (metrics.ACTIVITY_FAILURES, ("activity_type",)),
}


def new_buffer() -> MetricBuffer:
    return MetricBuffer(BUFFER_SIZE)


def copy_failures(updates: Iterable[BufferedMetricUpdate]) -> int:
    """Add the failure counters' deltas to ours; returns how many updates were copied."""
    copied = 0
    for update in updates:
        target = FAILURE_COUNTERS.get(update.metric.name)
        if target is None or update.metric.kind != BUFFERED_METRIC_KIND_COUNTER or update.value <= 0:
            continue
        counter, keys = target
        counter.labels(*(str(update.attributes.get(k, "")) for k in keys)).inc(update.value)
        copied += 1
    return copied


async def pump(buffer: MetricBuffer, stop: asyncio.Event, every: float = PUMP_SECONDS) -> None:
    """Drain `buffer` every `every` seconds until `stop` is set (then once more)."""
    while True:
        try:
            copy_failures(buffer.retrieve_updates())
        except Exception as exc:  # never take the worker down over metrics
            log.warning("could not read the Temporal SDK's metrics: %s", exc)
        if stop.is_set():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)


async def track_planner_pause(client: Client, stop: asyncio.Event, every: float = PAUSE_SECONDS,
                              schedule_id: str = PLANNER_SCHEDULE_ID) -> None:
    """Set nodeflow_planner_paused from the schedule every `every` seconds until `stop` is set."""
    while not stop.is_set():
        try:
            metrics.PLANNER_PAUSED.set(1 if await planner_paused(client, schedule_id) else 0)
        except Exception as exc:  # no schedule yet, or Temporal unreachable: keep the last value
            log.info("could not read the planner schedule's paused state: %s", exc)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)
