"""planning/lifecycle/conditions.py: operatorpkg's condition bookkeeping (docs/karpenter-reference.md
§2: dependents start Unknown at creationTimestamp; same-status updates keep lastTransitionTime)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from planning.lifecycle.conditions import (
    FALSE,
    TRUE,
    UNKNOWN,
    condition,
    is_true,
    same,
    status_of,
    transition_time,
    with_condition,
    without_condition,
)

CREATED = datetime(2026, 11, 27, 4, 0, 0, tzinfo=UTC)
NOW = CREATED + timedelta(minutes=3)


def claim(*conds: dict[str, str]) -> dict:
    return {"metadata": {"name": "c", "creationTimestamp": "2026-11-27T04:00:00Z"},
            "status": {"conditions": list(conds)}}


def cond(ctype: str, status: str, at: str = "2026-11-27T04:01:00Z", reason: str = "R") -> dict[str, str]:
    return {"type": ctype, "status": status, "reason": reason, "message": "", "lastTransitionTime": at}


def test_absent_condition_reads_unknown_since_creation() -> None:
    c = claim()
    assert status_of(c, "Launched") == UNKNOWN
    assert not is_true(c, "Launched")
    assert condition(c, "Launched") is None
    assert transition_time(c, "Launched") == CREATED


def test_claim_without_status_reads_unknown() -> None:
    c = {"metadata": {"name": "c", "creationTimestamp": "2026-11-27T04:00:00Z"}}
    assert status_of(c, "Registered") == UNKNOWN
    assert transition_time(c, "Registered") == CREATED


def test_present_condition_reports_its_status_and_transition() -> None:
    c = claim(cond("Launched", TRUE, "2026-11-27T04:01:30Z"))
    assert status_of(c, "Launched") == TRUE
    assert is_true(c, "Launched")
    assert transition_time(c, "Launched") == datetime(2026, 11, 27, 4, 1, 30, tzinfo=UTC)


def test_same_status_keeps_last_transition_time_even_when_reason_changes() -> None:
    before = [cond("Registered", UNKNOWN, "2026-11-27T04:00:00Z", reason="NodeNotFound")]
    after = with_condition(before, "Registered", UNKNOWN, "RegistrationHookPending", "hook", NOW)
    assert after == [{"type": "Registered", "status": UNKNOWN, "reason": "RegistrationHookPending",
                      "message": "hook", "lastTransitionTime": "2026-11-27T04:00:00Z"}]


def test_status_change_moves_last_transition_time_to_now() -> None:
    before = [cond("Registered", UNKNOWN, "2026-11-27T04:00:00Z")]
    after = with_condition(before, "Registered", TRUE, "Registered", "", NOW)
    assert after[0]["status"] == TRUE
    assert after[0]["lastTransitionTime"] == "2026-11-27T04:03:00Z"


def test_new_condition_is_appended_at_now_and_others_are_kept() -> None:
    launched = cond("Launched", TRUE)
    after = with_condition([launched], "Registered", FALSE, "MultipleNodesFound", "2 nodes", NOW)
    assert after[0] == launched
    assert after[1] == {"type": "Registered", "status": FALSE, "reason": "MultipleNodesFound",
                        "message": "2 nodes", "lastTransitionTime": "2026-11-27T04:03:00Z"}


def test_without_condition_drops_only_that_type() -> None:
    conds = [cond("Initialized", TRUE), cond("Consolidatable", TRUE)]
    assert without_condition(conds, "Consolidatable") == [conds[0]]
    assert without_condition(conds, "Drifted") == conds


def test_same_ignores_order_and_transition_times() -> None:
    a = [cond("Launched", TRUE, "2026-11-27T04:01:00Z"), cond("Registered", TRUE)]
    b = [cond("Registered", TRUE, "2026-11-27T05:00:00Z"), cond("Launched", TRUE)]
    assert same(a, b)
    assert not same(a, [cond("Launched", TRUE), cond("Registered", FALSE)])
    assert not same(a, [cond("Launched", TRUE)])
