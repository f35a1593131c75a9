"""How late the worker's event loop runs what is due: a task asks to sleep INTERVAL and records how much longer it
slept (`nodeflow_worker_event_loop_lag_seconds`).

One loop carries the drains' rounds, the calls that send their heartbeats, the deletion watcher, the pending-pod
intake and the SDK's activity completions. When it falls seconds behind, a drain's heartbeat (every 2 s, timed
out after 15 s) can come too late and its attempt is run again, which loads the worker further: the lag says the
worker is overloaded before lost attempts do (docs/benchmarks.md, the termination burst's slow regime).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from telemetry.metrics import EVENT_LOOP_LAG

INTERVAL = 0.5  # seconds: two wake-ups a second cost the loop nothing measurable, and a stall of ~1 s shows


async def watch_lag(interval: float = INTERVAL, clock: Callable[[], float] = time.monotonic,
                    observe: Callable[[float], None] = EVENT_LOOP_LAG.observe) -> None:
    """Until cancelled: sleep `interval`, observe how much longer the sleep took than asked."""
    while True:
        began = clock()
        await asyncio.sleep(interval)
        observe(max(0.0, clock() - began - interval))
