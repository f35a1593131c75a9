"""The worker's watch cache as the termination's activities read it (runtime/cache_reads.py implements it).

A cached copy is only ever a first attempt: writes from it are guarded by resourceVersion (a stale copy costs a 409
and a fresh read, never a lost write), and a copy is trusted only once it shows the deletion the termination is for,
so a cache that has not yet seen the deletion sends the caller to the API server.
"""

from __future__ import annotations

from typing import Any, Protocol

from planning.lifecycle import drain as rules

Obj = dict[str, Any]


class CacheReads(Protocol):
    """A cluster-scoped object by kind and name, and the pods bound to a node; None: not cached, or not synced."""

    def get(self, kind: str, name: str) -> Obj | None: ...

    def node_pods(self, node: str) -> list[Obj] | None: ...


def deleting_copy(cached: CacheReads | None, kind: str, name: str | None) -> Obj | None:
    """The cache's copy of a Node or NodeClaim when it already shows a deletion; else None (read the API)."""
    if cached is None or not name:
        return None
    obj = cached.get(kind, name)
    return obj if obj is not None and rules.deletion_time(obj) is not None else None
