"""The loop every watch-cache controller of the worker shares (runtime/nodeclaim_lifecycle.py,
runtime/nodepool_status.py; docs/decisions.md §19).

A controller listens on the worker's watch cache (`Informer.listeners`), so a change wakes it within a debounce;
it also runs a pass every `resync_seconds` with no event (timeouts and windows move with the clock). Passes are
paced: after a pass that took `t`, the next waits at least `pace * t`, so under churn a costly pass takes at most
a share of a core. It never patches before the cache has synced once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable

from runtime.cluster_cache import ClusterCache
from runtime.informer import Obj

log = logging.getLogger(__name__)


class CacheController:
    """Subclasses set `name` and `kinds`, implement `changed` (under an informer thread: quick, no I/O) and
    `pass_once` (one reconcile pass)."""

    name = "controller"
    kinds: Iterable[str] = ()

    def __init__(self, cache: ClusterCache, resync_seconds: float, debounce_seconds: float,
                 pace: float = 0.0) -> None:
        self.cache = cache
        self.resync_seconds, self.debounce_seconds, self.pace = resync_seconds, debounce_seconds, pace
        self._wake: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping = asyncio.Event()

    def attach(self) -> None:
        for kind in self.kinds:
            inf = self.cache.informers.get(kind)
            if inf is not None and self._on_change not in inf.listeners:
                inf.listeners.append(self._on_change)

    def detach(self) -> None:
        for inf in self.cache.informers.values():
            with contextlib.suppress(ValueError):
                inf.listeners.remove(self._on_change)

    def _on_change(self, kind: str, old: Obj | None, new: Obj | None) -> None:
        if self.changed(kind, old, new):
            self.poke()

    def changed(self, kind: str, old: Obj | None, new: Obj | None) -> bool:
        """Note a watch event ((None, None) after a LIST); True to wake the loop."""
        return True

    def poke(self) -> None:
        """Wake the loop (from any thread)."""
        if self._loop is not None and self._wake is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed while a watch event came in
                self._loop.call_soon_threadsafe(self._wake.set)

    def stop(self) -> None:
        self._stopping.set()
        self.poke()

    async def pass_once(self) -> None:
        raise NotImplementedError

    async def run(self) -> None:
        self._loop, self._wake = asyncio.get_running_loop(), asyncio.Event()
        self.attach()
        try:
            await asyncio.to_thread(self.cache.wait_synced, 60.0)  # never decide on a half-synced cache
            while not self._stopping.is_set():
                started = time.monotonic()
                try:
                    await self.pass_once()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    log.warning("%s pass failed: %s", self.name, exc)
                took = time.monotonic() - started
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout=self.resync_seconds)
                self._wake.clear()
                await asyncio.sleep(max(self.debounce_seconds, self.pace * took))
        finally:
            self.detach()
