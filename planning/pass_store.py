"""What a planner pass asked for, kept for the next pass: the rule every memo of the watch-cache pass shares
(planning/identity_memo.py, planning/node_pods_memo.py; docs/decisions.md §24).

A pass writes what it used into `now`; what it found only in `last` (kept by the pass before) it moves into `now`.
When the next pass starts, `now` becomes `last` and what the ending pass did not ask for is gone, so entries of
objects that left the cluster do not pile up. A pass that asked for nothing (a read between two passes, another
activity's) leaves `last` as it was.
"""

from __future__ import annotations

from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class PassStore(Generic[K, V]):
    __slots__ = ("last", "now")

    def __init__(self) -> None:
        self.now: dict[K, V] = {}
        self.last: dict[K, V] = {}

    def get(self, key: K) -> V | None:
        """The value kept for `key` this pass, else the last (not yet kept for this one: the caller keeps what it
        uses). For stores whose values are never None or falsy."""
        return self.now.get(key) or self.last.get(key)

    def next_pass(self) -> None:
        """Keep what the pass that ends asked for and forget the rest; after a pass that asked for nothing, keep
        what the one before it kept."""
        if self.now:
            self.last, self.now = self.now, {}
