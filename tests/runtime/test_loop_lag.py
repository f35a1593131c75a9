"""runtime/loop_lag.py: a stall of the event loop is observed as the lag of the sleeping task, and observations
reach the worker's histogram."""

from __future__ import annotations

import asyncio
import contextlib
import time

from runtime.loop_lag import watch_lag
from telemetry.metrics import REGISTRY

LAG = "nodeflow_worker_event_loop_lag_seconds"


async def _run(seconds: float, **kwargs: object) -> None:
    task = asyncio.create_task(watch_lag(**kwargs))  # type: ignore[arg-type]
    await asyncio.sleep(seconds)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def test_a_blocked_loop_is_observed_as_lag() -> None:
    seen: list[float] = []

    async def block() -> None:
        await asyncio.sleep(0.12)
        time.sleep(0.4)  # a blocking call on the loop: nothing else runs meanwhile

    blocker = asyncio.create_task(block())
    await _run(0.9, interval=0.05, observe=seen.append)
    await blocker
    assert len(seen) >= 3 and all(lag >= 0.0 for lag in seen)
    assert max(seen) >= 0.3  # the stall, less at most one interval already slept
    assert sorted(seen)[len(seen) // 2] < 0.3  # most wake-ups were not behind the stall


async def test_observations_reach_the_histogram() -> None:
    before = REGISTRY.get_sample_value(f"{LAG}_count") or 0.0
    await _run(0.35, interval=0.05)
    assert (REGISTRY.get_sample_value(f"{LAG}_count") or 0.0) - before >= 3
