"""The `Consolidatable` condition and `status.lastPodEventTime` (Karpenter's nodeclaim/disruption/
consolidation.go and nodeclaim/podevents; docs/karpenter-reference.md §7)."""

from __future__ import annotations

from datetime import datetime, timedelta

from api.nodeclaim import CONSOLIDATABLE, INITIALIZED
from api.timestamps import parse_time
from planning.lifecycle.conditions import (
    TRUE,
    Obj,
    conditions_of,
    is_true,
    transition_time,
    with_condition,
    without_condition,
)

POD_EVENT_DEDUPE = timedelta(seconds=10)  # podevents: no write when the last one is younger than this


def consolidatable_conditions(claim: Obj, consolidate_after: timedelta | None, static: bool,
                              now: datetime) -> tuple[list[Obj], datetime | None]:
    """(the claim's conditions with Consolidatable set or removed, when to look again).

    Removed for "Never", an uninitialized claim, or inside consolidateAfter since the last pod event (or the
    initialization); True otherwise (the boundary counts). Static pools' claims are left as they are."""
    conds = conditions_of(claim)
    if static:
        return conds, None
    if consolidate_after is None or not is_true(claim, INITIALIZED):
        return without_condition(conds, CONSOLIDATABLE), None
    since = parse_time((claim.get("status") or {}).get("lastPodEventTime")) or transition_time(claim, INITIALIZED)
    if since is not None and now - since < consolidate_after:
        return without_condition(conds, CONSOLIDATABLE), since + consolidate_after
    return with_condition(conds, CONSOLIDATABLE, TRUE, "Consolidatable", "", now), None


def pod_event_due(claim: Obj, now: datetime) -> bool:
    """Whether a pod event at `now` is written (the last write is older than the dedupe window)."""
    last = parse_time((claim.get("status") or {}).get("lastPodEventTime"))
    return last is None or now - last >= POD_EVENT_DEDUPE


def _bound(pod: Obj | None) -> str:
    return str(((pod or {}).get("spec") or {}).get("nodeName") or "")


def _terminal(pod: Obj | None) -> bool:
    return ((pod or {}).get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _terminating(pod: Obj | None) -> bool:
    return bool(((pod or {}).get("metadata") or {}).get("deletionTimestamp"))


def _daemon(pod: Obj) -> bool:
    return any(o.get("kind") == "DaemonSet" and o.get("controller")
               for o in (pod.get("metadata") or {}).get("ownerReferences") or [])


def pod_event_node(old: Obj | None, new: Obj | None) -> str | None:
    """The node whose lastPodEventTime a pod change moves: a pod that became bound, or a bound pod that
    became terminal or terminating (a pod seen for the first time bound counts too). DaemonSet pods never."""
    if new is None or not _bound(new) or _daemon(new):
        return None
    # terminal and terminating are separate transitions (podevents' predicate): a Succeeded pod being deleted counts
    if (not _bound(old) or (_terminal(new) and not _terminal(old))
            or (_terminating(new) and not _terminating(old))):
        return _bound(new)
    return None
