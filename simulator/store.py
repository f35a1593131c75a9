"""The object store: one dict per resource type keyed by (namespace, name), a global resourceVersion,
a bounded event log for watch resume (410 when a watcher asks for history that was dropped), and
indexes of pods by node and of namespaced objects by namespace.

Objects are never mutated in place once stored (copy on write), so watch events and readers can hold
references without copying.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from simulator.errors import already_exists, not_found
from simulator.resources import RESOURCE_TYPES, ResourceType

Key = tuple[str, str]  # (namespace or "", name)
ChangeListener = Callable[[ResourceType, str, dict | None, dict | None], None]


_last_stamp: tuple[int, str] = (0, "")


def now_rfc3339() -> str:
    """The current time as the API server writes it (second precision; cached per second)."""
    global _last_stamp
    second = int(time.time())
    if _last_stamp[0] != second:
        _last_stamp = (second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return _last_stamp[1]


def key_of(obj: dict[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


@dataclass(frozen=True)
class WatchEvent:
    rv: int
    type: str  # ADDED | MODIFIED | DELETED
    rtype: ResourceType
    obj: dict[str, Any]
    old: dict[str, Any] | None


@dataclass(eq=False)
class Watcher:
    """One open watch: events for one resource type, delivered through an asyncio queue on the server loop."""

    rtype: ResourceType
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)


class Store:
    """All objects of the simulated cluster. Guarded by `lock` (the server loop and test threads both use it)."""

    def __init__(self, log_size: int = 50_000) -> None:
        self.lock = threading.RLock()
        self.rv = 0
        self.compacted_rv = 0
        self.objects: dict[str, dict[Key, dict[str, Any]]] = {r.plural: {} for r in RESOURCE_TYPES}
        self.by_namespace: dict[str, dict[str, set[Key]]] = {r.plural: {} for r in RESOURCE_TYPES if r.namespaced}
        self.pods_by_node: dict[str, set[Key]] = {}
        self.pods_by_owner: dict[str, set[Key]] = {}  # controller ownerReference uid -> pods
        self.pods_by_label: dict[tuple[str, str, str], set[Key]] = {}  # (namespace, key, value) -> pods
        self.log: deque[WatchEvent] = deque(maxlen=log_size)
        self.watchers: dict[str, list[Watcher]] = {r.plural: [] for r in RESOURCE_TYPES}
        self.listeners: list[ChangeListener] = []

    # ---- reads -------------------------------------------------------------------------------------------
    def get(self, rt: ResourceType, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects[rt.plural].get((namespace if rt.namespaced else "", name))

    def must_get(self, rt: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        obj = self.get(rt, namespace, name)
        if obj is None:
            raise not_found(rt.plural, name, rt.group)
        return obj

    def list(self, rt: ResourceType, namespace: str | None = None) -> Iterator[dict[str, Any]]:
        table = self.objects[rt.plural]
        if namespace and rt.namespaced:
            keys = self.by_namespace[rt.plural].get(namespace, set())
            return (table[k] for k in list(keys) if k in table)
        return iter(list(table.values()))

    def pods_on_node(self, node_name: str) -> list[dict[str, Any]]:
        table = self.objects["pods"]
        return [table[k] for k in list(self.pods_by_node.get(node_name, ())) if k in table]

    def pods_owned_by(self, uid: str) -> list[dict[str, Any]]:
        table = self.objects["pods"]
        return [table[k] for k in list(self.pods_by_owner.get(uid, ())) if k in table]

    def pods_with_labels(self, namespace: str, match_labels: dict[str, str]) -> list[dict[str, Any]]:
        """Pods of a namespace carrying all of `match_labels` (non-empty), through the label index."""
        sets = [self.pods_by_label.get((namespace, k, v), set()) for k, v in match_labels.items()]
        smallest = min(sets, key=len)
        table = self.objects["pods"]
        return [table[k] for k in list(smallest) if k in table and all(k in s for s in sets)]

    def count(self, rt: ResourceType) -> int:
        return len(self.objects[rt.plural])

    # ---- writes ------------------------------------------------------------------------------------------
    def next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def create(self, rt: ResourceType, obj: dict[str, Any], emit: bool = True) -> dict[str, Any]:
        """Store a new object, filling uid, resourceVersion and creationTimestamp."""
        with self.lock:
            key = key_of(obj)
            if not rt.namespaced:
                key = ("", key[1])
            table = self.objects[rt.plural]
            if key in table:
                raise already_exists(rt.plural, key[1], rt.group)
            meta = obj.setdefault("metadata", {})
            if not rt.namespaced:
                meta.pop("namespace", None)
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", now_rfc3339())
            if rt.custom or rt.group == "apps" or rt.plural == "poddisruptionbudgets":
                meta.setdefault("generation", 1)
            rv = self.next_rv()
            meta["resourceVersion"] = str(rv)
            obj.setdefault("apiVersion", rt.api_version)
            obj.setdefault("kind", rt.kind)
            table[key] = obj
            self._index(rt, key, None, obj)
            self._emit(rt, "ADDED", obj, None, rv, emit)
            return obj

    def replace(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """Store a new version of an existing object (bumps resourceVersion)."""
        with self.lock:
            key = key_of(obj)
            if not rt.namespaced:
                key = ("", key[1])
            table = self.objects[rt.plural]
            old = table.get(key)
            if old is None:
                raise not_found(rt.plural, key[1], rt.group)
            rv = self.next_rv()
            obj["metadata"]["resourceVersion"] = str(rv)
            table[key] = obj
            self._index(rt, key, old, obj)
            self._emit(rt, "MODIFIED", obj, old, rv, True)
            return obj

    def remove(self, rt: ResourceType, namespace: str, name: str) -> dict[str, Any] | None:
        with self.lock:
            key = (namespace if rt.namespaced else "", name)
            old = self.objects[rt.plural].pop(key, None)
            if old is None:
                return None
            rv = self.next_rv()
            gone = dict(old)
            gone["metadata"] = dict(old["metadata"], resourceVersion=str(rv))
            self._index(rt, key, old, None)
            self._emit(rt, "DELETED", gone, old, rv, True)
            return gone

    def bulk_load(self, items: Iterable[tuple[ResourceType, dict[str, Any]]]) -> int:
        """Create many objects without watch events, then mark history before now as compacted."""
        n = 0
        with self.lock:
            for rt, obj in items:
                self.create(rt, obj, emit=False)
                n += 1
            self.compacted_rv = self.rv
        return n

    # ---- indexes and events ------------------------------------------------------------------------------
    def _index(self, rt: ResourceType, key: Key, old: dict | None, new: dict | None) -> None:
        if rt.namespaced:
            idx = self.by_namespace[rt.plural]
            if old is None and new is not None:
                idx.setdefault(key[0], set()).add(key)
            elif new is None and old is not None:
                idx.get(key[0], set()).discard(key)
        if rt.plural == "pods":
            old_labels = ((old or {}).get("metadata") or {}).get("labels") or {}
            new_labels = ((new or {}).get("metadata") or {}).get("labels") or {} if new is not None else {}
            if old_labels is not new_labels and old_labels != new_labels:
                for k, v in old_labels.items():
                    self.pods_by_label.get((key[0], k, v), set()).discard(key)
                for k, v in new_labels.items():
                    self.pods_by_label.setdefault((key[0], k, v), set()).add(key)
            old_owner, new_owner = _owner_uid(old), _owner_uid(new)
            if old_owner != new_owner or new is None:
                if old_owner:
                    self.pods_by_owner.get(old_owner, set()).discard(key)
                if new_owner and new is not None:
                    self.pods_by_owner.setdefault(new_owner, set()).add(key)
            old_node = ((old or {}).get("spec") or {}).get("nodeName")
            new_node = ((new or {}).get("spec") or {}).get("nodeName")
            if old_node != new_node or new is None:
                if old_node:
                    self.pods_by_node.get(old_node, set()).discard(key)
                if new_node and new is not None:
                    self.pods_by_node.setdefault(new_node, set()).add(key)

    def _emit(self, rt: ResourceType, kind: str, obj: dict, old: dict | None, rv: int, log: bool) -> None:
        if log:
            ev = WatchEvent(rv, kind, rt, obj, old)
            if len(self.log) == self.log.maxlen:
                self.compacted_rv = max(self.compacted_rv, self.log[0].rv)
            self.log.append(ev)
            for w in self.watchers[rt.plural]:
                _deliver(w, ev)
        for listener in self.listeners:
            listener(rt, kind, old, obj if kind != "DELETED" else None)

    def add_watcher(self, w: Watcher) -> None:
        with self.lock:
            self.watchers[w.rtype.plural].append(w)

    def remove_watcher(self, w: Watcher) -> None:
        with self.lock, contextlib.suppress(ValueError):
            self.watchers[w.rtype.plural].remove(w)

    def events_since(self, rt: ResourceType, rv: int) -> list[WatchEvent] | None:
        """Logged events of `rt` after `rv`, or None when that history was compacted (410 Gone)."""
        with self.lock:
            if rv < self.compacted_rv:
                return None
            return [e for e in self.log if e.rv > rv and e.rtype is rt]


def _deliver(w: Watcher, ev: WatchEvent) -> None:
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is w.loop:
        w.queue.put_nowait(ev)
    else:
        w.loop.call_soon_threadsafe(w.queue.put_nowait, ev)


def _owner_uid(obj: dict[str, Any] | None) -> str | None:
    if obj is None:
        return None
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    for ref in refs:
        if ref.get("controller"):
            return ref.get("uid")
    return refs[0].get("uid") if refs else None
