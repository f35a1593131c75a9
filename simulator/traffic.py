"""Requests and response bytes per Kubernetes verb (list, watch, get, create, update, patch, delete, ...), as
/sim/stats reports them: a benchmark reads the difference across a planner pass to show what the pass cost
the API server (e.g. a pass on the watch cache makes no LIST)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

TRUE = ("true", "1", "True")  # the Python client sends a bool as "True"
WRITES = {"POST": "create", "PUT": "update", "PATCH": "patch"}


def verb_of(method: str, path: str, query: Mapping[str, str]) -> str:
    """The RBAC verb of an API request ("discovery" for /api and group documents, "other" outside the API)."""
    segs = [s for s in path.split("/") if s]
    if not segs or segs[0] not in ("api", "apis"):
        return "other"
    rest = segs[2:] if segs[0] == "api" else segs[3:]
    if not rest:
        return "discovery"
    watch = rest[0] == "watch" or query.get("watch") in TRUE
    if rest[0] == "watch":
        rest = rest[1:]
    if len(rest) > 2 and rest[0] == "namespaces":
        rest = rest[2:]
    named = len(rest) > 1
    if method == "GET":
        return "watch" if watch else ("get" if named else "list")
    if method == "DELETE":
        return "delete" if named else "deletecollection"
    return WRITES.get(method, method.lower())


class Traffic:
    """Counters shared by the server's handlers (one event loop) and readers of /sim/stats (any thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: dict[str, int] = {}
        self._bytes: dict[str, int] = {}

    def request(self, verb: str) -> None:
        with self._lock:
            self._requests[verb] = self._requests.get(verb, 0) + 1

    def sent(self, verb: str, nbytes: int) -> None:
        with self._lock:
            self._bytes[verb] = self._bytes.get(verb, 0) + nbytes

    def stats(self) -> dict[str, Any]:
        """{verb: {"requests": n, "bytes": response body bytes}} (watch bytes count as each event is written)."""
        with self._lock:
            verbs = sorted(self._requests.keys() | self._bytes.keys())
            return {v: {"requests": self._requests.get(v, 0), "bytes": self._bytes.get(v, 0)} for v in verbs}
