"""runtime/cache_controller.py InformerWakeup: the cache controllers and the deletion watcher are woken from the
informers' threads for the events they say matter, and only those."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace
from typing import Any

from runtime.cache_controller import InformerWakeup


def _cache(*kinds: str) -> Any:
    return SimpleNamespace(informers={kind: SimpleNamespace(listeners=[]) for kind in kinds})


def _emit(cache: Any, kind: str, old: Any, new: Any) -> None:
    """An informer's thread delivering one watch event to its listeners."""
    thread = threading.Thread(target=lambda: [f(kind, old, new) for f in cache.informers[kind].listeners])
    thread.start()
    thread.join()


def test_it_listens_once_on_each_kind_it_names_and_stops() -> None:
    cache = _cache("Node", "NodeClaim", "Pod")
    wakeup = InformerWakeup(cache, ["Node", "NodeClaim", "NodePool"], lambda *_: True)
    wakeup.attach()
    wakeup.attach()
    assert [len(cache.informers[k].listeners) for k in ("Node", "NodeClaim", "Pod")] == [1, 1, 0]
    wakeup.detach()
    wakeup.detach()
    assert all(not inf.listeners for inf in cache.informers.values())


async def test_a_wanted_event_sets_the_event_and_another_does_not() -> None:
    cache = _cache("Node")
    seen: list[tuple[str, Any, Any]] = []

    def wanted(kind: str, old: Any, new: Any) -> bool:
        seen.append((kind, old, new))
        return new is not None and new.get("deleting", False)

    event = asyncio.Event()
    wakeup = InformerWakeup(cache, ["Node"], wanted)
    wakeup.attach(asyncio.get_running_loop(), event)
    _emit(cache, "Node", {"a": 1}, {"a": 2})
    await asyncio.sleep(0.05)
    assert not event.is_set()
    _emit(cache, "Node", {"a": 2}, {"deleting": True})
    await asyncio.wait_for(event.wait(), timeout=2)
    assert seen == [("Node", {"a": 1}, {"a": 2}), ("Node", {"a": 2}, {"deleting": True})]
    wakeup.detach()


def test_a_poke_before_a_loop_or_after_it_closed_is_harmless() -> None:
    cache = _cache("Node")
    wakeup = InformerWakeup(cache, ["Node"], lambda *_: True)
    wakeup.poke()  # attached for tests before any loop runs: nothing to wake yet
    loop = asyncio.new_event_loop()
    wakeup.attach(loop, asyncio.Event())
    loop.close()
    _emit(cache, "Node", None, None)  # the worker stopping while a watch event comes in
