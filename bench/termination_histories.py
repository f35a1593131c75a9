"""What the TerminationWorkflow histories of a termination benchmark say: their size and where it goes (events by
kind: workflow tasks, activities by name, local activities, patch markers, search-attribute upserts, timers,
signals), retried activities, attempts lost before the one that completed (a heartbeat timeout ends an attempt without
an event; the started event's attempt number tells), how soon after the DELETE each workflow and its first drain
started, and how long each activity took from scheduling to completion. Pure over history events, so it is
unit-tested without servers."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent

# Event kinds a termination's history is made of; each activity is 3 events, each timer 2, each workflow task 3.
_KIND_OF = {
    EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED: "workflowTask",
    EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED: "workflowTask",
    EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED: "workflowTask",
    EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT: "workflowTaskTimedOut",
    EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED: "workflowTaskFailed",
    EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: "activity",
    EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED: "activity",
    EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED: "activity",
    EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED: "activity",
    EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT: "activity",
    EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED: "activity",
    EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED: "activity",
    EventType.EVENT_TYPE_TIMER_STARTED: "timer",
    EventType.EVENT_TYPE_TIMER_FIRED: "timer",
    EventType.EVENT_TYPE_TIMER_CANCELED: "timer",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED: "signal",
    EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES: "upsert",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED: "startAndEnd",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED: "startAndEnd",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED: "update",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED: "update",
}


def _kind(event: HistoryEvent) -> str:
    if event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED:
        name = event.marker_recorded_event_attributes.marker_name
        return {"core_patch": "patchMarker", "core_local_activity": "localActivity"}.get(name, f"marker:{name}")
    return _KIND_OF.get(event.event_type, EventType.Name(event.event_type))


def _ts(event: HistoryEvent) -> float:
    return event.event_time.ToDatetime().timestamp()


@dataclass
class Histories:
    """Figures summed over every TerminationWorkflow history of one run."""

    events: list[int] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)
    activities: Counter[str] = field(default_factory=Counter)
    retried: int = 0
    starts: list[float] = field(default_factory=list)
    first_drains: list[float] = field(default_factory=list)
    activity_seconds: dict[str, list[float]] = field(default_factory=dict)
    attempts_lost: Counter[str] = field(default_factory=Counter)  # by activity: attempts before the recorded one

    def add(self, events: Iterable[HistoryEvent], wall0: float) -> None:
        """One history; `wall0` is the wall-clock instant of the DELETE."""
        events = list(events)
        self.events.append(len(events))
        self.kinds.update(_kind(e) for e in events)
        self.retried += any(e.HasField("activity_task_failed_event_attributes") for e in events)
        if events:
            self.starts.append(_ts(events[0]) - wall0)
        scheduled: dict[int, tuple[str, float]] = {}
        drain_seen = False
        for e in events:
            if e.HasField("activity_task_scheduled_event_attributes"):
                name = e.activity_task_scheduled_event_attributes.activity_type.name
                scheduled[e.event_id] = (name, _ts(e))
                self.activities[name] += 1
                if name == "termination.drain" and not drain_seen:
                    drain_seen = True
                    self.first_drains.append(_ts(e) - wall0)
            elif e.HasField("activity_task_started_event_attributes"):
                name = scheduled[e.activity_task_started_event_attributes.scheduled_event_id][0]
                self.attempts_lost[name] += max(0, e.activity_task_started_event_attributes.attempt - 1)
            elif e.HasField("activity_task_completed_event_attributes"):
                name, at = scheduled[e.activity_task_completed_event_attributes.scheduled_event_id]
                self.activity_seconds.setdefault(name, []).append(_ts(e) - at)

    def figures(self) -> dict[str, Any]:
        n = len(self.events) or 1
        return {
            "workflows": len(self.events),
            "historyEventsPerNode": {"mean": round(statistics.mean(self.events), 1) if self.events else None,
                                     "max": max(self.events, default=None)},
            "historyEventsPerNodeByKind": {k: round(v / n, 2) for k, v in self.kinds.most_common()},
            "activitiesPerNode": {k: round(v / n, 2) for k, v in self.activities.most_common()},
            "workflowsWithRetriedActivities": self.retried,
            "activityAttemptsLost": dict(self.attempts_lost.most_common()),
            "workflowStartAfterDeleteSeconds": _spread(self.starts),
            "firstDrainScheduledAfterDeleteSeconds": _spread(self.first_drains),
            "activityMeanSeconds": {k: round(statistics.mean(v), 2) for k, v in sorted(self.activity_seconds.items())},
        }


def _spread(values: list[float]) -> dict[str, float | int]:
    if not values:
        return {"count": 0}
    ordered = sorted(values)
    return {"count": len(ordered), "min": round(ordered[0], 2),
            "p50": round(ordered[len(ordered) // 2], 2), "max": round(ordered[-1], 2)}
