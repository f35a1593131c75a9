"""`nodeflow plan` on examples/plan-capacity-buffer.yaml: the headroom kept (docs/semantics.md §20, `capacityBuffers`
in docs/contracts.md §3.1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from starter.cli import run

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "plan-capacity-buffer.yaml")
AT = "2026-11-22T20:00:00Z"


def test_json_lists_the_buffer_its_chunk_and_the_nodes_it_holds(capsys: Any) -> None:
    assert run(["plan", "-f", EXAMPLE, "--at", AT, "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["capacityBuffers"] == [{"buffer": "default/headroom", "replicas": 1, "ready": True,
                                        "reason": "Resolved", "message": "Pod template resolved successfully",
                                        "existing": {"node-b": 1}, "new": 0, "failed": 0}]
    assert data["commands"] == [] and data["provisioning"] == []
    assert {b["node"]: b["reason"] for b in data["blocked"]}["node-b"] == 'Node "node-b" has buffer pods'
    assert not any("capacity-buffer-" in p for launch in data["provisioning"] for p in launch["pods"])


def test_table_has_a_capacity_buffers_section(capsys: Any) -> None:
    assert run(["plan", "-f", EXAMPLE, "--at", AT, "-o", "table"]) == 0
    out = capsys.readouterr().out
    assert "CAPACITY BUFFERS (1)" in out
    assert "default/headroom: 1 chunk(s), Resolved; kept on node-b x1; new NodeClaims 0; no place 0" in out
