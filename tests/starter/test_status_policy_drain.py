"""`nodeflow status` while a drain.jobs Wait leaves Job pods to finish (docs/semantics.md §15.8)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from contracts.termination import WAITING_FOR_COMPLETION, PodState, TerminationPhase, TerminationProgress
from starter.cmd_status import _waiting, table
from starter.status_watch import blocking_cell, row_cells, stuck_drains

NOW = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)


def _progress(waiting: bool) -> TerminationProgress:
    pods = [PodState(namespace="batch", name=f"report-{i}", status=WAITING_FOR_COMPLETION, runs_to_completion=True,
                     started_at=NOW - timedelta(minutes=m)) for i, m in enumerate((14, 2))]
    return TerminationProgress(node_name="n1", phase=TerminationPhase.DRAINING, pods=pods,
                               completion_until=NOW + timedelta(hours=1) if waiting else None,
                               waiting="waiting for 2 Job pods" if waiting else None)


def _row(**kw: object) -> dict[str, object]:
    row = {"node": "n1", "nodePool": "batch", "reason": "Drifted", "phase": "Draining", "status": "RUNNING",
           "startedAt": (NOW - timedelta(minutes=15)).isoformat(), "age": "15m", "deadline": None, "podsLeft": 2,
           "blockingPDBs": [], "blocking": [], "waiting": None}
    return {**row, **kw}


def test_waiting_is_counted_on_the_cli_clock():
    got = _waiting(_progress(True), NOW)
    assert got == {"waiting": "waiting for 2 Job pods, longest running 14m, until 2026-11-27T10:00:00Z",
                   "completionUntil": "2026-11-27T10:00:00+00:00"}
    assert _waiting(_progress(False), NOW) == {"waiting": None, "completionUntil": None}


def test_the_blocking_column_says_what_the_drain_waits_for():
    row = _row(waiting="waiting for 2 Job pods, longest running 14m")
    assert blocking_cell(row) == "waiting for 2 Job pods, longest running 14m"
    assert blocking_cell(_row(blocking=["default/web"], waiting="waiting for 1 Job pod")) == \
        "default/web; waiting for 1 Job pod"
    assert blocking_cell(_row()) is None
    assert row_cells(row)[5] == blocking_cell(row)
    assert "waiting for 2 Job pods, longest running 14m" in table([row])


def test_a_drain_waiting_for_jobs_is_not_a_stuck_drain():
    assert stuck_drains([_row(waiting="waiting for 2 Job pods")], NOW, timedelta(minutes=2)) == []
