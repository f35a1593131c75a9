"""`nodeflow plan` on cost limits and expiry jitter (docs/semantics.md §15.10, §15.12): `costLimits` shows each
limit's headroom after the planned launches; `expiry` shows each jittered node's effective expiry."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from api import labels as L
from planning.policies.expiry_jitter import node_share
from starter.cli import run
from tests.planning.planning_factory import AT, node_and_claim, nodepool, pod, ts

ONLY_M5XL = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
             {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.xlarge"]}]


def _plan(tmp_path: Path, capsys: pytest.CaptureFixture[str], objs: list[Any], output: str = "json") -> Any:
    f = tmp_path / "snapshot.yaml"
    f.write_text(yaml.safe_dump_all(objs))
    assert run(["plan", "-f", str(f), "--at", ts(AT), "-o", output]) == 0
    out = capsys.readouterr().out
    return json.loads(out) if output == "json" else out


def _objs(spec: dict[str, Any]) -> list[Any]:
    policy = {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": "cap"},
              "spec": {"nodePools": ["default"], **spec}}
    return [nodepool(requirements=ONLY_M5XL, expire_after="720h", consolidate_after="Never"),
            *node_and_claim("a", "m5.xlarge", created=AT - timedelta(hours=700)), pod("busy", "a", cpu="3"),
            *[pod(f"web-{i}", None, cpu="3") for i in range(4)], policy]


def test_plan_shows_the_headroom_of_a_cost_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _plan(tmp_path, capsys, _objs({"limits": {"costPerHour": "0.60"}}))
    assert len(data["provisioning"]) == 2
    (row,) = data["costLimits"]
    assert row["policy"] == "cap" and row["limit"] == "0.60" and row["used"] == 0.192
    assert row["planned"] == 0.384 and row["headroom"] == 0.024
    assert {"budgets", "commands", "blocked", "final", "provisioning"} <= set(data)  # the existing keys stay
    table = _plan(tmp_path, capsys, _objs({"limits": {"costPerHour": "0.60"}}), "table")
    assert "COST LIMITS (1)" in table and "$0.0240/h" in table
    assert "cost limit $0.60/h of DisruptionPolicy cap reached" in table  # the pods past it, and why


def test_plan_shows_each_jittered_nodes_effective_expiry(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    data = _plan(tmp_path, capsys, _objs({"expiration": {"jitter": "10%"}}))
    (row,) = data["expiry"]
    earlier = int(timedelta(hours=72).total_seconds() * node_share("a"))
    assert row["node"] == "a" and row["jitter"] == "10%" and abs(row["earlierBySeconds"] - earlier) <= 1
    expected = AT - timedelta(hours=700) + timedelta(hours=720) - timedelta(seconds=row["earlierBySeconds"])
    assert row["expiresAt"][:16] == ts(expected)[:16]
    assert [c["nodes"] for c in data["commands"] if c["method"] == "Expiration"] == (
        [["a"]] if expected <= AT else [])
    assert _plan(tmp_path, capsys, _objs({}))["expiry"] == []  # no jitter, nothing expiring: no rows


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_the_cost_limit_example_says_what_its_header_says(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["plan", "-f", str(EXAMPLES / "plan-cost-limit.yaml"), "--at", ts(AT), "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(p["nodePool"], p["instanceTypes"]) for p in data["provisioning"]] == [("general", ["m5.large"])] * 2
    assert data["costLimits"] == [{"policy": "cost-cap", "nodePools": ["general"], "limit": "0.30", "used": 0.096,
                                   "planned": 0.192, "headroom": 0.012}]


def test_the_jitter_example_expires_two_of_six(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["plan", "-f", str(EXAMPLES / "plan-expiry-jitter.yaml"), "--at", ts(AT), "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(c["method"], c["nodes"]) for c in data["commands"]] == [("Expiration", ["general-3"]),
                                                                    ("Expiration", ["general-6"])]
    rows = data["expiry"]
    assert [r["node"] for r in rows][:2] == ["general-3", "general-6"] and len(rows) == 6
    assert all(0 < r["earlierBySeconds"] < 72 * 3600 for r in rows)
