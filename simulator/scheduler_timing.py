"""The emulated kube-scheduler's timing, in simulated seconds (scaled by the world's `time_scale`).

The defaults are a real kube-scheduler's (v1.32): a pod that fails a scheduling attempt parks in the
unschedulable queue until a cluster event (a node added or changed, an assigned pod gone, a volume change) moves
it back, after a backoff of `initial_backoff` doubling per failed attempt up to `max_backoff`
(podInitialBackoffSeconds / podMaxBackoffSeconds); a pod left there for `unschedulable_flush` seconds
(podMaxInUnschedulablePodsDuration, 5 min; 60 s before v1.27) is moved back by the flush that runs every
`flush_period` seconds. Binding a planned pod takes `bind_delay`. A scheduler binding the instant a node fits
hides races a real cluster shows, so the instant timing is something a test asks for by name.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field


class SchedulerTiming(BaseModel):
    """How long the emulated kube-scheduler takes to retry and to bind a pod (simulated seconds)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    initial_backoff: float = Field(default=1.0, ge=0)
    max_backoff: float = Field(default=10.0, ge=0)
    unschedulable_flush: float = Field(default=300.0, ge=0)
    flush_period: float = Field(default=30.0, ge=0)  # kube checks the unschedulable queue this often
    requeue_on_events: bool = True
    # The trial's condition: a pod that failed is retried exactly this long after, never earlier (no event
    # requeue, no backoff, no flush).
    retry_after: float | None = Field(default=None, ge=0)
    bind_delay: float = Field(default=0.1, ge=0)  # the bind API call and the binding cycle

    @classmethod
    def instant(cls) -> SchedulerTiming:
        """Bind as soon as a node fits (any cluster event retries every pending pod at once): for tests whose
        subject is not scheduling and that say so on purpose."""
        return cls(initial_backoff=0.0, max_backoff=0.0, bind_delay=0.0)

    @classmethod
    def slow(cls, retry_after: float) -> SchedulerTiming:
        """A scheduler that retries an unschedulable pod only `retry_after` seconds after its last attempt."""
        return cls(retry_after=retry_after)

    @property
    def is_instant(self) -> bool:
        return self.retry_after is None and self.max_backoff == 0 and self.bind_delay == 0

    def backoff(self, attempts: int) -> float:
        """kube-scheduler's backoff after `attempts` failed attempts: initial, doubled per attempt, capped."""
        if attempts <= 0 or self.initial_backoff <= 0:
            return 0.0
        return min(self.initial_backoff * 2.0 ** min(attempts - 1, 62), self.max_backoff)

    def flush_due(self, since: float) -> float:
        """When the periodic flush moves a pod parked in the unschedulable queue at `since` (simulated
        seconds on the scheduler's clock, whose flush ticks fall on multiples of flush_period)."""
        due = since + self.unschedulable_flush
        if self.flush_period <= 0 or math.isinf(due):
            return due
        ticks = -(-due // self.flush_period)
        return ticks * self.flush_period
