"""Activity time limits and retry policies more than one workflow uses, so that, for example, the planner and
the provisioner read the cluster under the same rules."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from temporalio.common import RetryPolicy

SHORT = timedelta(seconds=30)  # one or a few API calls
STEP_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=10),
                         maximum_attempts=10)
# Reading the cluster retries until READ_LIMIT, not a fixed count (~15 s): an API server outage (a control plane
# upgrade; the chaos suite's 30 s of 503s, 120 s in its long mode) holds the work for its length instead of failing it.
READ_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=10))
READ_LIMIT = timedelta(minutes=5)
# A worker that dies inside an activity is noticed only by a timeout: without a heartbeat timeout, a launch's whole
# start-to-close (two minutes for a drift replacement's). Launches, the replacement's deletion and the provisioning
# plan heartbeat every 5 s (activities/heartbeat.py), the readiness wait at each poll, so an attempt lost with its
# worker is retried after this.
LONG_CALL_HEARTBEAT = timedelta(seconds=15)

# A launch retried a fixed count (~15 s) gave up inside an API outage, and the command rolled back as LaunchFailed
# (the chaos suite: "launch failed: ServiceException: (503)"), which for drift also held the pool's drift for a
# minute or more. Behind this patch a launch retries its transient failures until READ_LIMIT instead; the typed
# non-retryable errors (no offering, no capacity, a fatal EC2 answer) still end it at once.
LAUNCH_THROUGH_OUTAGE_PATCH = "launch-retries-through-outage"


def until_limit(policy: RetryPolicy) -> RetryPolicy:
    """`policy` without its attempt count: the caller bounds it by time (schedule_to_close_timeout)."""
    return dataclasses.replace(policy, maximum_attempts=0)
