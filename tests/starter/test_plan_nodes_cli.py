"""`nodeflow plan` names every node, what spent each budget, and the global pause.

Before: node-a of examples/plan-do-not-disrupt.yaml appeared nowhere; a `nodeflow pause` (the paused planner
schedule) was not shown, so `plan` printed commands that would not run.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from client.planner_schedule import planner_schedule
from starter.cli import run

AT = "2026-11-22T20:00:00Z"
EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "plan-do-not-disrupt.yaml")
EXISTING = ["at", "budgets", "commands", "blocked", "final"]


def _plan(capsys: Any, *extra: str) -> dict[str, Any]:
    assert run(["plan", "-f", EXAMPLE, "--at", AT, "-o", "json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_has_one_row_per_node_and_keeps_its_keys(capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NODEFLOW_TEMPORAL_ADDRESS", raising=False)
    data = _plan(capsys)
    assert list(data)[:5] == EXISTING and list(data)[-6:-3] == ["nodes", "budgetUse", "plannerPause"]
    assert list(data)[-3:] == ["scheduling", "capacityBuffers", "deletionCost"]  # new keys go last (contracts §7)
    rows = {r["node"]: r for r in data["nodes"]}
    assert [r["node"] for r in data["nodes"]] == ["node-a", "node-b", "node-c"]
    assert rows["node-a"]["outcome"] == "Kept" and rows["node-a"]["reason"] == "PassDecided"
    assert rows["node-b"] == {"node": "node-b", "nodePool": "default", "outcome": "Blocked",
                              "reason": "DisruptionBlocked", "until": None,
                              "detail": 'disruption is blocked through the "karpenter.sh/do-not-disrupt" annotation'}
    assert rows["node-c"]["outcome"] == "Disrupted" and rows["node-c"]["reason"] == "Emptiness"
    empty = next(u for u in data["budgetUse"] if u["reason"] == "Empty")
    assert empty["commands"] == [{"command": "command 1", "method": "Emptiness", "nodes": ["node-c"]}]
    assert data["plannerPause"]["paused"] is None and data["plannerPause"]["why"].startswith("not read")


def test_table_lists_every_node_and_what_used_each_budget(capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NODEFLOW_TEMPORAL_ADDRESS", raising=False)
    assert run(["plan", "-f", EXAMPLE, "--at", AT]) == 0
    out = capsys.readouterr().out
    assert "NODES (3: 1 kept, 1 blocked, 1 disrupted)" in out
    assert any(line.startswith("node-a") and "PassDecided" in line for line in out.splitlines())
    budgets = out[out.index("BUDGETS"):out.index("COMMANDS")]
    assert "USED BY" in budgets
    assert any("Empty" in line and line.rstrip().endswith("command 1 (1)") for line in budgets.splitlines())
    assert "PLANNER PAUSE" not in out


def test_unreachable_temporal_leaves_the_pause_unknown_not_fatal(capsys: Any) -> None:
    data = _plan(capsys, "--address", "127.0.0.1:1")
    assert data["plannerPause"]["paused"] is None
    assert data["plannerPause"]["why"] == ("unknown: cannot read schedule nodeflow-planner at 127.0.0.1:1: "
                                           "Temporal not reachable (set --address or NODEFLOW_TEMPORAL_ADDRESS)")
    assert {r["outcome"] for r in data["nodes"]} == {"Kept", "Blocked", "Disrupted"}
    assert run(["plan", "-f", EXAMPLE, "--at", AT, "--address", "127.0.0.1:1"]) == 0
    assert "PLANNER PAUSE unknown" in capsys.readouterr().out


async def test_global_pause_is_read_from_the_planner_schedule(temporal_client: Client, capsys: Any) -> None:
    """`nodeflow pause` pauses the planner schedule: plan reads it there, holds every command and says how to resume."""
    sid = f"nodeflow-planner-{uuid.uuid4().hex[:8]}"
    handle = await temporal_client.create_schedule(sid, planner_schedule(paused=True, note="maintenance"))
    address = temporal_client.service_client.config.target_host
    argv = ["plan", "-f", EXAMPLE, "--at", AT, "--address", address, "--schedule-id", sid]
    try:
        assert await asyncio.to_thread(run, [*argv, "-o", "json"]) == 0
        data = json.loads(capsys.readouterr().out)
        pause = data["plannerPause"]
        assert (pause["paused"], pause["note"], pause["schedule"]) == (True, "maintenance", sid)
        assert pause["resume"] == f"nodeflow resume --schedule-id {sid}"
        node_c = next(r for r in data["nodes"] if r["node"] == "node-c")
        assert (node_c["outcome"], node_c["reason"]) == ("Kept", "PausedGlobally")
        assert "command 1: Emptiness deletes it" in node_c["detail"] and pause["resume"] in node_c["detail"]
        assert data["commands"][0]["nodes"] == ["node-c"]  # the commands themselves stay as they are

        assert await asyncio.to_thread(run, argv) == 0
        out = capsys.readouterr().out
        assert out.index("PLANNER PAUSED (maintenance)") < out.index("BUDGETS")
        assert "1. [held] Emptiness (Empty, nodepool default): delete node-c" in out

        await handle.unpause()
        assert await asyncio.to_thread(run, [*argv, "-o", "json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["plannerPause"]["paused"] is False
        assert next(r for r in data["nodes"] if r["node"] == "node-c")["outcome"] == "Disrupted"
    finally:
        await handle.delete()


async def test_a_missing_schedule_is_named(temporal_client: Client, capsys: Any) -> None:
    address = temporal_client.service_client.config.target_host
    sid = f"no-such-{uuid.uuid4().hex[:8]}"
    argv = ["plan", "-f", EXAMPLE, "--at", AT, "--address", address, "--schedule-id", sid, "-o", "json"]
    assert await asyncio.to_thread(run, argv) == 0
    pause = json.loads(capsys.readouterr().out)["plannerPause"]
    assert pause["paused"] is None
    assert pause["why"].endswith("no such schedule (the worker creates it; --schedule-id names another)")
