"""Watch parameters of the streaming-list kind: `sendInitialEvents` (the current state as ADDED events, then a
BOOKMARK annotated `k8s.io/initial-events-end`) with the API server's rules for the parameters around it."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from simulator.errors import invalid
from simulator.resources import ResourceType
from simulator.traffic import TRUE


def bookmark(rt: ResourceType, rv: int, initial_events_end: bool = False) -> dict[str, Any]:
    m: dict[str, Any] = {"resourceVersion": str(rv)}
    if initial_events_end:
        m["annotations"] = {"k8s.io/initial-events-end": "true"}
    return {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": m}


def initial_events(request: web.Request, bookmarks: bool, rt: ResourceType) -> bool | None:
    """`sendInitialEvents` (None when not given), with the API server's rules for the parameters around it."""
    raw = request.query.get("sendInitialEvents")
    match = request.query.get("resourceVersionMatch")
    if raw is None:
        if match:
            raise invalid(rt.kind, "", "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for "
                                       "watch unless sendInitialEvents is provided", rt.group)
        return None
    if match != "NotOlderThan":
        raise invalid(rt.kind, "", "resourceVersionMatch: Forbidden: sendInitialEvents requires setting "
                                   "resourceVersionMatch to NotOlderThan", rt.group)
    if not bookmarks:
        raise invalid(rt.kind, "", "allowWatchBookmarks: Forbidden: sendInitialEvents requires setting "
                                   "allowWatchBookmarks to true", rt.group)
    return raw in TRUE
