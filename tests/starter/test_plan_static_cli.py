"""`nodeflow plan` on examples/plan-static.yaml: static NodePools in their own field (docs/contracts.md §3.1)."""

from __future__ import annotations

import json
from pathlib import Path

from starter.cli import run

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "plan-static.yaml"
AT = "2026-11-22T20:00:00Z"


def test_static_pools_are_reported_beside_the_contract_and_not_in_commands(capsys) -> None:
    assert run(["plan", "-f", str(EXAMPLE), "--at", AT, "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data)[:7] == ["at", "budgets", "commands", "blocked", "final", "provisioning", "nodePoolsBlocked"]
    assert data["commands"] == []  # StaticDrift is reported under staticNodePools
    batch, web = data["staticNodePools"]
    assert (batch["nodePool"], batch["replicas"], batch["launch"]) == ("batch", 1, 0)
    assert batch["remove"] == [{"node": "batch-b", "pods": 0, "why": "empty"}]
    assert (web["nodePool"], web["replicas"], web["launch"], web["limitNodes"]) == ("web", 3, 1, 4)
    assert web["capacityType"] == "on-demand" and web["instanceTypes"][0] == "c6i.large"
    assert [d["node"] for d in web["drift"]] == ["web-b"] and web["held"] is None
    assert web["nodes"] == {"running": 2, "launching": 0, "pendingDisruption": 0, "deleting": 0}


def test_the_table_has_a_static_section(capsys) -> None:
    assert run(["plan", "-f", str(EXAMPLE), "--at", AT, "-o", "table"]) == 0
    out = capsys.readouterr().out
    assert "STATIC NODEPOOLS (2)" in out
    assert "   remove batch-b (empty, 0 pod(s))" in out and "   replace drifted web-b with on-demand" in out
