"""examples/plan-spot-return.yaml through `nodeflow plan -f` (docs/semantics.md §15.5-15.6): what its header promises
is what the plan says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from starter.cli import run

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "plan-spot-return.yaml"


def test_spot_return_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["plan", "-f", str(EXAMPLE), "--at", "2026-11-22T20:00:00Z", "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (cmd,) = data["commands"]
    assert (cmd["method"], cmd["reason"], cmd["nodes"]) == ("SpotReturn", "SpotFallback", ["node-od-old"])
    assert [r["capacityType"] for r in cmd["replacements"]] == ["spot"] and cmd["savingsPerHour"] > 0
    assert [(r["node"], r["state"], r["returnAt"]) for r in data["spotFallbacks"]] == [
        ("node-od-old", "Returning", "2026-11-22T18:30:00Z"), ("node-od-new", "Waiting", "2026-11-22T20:20:00Z")]
    assert data["zoneBalance"] == [{"nodePool": "default", "zoneBalance": 1, "spread": 0, "nodesByZone": {
        "us-east-1a": 1, "us-east-1b": 1, "us-east-1c": 1}}]
    assert run(["validate", "-f", str(EXAMPLE)]) == 0
