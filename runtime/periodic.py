"""The loop a simple in-worker controller runs: tick, log a failed tick and go on, wait the interval or the stop.
One place, so every such controller survives a failed read the same way (the next tick reads again)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)


async def tick_until_stopped(tick: Callable[[], Awaitable[None]], stop: asyncio.Event, seconds: float,
                             what: str) -> None:
    """Run `tick` every `seconds` until `stop` is set; an exception from a tick is logged (`what: error`), never
    raised, so a transient API failure does not end the controller."""
    while not stop.is_set():
        try:
            await tick()
        except Exception as exc:
            log.warning("%s: %s", what, exc)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), seconds)
