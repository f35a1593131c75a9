"""Rewrite a recorded history as if a workflow task had ended right after a local activity's marker.

Under load (or when a query arrives as a local activity finishes), the server records the activity's marker
in one workflow task and the code that follows it runs in the next one (docs/decisions.md §18). This makes
that history from any recorded one, so replay tests can check the split without a loaded machine.
"""

from __future__ import annotations

import copy
from typing import Any

LA_MARKER = "core_local_activity"
_ID_FIELDS = frozenset({"scheduledEventId", "startedEventId", "workflowTaskCompletedEventId", "acceptedEventId",
                        "initiatedEventId", "latestCancelRequestedEventId", "eventId"})


def local_activity_markers(history: dict[str, Any]) -> int:
    return sum(1 for e in history["events"] if _is_la_marker(e))


def split_after_local_activity(history: dict[str, Any], nth: int = 0) -> dict[str, Any]:
    """A copy of `history` with an empty workflow task (scheduled, started, completed) after the nth local
    activity marker; every event id and every reference to one is renumbered."""
    events = copy.deepcopy(history["events"])
    at = [i for i, e in enumerate(events) if _is_la_marker(e)][nth]
    task = _empty_task(events, at)
    renumber = {int(e["eventId"]): n + (1 if n <= at else len(task) + 1) for n, e in enumerate(events)}
    for e in events:
        _rewrite_ids(e, renumber)
    first_new = at + 2
    task[0]["eventId"], task[1]["eventId"], task[2]["eventId"] = (str(first_new + k) for k in range(3))
    task[1]["workflowTaskStartedEventAttributes"]["scheduledEventId"] = str(first_new)
    done = task[2]["workflowTaskCompletedEventAttributes"]
    done.update(scheduledEventId=str(first_new), startedEventId=str(first_new + 1))
    done.pop("sdkMetadata", None)
    return {**history, "events": events[:at + 1] + task + events[at + 1:]}


def _is_la_marker(event: dict[str, Any]) -> bool:
    return (event.get("markerRecordedEventAttributes") or {}).get("markerName") == LA_MARKER


def _empty_task(events: list[dict[str, Any]], before: int) -> list[dict[str, Any]]:
    """Copies of the last workflow task's scheduled / started / completed events before index `before`."""
    def last(kind: str) -> dict[str, Any]:
        return copy.deepcopy(next(e for e in reversed(events[:before]) if e["eventType"] == f"EVENT_TYPE_{kind}"))
    return [last("WORKFLOW_TASK_SCHEDULED"), last("WORKFLOW_TASK_STARTED"), last("WORKFLOW_TASK_COMPLETED")]


def _rewrite_ids(node: Any, renumber: dict[int, int]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _ID_FIELDS and isinstance(value, str) and value.isdigit():
                node[key] = str(renumber.get(int(value), int(value)))
            else:
                _rewrite_ids(value, renumber)
    elif isinstance(node, list):
        for item in node:
            _rewrite_ids(item, renumber)
