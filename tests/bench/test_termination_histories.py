"""bench/termination_histories.py counts a TerminationWorkflow history by kind from real history events: a recorded
history (tests/histories) of the one-patch-marker path, whose kinds are known from its file."""

from __future__ import annotations

from pathlib import Path

from temporalio.client import WorkflowHistory

from bench.termination_histories import Histories

HISTORY = Path(__file__).resolve().parents[1] / "histories" / "TerminationWorkflow__one_patch_marker.json"


def _history() -> WorkflowHistory:
    return WorkflowHistory.from_json("one-patch-marker", HISTORY.read_text(encoding="utf-8"))


def test_kinds_add_up_to_the_history_and_name_its_parts() -> None:
    events = _history().events
    h = Histories()
    h.add(events, wall0=events[0].event_time.ToDatetime().timestamp() - 1.0)
    fig = h.figures()
    kinds = fig["historyEventsPerNodeByKind"]
    assert sum(kinds.values()) == len(events) == fig["historyEventsPerNode"]["max"]
    assert kinds["patchMarker"] == 1  # the one marker standing for every earlier patch
    assert kinds["activity"] == 3 * fig["activitiesPerNode"]["termination.drain"]
    assert "timer" not in kinds  # MinDrainTime is the drain activity's wait
    assert fig["workflowStartAfterDeleteSeconds"]["min"] == 1.0
    assert fig["firstDrainScheduledAfterDeleteSeconds"]["count"] == 1


def test_no_history_gives_empty_figures() -> None:
    fig = Histories().figures()
    assert fig["workflows"] == 0 and fig["historyEventsPerNode"]["mean"] is None
    assert fig["firstDrainScheduledAfterDeleteSeconds"] == {"count": 0}


def test_attempts_lost_before_the_recorded_one_are_counted() -> None:
    """A drain whose first two attempts timed out (no event of their own) starts as attempt 3: two lost."""
    events = _history().events
    h = Histories()
    h.add(events, wall0=0.0)
    assert h.figures()["activityAttemptsLost"] == {"termination.drain": 0}
    started = next(e for e in events if e.HasField("activity_task_started_event_attributes"))
    started.activity_task_started_event_attributes.attempt = 3
    h.add(events, wall0=0.0)
    assert h.figures()["activityAttemptsLost"] == {"termination.drain": 2}
