"""`nodeflow status NODE`'s advice is chosen by the node's typed state: the running workflow's kind and phase, else
a finished one, else the cluster."""

from __future__ import annotations

from typing import Any

import pytest

from starter.status_advice import ClusterNode, NodeState, advice, idle_state, running_state


def _term(phase: str, status: str = "RUNNING") -> dict[str, Any]:
    return {"kind": "Termination", "workflowId": "terminate-u1", "status": status, "phase": phase}


def _disr(phase: str, status: str = "RUNNING", cancel: bool = False) -> dict[str, Any]:
    return {"kind": "Disruption", "workflowId": "disrupt-u1", "status": status, "phase": phase,
            "cancelRequested": cancel}


@pytest.mark.parametrize(("rows", "state"), [
    ([_disr("WaitingReady")], NodeState.IN_DISRUPTION),
    ([_disr("Validating")], NodeState.IN_DISRUPTION),
    ([_disr("WaitingReady", cancel=True)], NodeState.DISRUPTION_ROLLING_BACK),
    ([_disr("RollingBack")], NodeState.DISRUPTION_ROLLING_BACK),
    ([_disr("Terminating")], NodeState.DISRUPTION_NO_RETURN),
    ([_disr("Terminating"), _term("Draining")], NodeState.TERMINATING),  # its termination is what to steer
    ([_term("TerminatingInstance")], NodeState.TERMINATING_INSTANCE),
    ([_term("Draining", status="COMPLETED")], None),
    ([], None),
])
def test_running_state(rows: list[dict[str, Any]], state: NodeState | None) -> None:
    assert running_state(rows) == state


def test_advice_names_the_command_for_the_state() -> None:
    in_disruption = advice("n1", NodeState.IN_DISRUPTION, _disr("WaitingReady"))
    assert "`nodeflow cancel n1` rolls it back" in in_disruption and "kubectl delete" not in in_disruption
    assert "can no longer be cancelled" in advice("n1", NodeState.DISRUPTION_NO_RETURN, _disr("Terminating"))
    terminating = advice("n1", NodeState.TERMINATING, _term("Draining"))
    assert "`nodeflow force n1 --reason TEXT`" in terminating and "`nodeflow cancel n1`" in terminating
    assert "nothing to force or cancel" in advice("n1", NodeState.TERMINATING_INSTANCE, _term("Finalizing"))
    finished = {**_term("Terminated", status="COMPLETED"), "closedAt": "2026-11-28T10:00:00+00:00"}
    assert advice("n1", NodeState.FINISHED, finished) == (
        "the termination of n1 finished (COMPLETED, phase Terminated, at 2026-11-28T10:00:00Z); "
        "`nodeflow status n1 --all` shows finished terminations and disruptions")
    assert advice("n1", NodeState.FINISHED, finished, all_shown=True) == \
        "the termination of n1 finished (COMPLETED, phase Terminated, at 2026-11-28T10:00:00Z)"
    assert "`kubectl delete node n1 --wait=false` starts its termination" in advice("n1", NodeState.IN_CLUSTER)
    assert "no termination runs for it" in advice("n1", NodeState.DELETING)
    assert advice("n1", NodeState.UNKNOWN) is None


@pytest.mark.parametrize(("finished", "cluster", "state"), [
    ({"kind": "Termination"}, ClusterNode.ABSENT, NodeState.FINISHED),
    ({"kind": "Disruption"}, ClusterNode.PRESENT, NodeState.FINISHED),
    (None, ClusterNode.PRESENT, NodeState.IN_CLUSTER),
    (None, ClusterNode.DELETING, NodeState.DELETING),
    (None, ClusterNode.ABSENT, NodeState.UNKNOWN),
    (None, ClusterNode.UNKNOWN, NodeState.UNKNOWN),
])
def test_idle_state(finished: dict[str, Any] | None, cluster: ClusterNode, state: NodeState) -> None:
    assert idle_state(finished, cluster) == state
