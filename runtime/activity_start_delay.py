"""How long an activity attempt waits between Temporal recording it started and the worker running its function
(`nodeflow_activity_start_delay_seconds`, by activity type).

The attempt's timeouts run from Temporal's start. In a burst of 1,000 deleted nodes on a saturated machine, every
drain attempt lost to its heartbeat timeout had begun in the worker 15 s or more after that start, while the
worker's event loop was never 5 s behind (docs/benchmarks.md, termination burst): the wait is before the
function, where no heartbeat can cover it. This measures it for every activity, as operators see it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from temporalio import activity
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from telemetry.metrics import ACTIVITY_START_DELAY


class StartDelay(Interceptor):
    """Observes each (non-local) activity attempt's start delay before running it."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Observe(next)


class _Observe(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        info = activity.info()
        if not info.is_local:  # a local activity's start is the worker's own: no wait to see
            delay = (datetime.now(UTC) - info.started_time).total_seconds()
            ACTIVITY_START_DELAY.labels(activity_type=info.activity_type).observe(max(0.0, delay))
        return await super().execute_activity(input)
