"""The pieces of `nodeflow status --watch` that need no server: stuck drains, the header, the terminal redraw and
the line log for pipes."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from starter.cli import run
from starter.status_watch import LineLog, TerminalScreen, header, stuck_drains, table_lines

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def _row(node: str, phase: str, minutes: float, blocking: list[str], pods: int = 1) -> dict[str, Any]:
    return {"node": node, "nodePool": "general", "reason": "Drifted", "phase": phase, "status": "RUNNING",
            "workflowId": f"terminate-{node}", "startedAt": (NOW - timedelta(minutes=minutes)).isoformat(),
            "age": f"{int(minutes)}m", "deadline": None, "podsLeft": pods, "blockingPDBs": [], "blocking": blocking}


def test_stuck_drains_are_blocked_drains_past_the_threshold_oldest_first() -> None:
    rows = [_row("a", "Draining", 3, ["default/web"]), _row("b", "Draining", 9, ["do-not-disrupt: default/ledger-0"]),
            _row("c", "Draining", 30, []), _row("d", "Terminating", 30, ["default/web"]),
            _row("e", "Draining", 1, ["default/web"])]
    stuck = stuck_drains(rows, NOW, timedelta(minutes=2))
    assert [(s["node"], s["age"], s["blocking"]) for s in stuck] == [
        ("b", "9m", ["do-not-disrupt: default/ledger-0"]), ("a", "3m", ["default/web"])]


def test_header_names_cluster_planner_and_stuck_drains() -> None:
    stuck = [{"node": "general-01", "age": "5m", "blocking": ["do-not-disrupt: default/ledger-0"], "seconds": 300}]
    lines = header("12:00:00 UTC", "127.0.0.1:7233/default", "KUBECONFIG: /k (from $KUBECONFIG; server http://x)",
                   "planner: PAUSED (maintenance): voluntary disruption is stopped", stuck, "2m")
    assert lines[1].startswith("KUBECONFIG: /k") and lines[2].startswith("planner: PAUSED")
    assert lines[3] == "stuck drains (blocked, running 2m or more): 1"
    assert lines[4].split() == ["general-01", "5m", "blocked", "by", "do-not-disrupt:", "default/ledger-0"]


def test_terminal_screen_redraws_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LINES", "8")
    monkeypatch.setenv("COLUMNS", "60")
    out = io.StringIO()
    screen = TerminalScreen(out)
    screen.show(["h1", "h2"], [f"row {i}" for i in range(10)])
    screen.show(["h1", "h2"], ["row x"])
    screen.close()
    text = out.getvalue()
    assert text.startswith("\x1b[?1049h\x1b[H") and text.endswith("\x1b[?1049l")
    first, second = text.split("\x1b[J")[:2]
    assert "row 2\x1b[K\n... 7 more" in first  # 8 lines: 2 header, a gap, 3 rows, a note, the cursor
    assert second.startswith("\x1b[Hh1\x1b[K\nh2\x1b[K\n\x1b[K\nrow x\x1b[K\n")


def test_line_log_prints_only_changes() -> None:
    out = io.StringIO()
    log = LineLog(out)
    a = _row("a", "Draining", 3, ["default/web"], pods=2)
    stuck = [{"node": "a", "age": "3m", "blocking": ["default/web"], "seconds": 180}]
    log.show("KUBECONFIG: /k", "planner: running", stuck, [a], {})
    log.show("KUBECONFIG: /k", "planner: running", stuck, [{**a, "age": "4m"}], {})  # only the age moved
    log.show("KUBECONFIG: /k", "planner: PAUSED", [], [{**a, "podsLeft": 1}], {})
    log.show("KUBECONFIG: /k", "planner: PAUSED", [], [], {"terminate-a": "COMPLETED"})
    lines = out.getvalue().splitlines()
    assert lines[:3] == ["KUBECONFIG: /k", "planner: running", "stuck drain: a running 3m, blocked by default/web"]
    assert lines[3].split()[:3] == ["NODE", "NODEPOOL", "REASON"]
    assert lines[4].split()[:5] == ["a", "general", "Drifted", "Draining", "2"]
    assert lines[5] == "planner: PAUSED"
    assert lines[6].split()[:5] == ["a", "general", "Drifted", "Draining", "1"]
    assert lines[7].split() == ["a", "general", "Drifted", "COMPLETED", "<none>", "<none>", "<none>", "<none>"]
    assert len(lines) == 8


@pytest.mark.parametrize(("argv", "message"), [
    (["-o", "json"], "--watch shows a table"), (["--interval", "0"], "--interval must be positive"),
    (["--stuck-after", "soon"], "--stuck-after")])
def test_watch_flag_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["status", "--watch", *argv]) == 2
    assert message in capsys.readouterr().err


def test_line_log_says_nothing_while_nothing_changes() -> None:
    """Piped, an idle watch writes its kubeconfig line once, not on every refresh."""
    out = io.StringIO()
    log = LineLog(out)
    for _ in range(3):
        log.show("KUBECONFIG: /k", "planner: running", [], [], {})
    assert out.getvalue().splitlines() == ["KUBECONFIG: /k", "planner: running"]


def _disruption(phase: str, states: list[str], wait: str = "ReplacementsReady") -> dict[str, Any]:
    return {"kind": "Disruption", "workflowId": "disrupt-u1", "status": "RUNNING", "phase": phase,
            "method": "Drift", "reason": "Drifted", "nodePool": "general", "nodes": ["a", "b"],
            "replacements": [{"nodeClaim": f"r{i}", "state": s} for i, s in enumerate(states)],
            "readyDeadline": "2026-11-23T12:10:00+00:00", "waitingFor": wait, "cancelRequested": False, "age": "1m"}


def test_line_log_prints_a_disruption_per_change_under_its_own_header() -> None:
    out = io.StringIO()
    log = LineLog(out)
    d = _disruption("WaitingReady", ["NotReady", "NotReady"])
    log.show("KUBECONFIG: /k", "planner: running", [], [_row("t", "Draining", 3, [])], {})
    log.show("KUBECONFIG: /k", "planner: running", [], [_row("t", "Draining", 3, []), d], {})
    log.show("KUBECONFIG: /k", "planner: running", [], [{**d, "age": "2m"}], {"terminate-t": "COMPLETED"})
    log.show("KUBECONFIG: /k", "planner: running", [], [_disruption("WaitingReady", ["Ready", "NotReady"])], {})
    log.show("KUBECONFIG: /k", "planner: running", [], [], {"disrupt-u1": "COMPLETED"})
    lines = out.getvalue().splitlines()
    assert lines[2].split()[0] == "NODE" and lines[3].split()[:4] == ["t", "general", "Drifted", "Draining"]
    assert lines[4].split()[:3] == ["NODES", "NODEPOOL", "METHOD"]
    assert lines[5].split()[:5] == ["a,b", "general", "Drift", "Drifted", "WaitingReady"]
    assert "r0 NotReady, r1 NotReady" in lines[5] and "replacements Ready: 0 of 2, until 2026-11-23T12:10:00Z" \
        in lines[5]
    assert lines[6].split()[:4] == ["t", "general", "Drifted", "COMPLETED"]  # the termination ended
    assert "r0 Ready, r1 NotReady" in lines[7] and "Ready: 1 of 2" in lines[7]
    assert lines[8].split() == ["a,b", "general", "Drift", "Drifted", "COMPLETED", "<none>", "<none>", "<none>"]
    assert len(lines) == 9


def test_tables_show_terminations_then_disruptions() -> None:
    lines = table_lines([_disruption("Validating", [], wait="PreDisruptionAck"), _row("t", "Draining", 3, [])])
    assert lines[0].split()[0] == "NODE" and lines[1].split()[0] == "t" and lines[2] == ""
    assert lines[3].split()[0] == "NODES" and "the pre-disruption hook's ack" in lines[4]
    assert stuck_drains([_disruption("Draining", [])], NOW, timedelta(0)) == []
    assert table_lines([]) == ["No terminations or disruptions in flight."]
