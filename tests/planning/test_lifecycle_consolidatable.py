"""planning/lifecycle/consolidatable.py against docs/karpenter-reference.md §7:
the Consolidatable condition, the 10 s lastPodEventTime dedupe, and which pod changes count as pod events."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from planning.lifecycle.conditions import condition
from planning.lifecycle.consolidatable import consolidatable_conditions, pod_event_due, pod_event_node

INITIALIZED_AT = datetime(2026, 11, 27, 4, 2, 0, tzinfo=UTC)
MIN5 = timedelta(minutes=5)


def claim(*, initialized: str | None = "True", last_pod_event: str | None = None,
          consolidatable: bool = False) -> dict[str, Any]:
    conds = [{"type": "Launched", "status": "True", "reason": "Launched", "message": "",
              "lastTransitionTime": "2026-11-27T04:00:10Z"}]
    if initialized is not None:
        conds.append({"type": "Initialized", "status": initialized, "reason": "Initialized", "message": "",
                      "lastTransitionTime": "2026-11-27T04:02:00Z"})
    if consolidatable:
        conds.append({"type": "Consolidatable", "status": "True", "reason": "Consolidatable", "message": "",
                      "lastTransitionTime": "2026-11-27T04:07:00Z"})
    status: dict[str, Any] = {"conditions": conds}
    if last_pod_event is not None:
        status["lastPodEventTime"] = last_pod_event
    return {"metadata": {"name": "c", "creationTimestamp": "2026-11-27T04:00:00Z"}, "status": status}


def consolidatable(conds: list[dict]) -> dict | None:
    return condition({"status": {"conditions": conds}}, "Consolidatable")


# --- Consolidatable --------------------------------------------------------------------------------------------

def test_never_removes_the_condition() -> None:
    conds, requeue = consolidatable_conditions(claim(consolidatable=True), None, False, INITIALIZED_AT + MIN5 * 10)
    assert consolidatable(conds) is None and requeue is None
    assert [c["type"] for c in conds] == ["Launched", "Initialized"]


@pytest.mark.parametrize("initialized", [None, "Unknown", "False"])
def test_uninitialized_removes_the_condition(initialized: str | None) -> None:
    conds, requeue = consolidatable_conditions(claim(initialized=initialized, consolidatable=True), timedelta(0),
                                               False, INITIALIZED_AT + MIN5 * 10)
    assert consolidatable(conds) is None and requeue is None


def test_inside_window_removes_and_requeues_at_its_end() -> None:
    conds, requeue = consolidatable_conditions(claim(consolidatable=True), MIN5, False,
                                               INITIALIZED_AT + timedelta(minutes=4, seconds=59))
    assert consolidatable(conds) is None
    assert requeue == INITIALIZED_AT + MIN5


def test_boundary_counts_as_consolidatable() -> None:
    now = INITIALIZED_AT + MIN5
    conds, requeue = consolidatable_conditions(claim(), MIN5, False, now)
    c = consolidatable(conds)
    assert c is not None and c["status"] == "True" and c["lastTransitionTime"] == "2026-11-27T04:07:00Z"
    assert requeue is None


def test_zero_is_consolidatable_as_soon_as_initialized() -> None:
    conds, requeue = consolidatable_conditions(claim(), timedelta(0), False, INITIALIZED_AT)
    c = consolidatable(conds)
    assert c is not None and c["status"] == "True" and requeue is None


def test_already_consolidatable_keeps_its_transition_time() -> None:
    conds, _ = consolidatable_conditions(claim(consolidatable=True), MIN5, False, INITIALIZED_AT + MIN5 * 3)
    c = consolidatable(conds)
    assert c is not None and c["lastTransitionTime"] == "2026-11-27T04:07:00Z"


def test_last_pod_event_time_replaces_the_initialized_time() -> None:
    c = claim(last_pod_event="2026-11-27T04:10:00Z", consolidatable=True)
    pod_event = datetime(2026, 11, 27, 4, 10, 0, tzinfo=UTC)
    # long after initialization, but a pod event 4 minutes ago: inside the window again
    conds, requeue = consolidatable_conditions(c, MIN5, False, pod_event + timedelta(minutes=4))
    assert consolidatable(conds) is None and requeue == pod_event + MIN5
    conds, requeue = consolidatable_conditions(c, MIN5, False, pod_event + MIN5)
    assert consolidatable(conds) is not None and requeue is None


def test_static_pool_claims_are_left_as_they_are() -> None:
    for c in (claim(consolidatable=True), claim(), claim(initialized=None, consolidatable=True)):
        conds, requeue = consolidatable_conditions(c, MIN5, True, INITIALIZED_AT + MIN5 * 10)
        assert conds == c["status"]["conditions"] and requeue is None
    conds, _ = consolidatable_conditions(claim(consolidatable=True), None, True, INITIALIZED_AT)
    assert consolidatable(conds) is not None


# --- lastPodEventTime dedupe -----------------------------------------------------------------------------------

def test_pod_event_due_without_a_previous_one() -> None:
    assert pod_event_due(claim(), INITIALIZED_AT)


@pytest.mark.parametrize("after,due", [(timedelta(seconds=9, microseconds=999999), False),
                                       (timedelta(seconds=10), True), (timedelta(minutes=1), True)])
def test_pod_event_dedupe_is_10_seconds(after: timedelta, due: bool) -> None:
    last = datetime(2026, 11, 27, 4, 10, 0, tzinfo=UTC)
    assert pod_event_due(claim(last_pod_event="2026-11-27T04:10:00Z"), last + after) is due


# --- which pod changes are pod events ------------------------------------------------------------------------

def pod(node: str = "", *, phase: str = "Running", deleting: bool = False, daemon: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "default"}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-27T04:10:00Z"
    if daemon:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": "u",
                                    "controller": True}]
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def test_pod_that_becomes_bound() -> None:
    assert pod_event_node(pod(phase="Pending"), pod("n1")) == "n1"


def test_pod_first_seen_bound() -> None:
    assert pod_event_node(None, pod("n1")) == "n1"


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_bound_pod_that_turns_terminal(phase: str) -> None:
    assert pod_event_node(pod("n1"), pod("n1", phase=phase)) == "n1"


def test_bound_pod_that_turns_terminating() -> None:
    assert pod_event_node(pod("n1"), pod("n1", deleting=True)) == "n1"


def test_terminal_pod_that_then_turns_terminating() -> None:
    """Karpenter's predicate checks terminal and terminating separately: a Succeeded pod being deleted is new."""
    assert pod_event_node(pod("n1", phase="Succeeded"), pod("n1", phase="Succeeded", deleting=True)) == "n1"


def test_terminating_pod_that_then_turns_terminal() -> None:
    assert pod_event_node(pod("n1", deleting=True), pod("n1", phase="Failed", deleting=True)) == "n1"


def test_daemonset_pods_are_ignored() -> None:
    assert pod_event_node(None, pod("n1", daemon=True)) is None
    assert pod_event_node(pod(daemon=True), pod("n1", daemon=True)) is None
    assert pod_event_node(pod("n1", daemon=True), pod("n1", daemon=True, phase="Succeeded")) is None


def test_unchanged_bound_pod_is_ignored() -> None:
    assert pod_event_node(pod("n1"), pod("n1")) is None
    assert pod_event_node(pod("n1", phase="Succeeded"), pod("n1", phase="Succeeded")) is None
    assert pod_event_node(pod("n1", deleting=True), pod("n1", deleting=True)) is None


def test_unbound_pod_is_ignored() -> None:
    assert pod_event_node(None, pod()) is None
    assert pod_event_node(pod(), pod(phase="Failed")) is None
    assert pod_event_node(pod(), pod(deleting=True)) is None


def test_deleted_pod_is_ignored() -> None:
    assert pod_event_node(pod("n1"), None) is None
