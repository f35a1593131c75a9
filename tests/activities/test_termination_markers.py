"""Pure pieces of activities/termination_markers.py: the timestamp and the Drained condition."""

from __future__ import annotations

from datetime import UTC, datetime

from activities.termination_markers import termination_timestamp, with_drained
from contracts.termination import DrainedStatus

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def test_timestamp_is_deletion_plus_grace_and_needs_a_grace() -> None:
    claim = {"metadata": {"deletionTimestamp": "2026-01-01T10:00:00Z"}, "spec": {"terminationGracePeriod": "1h"}}
    assert termination_timestamp(claim, NOW) == "2026-01-01T11:00:00Z"
    assert termination_timestamp({"metadata": {}, "spec": {"terminationGracePeriod": "30s"}}, NOW) == \
        "2026-01-01T12:00:30Z"
    assert termination_timestamp({"metadata": {}, "spec": {}}, NOW) is None


def test_drained_condition_is_upserted_once() -> None:
    ready = {"type": "Ready", "status": "True"}
    draining = with_drained([ready], DrainedStatus.DRAINING, NOW)
    assert draining is not None and draining[0] == ready
    assert draining[1]["status"] == "Unknown" and draining[1]["reason"] == "Draining"
    assert with_drained(draining, DrainedStatus.DRAINING, NOW) is None
    done = with_drained(draining, DrainedStatus.DRAINED, NOW)
    assert done is not None and [c["status"] for c in done if c["type"] == "Drained"] == ["True"]
