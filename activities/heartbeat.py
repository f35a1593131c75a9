"""Heartbeating around work that does not heartbeat itself (a planning pass, an EC2 launch in a thread).

An activity without a heartbeat timeout that dies with its worker is retried only when its start-to-close timeout
runs out: a drift replacement's launch lost to a worker restart waited its whole two minutes (docs/decisions.md
§26). Heartbeating every HEARTBEAT_SECONDS under a heartbeat timeout of a few times that retries it soon after.
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import activity

HEARTBEAT_SECONDS = 5.0


async def heartbeating(coro: Any, every: float = HEARTBEAT_SECONDS) -> Any:
    """Run `coro`, heartbeating every `every` seconds while it runs; outside an activity (a direct call in a test or
    the CLI) it only runs `coro`."""
    task = asyncio.ensure_future(coro)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=every)
            if done:
                return task.result()
            if activity.in_activity():
                activity.heartbeat()
    finally:
        task.cancel()
