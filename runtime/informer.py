"""One kind's LIST + WATCH loop for the cluster cache (client-go's reflector, reduced to what nodeflow needs).

LIST once, then WATCH from that list's resourceVersion with bookmarks, applying ADDED/MODIFIED/DELETED to a
dict keyed by (namespace, name). The newest resourceVersion (from events and BOOKMARKs) is the resume
point, so a stream that ends or breaks reopens where it stopped instead of re-listing 72k pods; only a
`410 Gone` (the server no longer has that history) forces a re-LIST. Reads stay raw JSON
(`_preload_content=False`): deserialising pods into client models costs more than the planning pass.
The kubernetes client blocks, so each informer runs in its own thread; `stop()` ends it promptly by
shutting down the open stream's socket.
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kubernetes.client.rest import ApiException
from kubernetes.watch.watch import iter_resp_lines

from telemetry import metrics

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Key = tuple[str, str]  # (namespace or "", name)
GONE = 410


class State(StrEnum):
    STARTING = "Starting"  # never listed yet
    LISTING = "Listing"  # the first LIST is in flight (or being retried)
    WATCHING = "Watching"
    RESUMING = "Resuming"  # (re)opening the watch from the last resourceVersion
    RELISTING = "Relisting"  # 410 Gone: listing again
    BROKEN = "Broken"  # the last LIST or WATCH failed; retrying after a backoff
    STOPPED = "Stopped"


@dataclass
class CacheSettings:
    """Timeouts and backoff. Defaults suit a real API server; tests shrink them."""

    watch_timeout_seconds: int = 300  # the server ends each stream after this; we reopen it from our version
    connect_timeout_seconds: float = 10.0
    list_timeout_seconds: float = 120.0  # 72k pods take several seconds to LIST
    backoff_base_seconds: float = 0.5
    backoff_cap_seconds: float = 30.0
    min_stream_seconds: float = 1.0  # an empty stream shorter than this backs off (no hot loop on a bad server)
    # a LIST in pages of this many objects (client-go's reflector: 500), each trimmed before the next is read, so
    # 72k full pods are never decoded at once; the freed peak stayed in the worker's RSS (docs/benchmarks.md)
    list_page_size: int = 500


@dataclass
class Counters:
    lists: int = 0
    watches: int = 0  # streams opened
    watch_events: int = 0
    relists: int = 0
    bookmarks: int = 0
    errors: int = 0

    def __add__(self, other: Counters) -> Counters:
        return Counters(**{k: getattr(self, k) + getattr(other, k) for k in self.__dataclass_fields__})


@dataclass(frozen=True)
class KindSpec:
    """A kind to cache: its name and apiVersion (stamped on items, which LIST leaves without them) and the
    list method serving both LIST and WATCH (group/version/plural already bound for custom resources)."""

    kind: str
    api_version: str
    list_call: Callable[..., Any]
    optional: bool = False  # a 404 on LIST means "not served here" (CRD not installed): empty, and synced


@dataclass
class Backoff:
    """Exponential backoff with equal jitter (half fixed, half random) so that many workers that lost the
    API server at once do not all come back in the same instant."""

    base: float
    cap: float
    attempt: int = 0
    rng: random.Random = field(default_factory=random.Random)

    def next(self) -> float:
        delay = min(self.cap, self.base * 2 ** min(self.attempt, 30))
        self.attempt += 1
        return delay / 2 + self.rng.uniform(0, delay / 2)

    def reset(self) -> None:
        self.attempt = 0


class Gone(Exception):
    """The server no longer has the history after our resourceVersion: only a fresh LIST can continue."""


class WatchError(Exception):
    """An ERROR event other than 410 on the stream."""


def key_of(obj: Obj) -> Key:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


class Informer:
    """The objects of one kind, kept current by a LIST and then a WATCH, in a background thread.

    Stored objects are replaced, never modified, so a list returned by `objects()` stays valid; callers
    must treat the objects as read-only (they are shared with the cache).
    """

    def __init__(self, spec: KindSpec, settings: CacheSettings | None = None,
                 transform: Callable[[str, Obj], Obj] | None = None) -> None:
        self.spec = spec
        self.settings = settings or CacheSettings()
        self.transform = transform
        self.counters = Counters()
        self.state = State.STARTING
        self.resource_version = ""
        self.listed = False  # latched: a LIST has succeeded once
        self.watched = False  # latched: a watch stream has been opened once
        self.last_error = ""
        self._items: dict[Key, Obj] = {}
        self._need_list = True
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._resp: Any = None
        self._backoff = Backoff(self.settings.backoff_base_seconds, self.settings.backoff_cap_seconds)
        self._thread: threading.Thread | None = None
        # Called from the informer's thread after each watch event as (kind, old, new), and after each LIST as
        # (kind, None, None): a controller that keeps its own marks (runtime/nodeclaim_lifecycle.py) must not block.
        self.listeners: list[Callable[[str, Obj | None, Obj | None], None]] = []

    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def synced(self) -> bool:
        """Listed once and the watch opened once (like client-go's HasSynced it never goes back)."""
        return self.listed and self.watched

    def objects(self) -> list[Obj]:
        with self._lock:
            return list(self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: Key) -> Obj | None:
        with self._lock:
            return self._items.get(key)

    def _notify(self, old: Obj | None, new: Obj | None) -> None:
        for listener in list(self.listeners):
            try:
                listener(self.spec.kind, old, new)
            except Exception:
                log.exception("%s informer: a listener failed", self.kind)

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError(f"the {self.kind} informer was already started")
        self._thread = threading.Thread(target=self._run, name=f"informer-{self.kind}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Ask the loop to end, break its open stream, and wait up to `timeout` seconds for the thread."""
        self.request_stop()
        self.join(timeout)

    def request_stop(self) -> None:
        self._stopping.set()
        self.reconnect()

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning("the %s informer did not stop within %.1fs", self.kind, timeout)

    def reconnect(self) -> None:
        """Drop the open watch connection (as a network failure would); the loop resumes from the last
        resourceVersion. Used by stop(), and to force a fresh connection after a network change."""
        resp = self._resp
        sock = getattr(getattr(resp, "connection", None), "sock", None)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    # ---- the loop --------------------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                if self._need_list:
                    self._list()
                self._watch()
            except Gone as exc:
                if self._stopping.is_set():
                    break
                log.info("%s watch expired (%s); re-listing", self.kind, exc)
                self.state = State.RELISTING
                self._need_list = True
                self._bump("relists")
            except Exception as exc:
                if self._stopping.is_set():
                    break
                if self.spec.optional and isinstance(exc, ApiException) and exc.status == 404:
                    self._absent()
                    continue
                self._failed(exc)
        self.state = State.STOPPED

    def _absent(self) -> None:
        """The server does not serve this optional kind: hold nothing, count as synced (a pass must not wait
        on a CRD that is not installed), and LIST again after one watch timeout in case it is installed."""
        with self._lock:
            self._items = {}
        self.listed = self.watched = True
        self._need_list = True
        self.state = State.WATCHING
        metrics.CLUSTER_CACHE_OBJECTS.labels(kind=self.kind).set(0)
        self._stopping.wait(self.settings.watch_timeout_seconds)

    def _failed(self, exc: Exception) -> None:
        """Say what is wrong (the data is stale while a re-list is owed), count the error, and back off."""
        self.last_error = f"HTTP {exc.status} {exc.reason}" if isinstance(exc, ApiException) \
            else f"{type(exc).__name__}: {exc}"
        if not self.listed:
            self.state = State.LISTING
        else:
            self.state = State.RELISTING if self._need_list else State.BROKEN
        self._bump("errors")  # after the state, so whoever sees the count also sees why
        delay = self._backoff.next()
        log.warning("%s informer: %s; retrying in %.2fs", self.kind, self.last_error, delay)
        self._stopping.wait(delay)

    def _list(self) -> None:
        if not self.listed:
            self.state = State.LISTING
        items: dict[Key, Obj] = {}
        token, version = "", ""
        while True:
            body = self._list_page(token)
            for obj in body.pop("items", None) or ():
                obj["apiVersion"], obj["kind"] = self.spec.api_version, self.spec.kind
                items[key_of(obj)] = self.transform(self.spec.kind, obj) if self.transform else obj
            meta = body.get("metadata") or {}
            # the watch resumes from the first page's version: an API server gives every page the first one's
            # snapshot, and where pages are not one snapshot, changes made meanwhile come again rather than never
            version = version or str(meta.get("resourceVersion") or "")
            token = meta.get("continue") or ""
            if not token:
                break
        with self._lock:
            self._items = items
            self.resource_version = version
        self.listed = True
        self._need_list = False
        self.state = State.RESUMING  # fresh data; the watch opens next
        self._notify(None, None)
        self._bump("lists")
        metrics.CLUSTER_CACHE_OBJECTS.labels(kind=self.kind).set(len(items))
        self._backoff.reset()

    def _list_page(self, token: str) -> Obj:
        """One page of the LIST; every page after the first continues the first one's snapshot (an expired
        token fails the LIST, which is retried from the start as any failed LIST is)."""
        paging: dict[str, Any] = {"limit": self.settings.list_page_size} if self.settings.list_page_size else {}
        if token:
            paging["_continue"] = token
        resp = self.spec.list_call(_preload_content=False, _request_timeout=(
            self.settings.connect_timeout_seconds, self.settings.list_timeout_seconds), **paging)
        return json.loads(resp.data or b"{}")  # type: ignore[no-any-return]

    def _open_stream(self) -> Any:
        """A watch from our resourceVersion. Its timeout is drawn from [t, 2t), as client-go's reflector does,
        so the streams of many kinds and workers do not all end and reopen together. Bookmarks are asked for
        as "true": the client would send a Python bool as "True", which not every server parses."""
        timeout = int(self.settings.watch_timeout_seconds * (1 + self._backoff.rng.random()))
        try:
            return self.spec.list_call(
                watch=True, resource_version=self.resource_version, allow_watch_bookmarks="true",
                timeout_seconds=timeout, _preload_content=False,
                _request_timeout=(self.settings.connect_timeout_seconds, timeout + 30))
        except ApiException as exc:
            if exc.status == GONE:
                raise Gone(exc.reason) from exc
            raise

    def _watch(self) -> None:
        """One stream: until the server ends it (back to the caller to reopen) or it breaks (raises)."""
        resp = self._open_stream()
        self._resp = resp
        if self._stopping.is_set():  # stop() came while the stream opened: it could not break it
            _close(resp)
            return
        self.counters.watches += 1
        self.watched = True
        self.state = State.WATCHING
        started, delivered = time.monotonic(), False
        try:
            for line in iter_resp_lines(resp):
                if self._stopping.is_set():
                    return
                if line.strip():
                    self._apply(json.loads(line))
                    if not delivered:
                        delivered = True
                        self._backoff.reset()
        finally:
            self._resp = None
            _close(resp)
        self.state = State.RESUMING
        if not delivered and time.monotonic() - started < self.settings.min_stream_seconds:
            self._stopping.wait(self._backoff.next())

    def _apply(self, event: Obj) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == GONE:
                raise Gone(obj.get("message") or "resource version too old")
            raise WatchError(f"{obj.get('code')} {obj.get('reason')}: {obj.get('message')}")
        rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        if kind == "BOOKMARK":
            self._bump("bookmarks")
            if rv:
                self.resource_version = rv
            return
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            log.warning("%s watch: ignoring an event of type %r", self.kind, kind)
            return
        obj["apiVersion"], obj["kind"] = self.spec.api_version, self.spec.kind
        key = key_of(obj)
        if kind != "DELETED" and self.transform is not None:
            obj = self.transform(self.spec.kind, obj)
        with self._lock:
            old = self._items.get(key)
            if kind == "DELETED":
                self._items.pop(key, None)
            else:
                self._items[key] = obj
            if rv:
                self.resource_version = rv
        if self.listeners:
            self._notify(old, None if kind == "DELETED" else obj)
        self.counters.watch_events += 1
        metrics.CLUSTER_CACHE_WATCH_EVENTS.labels(kind=self.kind, type=kind).inc()
        metrics.CLUSTER_CACHE_OBJECTS.labels(kind=self.kind).set(len(self._items))

    def _bump(self, counter: str) -> None:
        setattr(self.counters, counter, getattr(self.counters, counter) + 1)
        metric = {"lists": metrics.CLUSTER_CACHE_LISTS, "relists": metrics.CLUSTER_CACHE_RELISTS,
                  "bookmarks": metrics.CLUSTER_CACHE_BOOKMARKS, "errors": metrics.CLUSTER_CACHE_ERRORS}[counter]
        metric.labels(kind=self.kind).inc()


def _close(resp: Any) -> None:
    """Close a stream's connection (never returned to the pool: it may be half-read or broken)."""
    with contextlib.suppress(Exception):
        resp.close()
    with contextlib.suppress(Exception):
        resp.release_conn()
