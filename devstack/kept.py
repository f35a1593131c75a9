"""A small bounded memory of answers the EC2 stand-in computed, shared by its request threads."""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Kept(Generic[K, V]):
    """At most `limit` values by key (None: no bound), the oldest dropped first; moto_server serves requests on
    threads, so every read and write holds one lock."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self._items: dict[K, V] = {}
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            return self._items.get(key)

    def put(self, key: K, value: V) -> None:
        with self._lock:
            while self.limit is not None and len(self._items) >= self.limit:
                self._items.pop(next(iter(self._items)))
            self._items[key] = value
