"""Status conditions the way Karpenter's operatorpkg keeps them: a condition that keeps its status keeps its
lastTransitionTime; a condition that is absent reads as Unknown (docs/karpenter-reference.md §2)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from api.timestamps import format_seconds, parse_time

Obj = dict[str, Any]
TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"


def conditions_of(obj: Mapping[str, Any]) -> list[Obj]:
    return list(((obj.get("status") or {}).get("conditions")) or [])


def condition(obj: Mapping[str, Any], ctype: str) -> Obj | None:
    return next((c for c in conditions_of(obj) if c.get("type") == ctype), None)


def status_of(obj: Mapping[str, Any], ctype: str) -> str:
    """"True", "False" or "Unknown" (an absent condition is Unknown)."""
    c = condition(obj, ctype)
    return str(c.get("status") or UNKNOWN) if c else UNKNOWN


def is_true(obj: Mapping[str, Any], ctype: str) -> bool:
    return status_of(obj, ctype) == TRUE


def transition_time(obj: Mapping[str, Any], ctype: str) -> datetime | None:
    """When the condition last changed status; for an absent one, the object's creation (operatorpkg starts
    dependent conditions Unknown at creationTimestamp)."""
    c = condition(obj, ctype)
    if c is not None and c.get("lastTransitionTime"):
        return parse_time(c["lastTransitionTime"])
    return parse_time((obj.get("metadata") or {}).get("creationTimestamp"))


def with_condition(conds: Sequence[Obj], ctype: str, status: str, reason: str, message: str,
                   now: datetime) -> list[Obj]:
    """`conds` with `ctype` set; lastTransitionTime moves only when the status changes."""
    out: list[Obj] = []
    found = False
    for c in conds:
        if c.get("type") != ctype:
            out.append(c)
            continue
        found = True
        stamp = c.get("lastTransitionTime") if c.get("status") == status else format_seconds(now)
        out.append({"type": ctype, "status": status, "reason": reason, "message": message,
                    "lastTransitionTime": stamp or format_seconds(now)})
    if not found:
        out.append({"type": ctype, "status": status, "reason": reason, "message": message,
                    "lastTransitionTime": format_seconds(now)})
    return out


def without_condition(conds: Sequence[Obj], ctype: str) -> list[Obj]:
    return [c for c in conds if c.get("type") != ctype]


def same(a: Sequence[Obj], b: Sequence[Obj]) -> bool:
    """Equal as sets of (type, status, reason, message): what a patch would change."""
    def key(cs: Sequence[Obj]) -> set[tuple[Any, ...]]:
        return {(c.get("type"), c.get("status"), c.get("reason", ""), c.get("message", "")) for c in cs}
    return key(a) == key(b)
