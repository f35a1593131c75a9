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
from collections.abc import Callable, Iterable

from runtime.cluster_cache import ClusterCache
from runtime.informer import Obj

log = logging.getLogger(__name__)
Wanted = Callable[[str, Obj | None, Obj | None], bool]


def paced(debounce_seconds: float, pace: float, took: float) -> float:
    """The pause after a pass that took `took` seconds: the debounce, or `pace` times the pass, whichever is longer,
    so that under churn a costly pass takes at most 1 / (1 + pace) of the time."""
    return max(debounce_seconds, pace * took)


class InformerWakeup:
    """Listeners on a cache's informers of `kinds` that set an asyncio Event on its loop, from the informers' threads,
    for the watch events `wanted(kind, old, new)` says may matter ((None, None) after a LIST): how the cache
    controllers and the deletion watcher (runtime/deletion_watcher.py) are woken."""

    def __init__(self, cache: ClusterCache, kinds: Iterable[str], wanted: Wanted) -> None:
        self.cache, self.kinds, self.wanted = cache, tuple(kinds), wanted
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event: asyncio.Event | None = None

    def attach(self, loop: asyncio.AbstractEventLoop | None = None, event: asyncio.Event | None = None) -> None:
        """Listen (again); `loop` and `event` once known (a controller's tests attach before any loop runs)."""
        if loop is not None and event is not None:
            self._loop, self._event = loop, event
        for kind in self.kinds:
            inf = self.cache.informers.get(kind)
            if inf is not None and self._on_change not in inf.listeners:
                inf.listeners.append(self._on_change)

    def detach(self) -> None:
        for inf in self.cache.informers.values():
            with contextlib.suppress(ValueError):
                inf.listeners.remove(self._on_change)

    def _on_change(self, kind: str, old: Obj | None, new: Obj | None) -> None:
        if self.wanted(kind, old, new):
            self.poke()

    def poke(self) -> None:
        """Set the event (from any thread)."""
        if self._loop is not None and self._event is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed while a watch event came in
                self._loop.call_soon_threadsafe(self._event.set)


class CacheController:
    """Subclasses set `name` and `kinds`, implement `changed` (under an informer thread: quick, no I/O) and
    `pass_once` (one reconcile pass)."""

    name = "controller"
    kinds: Iterable[str] = ()

    def __init__(self, cache: ClusterCache, resync_seconds: float, debounce_seconds: float,
                 pace: float = 0.0) -> None:
        self.cache = cache
        self.resync_seconds, self.debounce_seconds, self.pace = resync_seconds, debounce_seconds, pace
        self._wakeup = InformerWakeup(cache, self.kinds, lambda kind, old, new: self.changed(kind, old, new))
        self._stopping = asyncio.Event()

    def attach(self) -> None:
        self._wakeup.attach()

    def detach(self) -> None:
        self._wakeup.detach()

    def changed(self, kind: str, old: Obj | None, new: Obj | None) -> bool:
        """Note a watch event ((None, None) after a LIST); True to wake the loop."""
        return True

    def poke(self) -> None:
        """Wake the loop (from any thread)."""
        self._wakeup.poke()

    def stop(self) -> None:
        self._stopping.set()
        self.poke()

    async def pass_once(self) -> None:
        raise NotImplementedError

    async def run(self) -> None:
        wake = asyncio.Event()
        self._wakeup.attach(asyncio.get_running_loop(), wake)
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
                    await asyncio.wait_for(wake.wait(), timeout=self.resync_seconds)
                wake.clear()
                await asyncio.sleep(paced(self.debounce_seconds, self.pace, took))
        finally:
            self.detach()
