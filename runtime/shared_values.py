"""One copy of the values that thousands of cached objects repeat, so a watch cache of 72k pods holds each once.

Every decoded JSON value is a new object: the 15 pods of a ReplicaSet each carry their own labels, owner
reference, container requests, node selector and conditions, and every "True", "Ready" or "500m" is a string of
its own. A tracemalloc look at the cache worker at 2,000 nodes found the decoder's values the largest holder
(105 of 295 MiB traced). `SharedValues` hands back one equal object already held for such a value instead.

Safe because cached objects are read, never modified (runtime/cluster_cache.py): two pods may share one labels
dict. The table is bounded: when full it starts over, so values from objects long gone are not kept; objects
already cached keep the copies they were given.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

MAX_ENTRIES = 50_000
MAX_INTERNED = 120  # longer strings (messages, JSON blobs) are rarely repeated


class SharedValues:
    """A table of values seen, by content; `share` returns the one held (dicts, lists, strings, recursively)."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._held: dict[Any, Any] = {}
        self._lock = threading.Lock()  # informers trim in their own threads

    def __len__(self) -> int:
        return len(self._held)

    def share(self, value: Any) -> Any:
        """An object equal to `value`: the one held for it when there is one, else `value` (now held)."""
        return self._share(value)[0]

    def _share(self, value: Any) -> tuple[Any, Any]:
        """(the shared object, its content key) for a JSON value."""
        if isinstance(value, str):
            return (sys.intern(value) if len(value) <= MAX_INTERNED else value), value
        if isinstance(value, dict):
            items = [(sys.intern(k), *self._share(v)) for k, v in value.items()]
            key: Any = ("d", tuple((k, vk) for k, _, vk in items))
            return self._hold(key, lambda: {k: v for k, v, _ in items}), key
        if isinstance(value, list):
            shared = [self._share(v) for v in value]
            key = ("l", tuple(vk for _, vk in shared))
            return self._hold(key, lambda: [v for v, _ in shared]), key
        return value, (type(value).__name__, value)  # numbers, bools, None: small, often cached by Python

    def _hold(self, key: Any, build: Any) -> Any:
        held = self._held.get(key)
        if held is not None:
            return held
        with self._lock:
            if len(self._held) >= self.max_entries:
                self._held = {}
            return self._held.setdefault(key, build())
