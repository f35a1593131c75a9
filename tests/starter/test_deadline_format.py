"""Deadlines print one way in every table and line: RFC 3339 in UTC to the second, as `until ...Z` already did;
the terminations' DEADLINE column and `rollout status`'s bake deadline printed Python's isoformat instead
(`2026-11-23T12:10:00.250000+00:00`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from types import SimpleNamespace

from starter.cmd_rollout import format_status
from starter.status_watch import row_cells
from starter.timefmt import rfc3339_utc

AT = datetime(2026, 11, 23, 12, 10, 0, 250000, tzinfo=UTC)


def test_one_format_for_any_time() -> None:
    assert rfc3339_utc(AT) == "2026-11-23T12:10:00Z"
    assert rfc3339_utc(AT.isoformat()) == "2026-11-23T12:10:00Z"
    assert rfc3339_utc(AT.astimezone(timezone(timedelta(hours=1)))) == "2026-11-23T12:10:00Z"
    assert rfc3339_utc("2026-11-23T12:10:00") == "2026-11-23T12:10:00Z"  # naive: UTC
    assert rfc3339_utc(None) is None and rfc3339_utc("") is None


def test_the_terminations_deadline_column() -> None:
    row = {"node": "general-01", "nodePool": "general", "reason": "Drifted", "phase": "Draining", "podsLeft": 1,
           "blockingPDBs": [], "age": "3m", "deadline": AT.isoformat()}
    assert row_cells(row)[-1] == "2026-11-23T12:10:00Z"
    assert row_cells(row | {"deadline": None})[-1] is None


def test_rollout_status_bake_deadline() -> None:
    status = SimpleNamespace(node_pool="general", phase=SimpleNamespace(value="Baking"), wave=1, waves=3, targets=4,
                             disrupted=1, failed_replacements=0, bake_until=AT, halted=None, message="")
    assert "baking until 2026-11-23T12:10:00Z" in format_status(status).splitlines()
