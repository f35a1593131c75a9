"""Karpenter's root condition `Ready` of a NodeClaim (planning/nodeclaim_conditions.with_ready), as operatorpkg's
condition set recomputes it over Launched, Registered and Initialized (awslabs/operatorpkg status/condition_set.go
at the commit docs/karpenter-reference.md §1 names): what kubectl's READY column of `kubectl get nodeclaims` shows."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from planning.lifecycle.conditions import condition
from planning.lifecycle.disruption_conditions import with_ready

CREATED = datetime(2026, 11, 27, 4, 0, 0, tzinfo=UTC)
NOW = datetime(2026, 11, 27, 5, 0, 0, tzinfo=UTC)


def cond(ctype: str, status: str, at: str = "2026-11-27T04:00:10Z", reason: str = "") -> dict[str, Any]:
    return {"type": ctype, "status": status, "reason": reason or ctype, "message": "", "lastTransitionTime": at}


def ready(conds: list[dict[str, Any]]) -> dict[str, Any]:
    got = condition({"status": {"conditions": with_ready(conds, CREATED, NOW)}}, "Ready")
    assert got is not None
    return got


def test_all_three_true_make_ready_true() -> None:
    got = ready([cond("Launched", "True"), cond("Registered", "True"), cond("Initialized", "True")])
    assert (got["status"], got["reason"], got["message"]) == ("True", "Ready", "")
    assert got["lastTransitionTime"] == "2026-11-27T05:00:00Z"


def test_an_adopted_claim_keeps_its_other_conditions() -> None:
    conds = [cond("Launched", "True"), cond("Registered", "True"), cond("Initialized", "True"),
             cond("Consolidatable", "True"), cond("Drifted", "True", reason="NodePoolDrifted")]
    out = with_ready(conds, CREATED, NOW)
    assert out[:5] == conds and [c["type"] for c in out] == [*(c["type"] for c in conds), "Ready"]


def test_launched_only_is_unknown_reconciling_the_absent_dependents() -> None:
    got = ready([cond("Launched", "True")])
    assert (got["status"], got["reason"]) == ("Unknown", "ReconcilingDependents")
    assert got["message"] == "Registered=Unknown, Initialized=Unknown"


def test_the_latest_to_change_comes_first() -> None:
    got = ready([cond("Launched", "True"), cond("Registered", "True"),
                 cond("Initialized", "Unknown", at="2026-11-27T04:30:00Z", reason="NodeNotReady")])
    assert (got["status"], got["reason"], got["message"]) == ("Unknown", "ReconcilingDependents",
                                                             "Initialized=Unknown")
    got = ready([cond("Launched", "True"), cond("Registered", "Unknown", at="2026-11-27T04:10:00Z"),
                 cond("Initialized", "Unknown", at="2026-11-27T04:20:00Z")])
    assert got["message"] == "Initialized=Unknown, Registered=Unknown"


def test_a_false_dependent_makes_ready_false() -> None:
    got = ready([cond("Launched", "True"), cond("Registered", "False", reason="MultipleNodesFound")])
    assert (got["status"], got["reason"]) == ("False", "UnhealthyDependents")
    assert got["message"] == "Registered=False, Initialized=Unknown"


def test_ready_keeps_its_transition_time_while_its_status_holds() -> None:
    before = [cond("Launched", "True"), cond("Registered", "True"), cond("Initialized", "True"),
              cond("Ready", "True", at="2026-11-27T04:01:00Z", reason="Ready")]
    assert ready(before)["lastTransitionTime"] == "2026-11-27T04:01:00Z"
    # a dependent leaving True moves it
    later = [c if c["type"] != "Initialized" else cond("Initialized", "Unknown") for c in before]
    assert ready(later)["lastTransitionTime"] == "2026-11-27T05:00:00Z"
