"""The examples of docs/semantics.md §15.9 through `nodeflow plan -f` (examples/plan-do-not-consolidate.yaml,
examples/plan-disruption-cost.yaml): what their headers promise is what the plan says."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from starter.cli import run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
AT = "2026-11-22T20:00:00Z"


def _plan(capsys: pytest.CaptureFixture[str], name: str) -> dict[str, Any]:
    assert run(["plan", "-f", str(EXAMPLES / name), "--at", AT, "-o", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_do_not_consolidate_example(capsys: pytest.CaptureFixture[str]) -> None:
    data = _plan(capsys, "plan-do-not-consolidate.yaml")
    assert [(c["method"], c["nodes"]) for c in data["commands"]] == [("SingleNodeConsolidation", ["node-b"])]
    assert data["blocked"] == [{"node": "node-a", "reason":
                                'pod has "nodeflow.dev/do-not-consolidate" annotation (Pod=default/api-1)'}]
    assert run(["plan", "-f", str(EXAMPLES / "plan-consolidate.yaml"), "--at", AT, "-o", "json"]) == 0
    before = json.loads(capsys.readouterr().out)
    assert [c["method"] for c in before["commands"]] == ["MultiNodeConsolidation"] and before["blocked"] == []


def test_disruption_cost_example(capsys: pytest.CaptureFixture[str]) -> None:
    data = _plan(capsys, "plan-disruption-cost.yaml")
    assert [(c["method"], c["nodes"]) for c in data["commands"]] == [("SingleNodeConsolidation", ["node-b"])]
    (move,) = data["skippedMoves"]
    assert move["method"] == "MultiNodeConsolidation" and move["pods"] == 3
    assert move["reason"] == "savings $0.615/h below threshold $0.70/h (3 pod(s) weighing 7 x $0.10)"


def test_the_full_policy_example_validates_with_its_drain() -> None:
    assert run(["validate", "-f", str(EXAMPLES / "disruption-policy.yaml")]) == 0
    assert "drain: {jobs: Wait, maxWait: 2h}" in (EXAMPLES / "disruption-policy.yaml").read_text()
