"""`nodeflow budgets -f SNAPSHOT [--at RFC3339] -o json|yaml|table` through the CLI entry point."""

import json
from pathlib import Path

import pytest
import yaml

from starter.cli import run

SEED = str(Path(__file__).resolve().parents[2] / "examples" / "seed-budgets.yaml")


def rows(capsys: pytest.CaptureFixture[str]) -> list[dict]:
    return json.loads(capsys.readouterr().out)


def test_seed_json_rows_are_the_design_contract(capsys: pytest.CaptureFixture[str]) -> None:
    """The design's three rows per pool: no budget of the seed names `Unhealthy`, so node repair's row is not shown
    (api.budgets.shown_reasons)."""
    assert run(["budgets", "-f", SEED, "--at", "2026-11-23T12:00:00Z", "-o", "json"]) == 0
    assert rows(capsys) == [
        {"nodePool": "default", "reason": "Empty", "limit": 4, "total": 19, "disrupting": 0, "allowed": 4,
         "errors": []},
        {"nodePool": "default", "reason": "Drifted", "limit": 4, "total": 19, "disrupting": 0, "allowed": 4,
         "errors": []},
        {"nodePool": "default", "reason": "Underutilized", "limit": 5, "total": 19, "disrupting": 0, "allowed": 5,
         "errors": []},
    ]


def test_a_not_ready_node_disrupts_every_reason_but_unhealthy(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """NotReady counts as disrupting (Karpenter's counting) except for node repair's own reason, as the planner
    counts it: otherwise the node to repair would spend its own repair's budget. A budget naming `Unhealthy` shows
    its row."""
    docs = list(yaml.safe_load_all(Path(SEED).read_text()))
    node = next(d for d in docs if d["kind"] == "Node")
    node["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    pool = next(d for d in docs if d["kind"] == "NodePool")
    pool["spec"]["disruption"]["budgets"].append({"nodes": "5", "reasons": ["Unhealthy"]})
    path = tmp_path / "snap.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    assert run(["budgets", "-f", str(path), "--at", "2026-11-23T12:00:00Z", "-o", "json"]) == 0
    assert [(r["reason"], r["disrupting"], r["allowed"]) for r in rows(capsys)] == [
        ("Empty", 1, 3), ("Drifted", 1, 3), ("Underutilized", 1, 4), ("Unhealthy", 0, 5)]


def test_window_closes_underutilized_at_midnight(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["budgets", "-f", SEED, "--at", "2026-11-23T00:05:00+00:00", "-o", "json"]) == 0
    assert [r["allowed"] for r in rows(capsys)] == [4, 4, 0]
    assert run(["budgets", "-f", SEED, "--at", "2026-11-23T00:10:00", "-o", "yaml"]) == 0  # no offset: UTC
    assert [r["allowed"] for r in yaml.safe_load(capsys.readouterr().out)] == [4, 4, 5]


def test_table_for_people(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["budgets", "-f", SEED, "--at", "2026-11-23T12:00:00Z"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Budgets at 2026-11-23T12:00:00Z"
    assert lines[2].split() == ["NODEPOOL", "REASON", "ALLOWED", "NODES", "DISRUPTING", "LIMIT", "ACTIVE", "BUDGETS",
                                "NEXT", "CHANGE"]
    under = next(line for line in lines if "Underutilized" in line)
    assert under.split()[:6] == ["default", "Underutilized", "5", "19", "0", "5"]
    assert "#2 opens 2026-11-24T00:00:00Z (in 12h)" in under
    empty = next(line for line in lines if " Empty " in line)
    assert "#0 20% [Empty,Drifted]; #1 5" in empty


def test_invalid_budget_shows_errors_and_blocks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = list(yaml.safe_load_all(Path(SEED).read_text()))
    docs[0]["spec"]["disruption"]["budgets"].append({"nodes": "0", "schedule": "0 9 * * 9", "duration": "1h",
                                                     "reasons": ["Drifted"]})
    path = tmp_path / "snap.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    assert run(["budgets", "-f", str(path), "--at", "2026-11-23T12:00:00Z", "-o", "json"]) == 0
    out = rows(capsys)
    assert [r["allowed"] for r in out] == [0, 0, 0]
    assert all(r["limit"] == 0 and r["errors"][0].startswith("spec.disruption.budgets[3]: ") for r in out)
    assert run(["budgets", "-f", str(path), "--at", "2026-11-23T12:00:00Z"]) == 0
    text = capsys.readouterr().out
    assert "INVALID BUDGET" in text and "invalid budgets block every voluntary disruption" in text


@pytest.mark.parametrize("at", ["tomorrow", "2026-13-01T00:00:00Z", "12:00", "9999-12-31T23:00:00Z", "0001-01-01"])
def test_bad_at_is_a_clear_error(at: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["budgets", "-f", SEED, "--at", at]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --at {at!r} is ") and "Traceback" not in err


def test_bad_snapshot_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["budgets", "-f", str(tmp_path / "missing.yaml")]) == 1
    assert "cannot read" in capsys.readouterr().err
    nodes_only = tmp_path / "nodes.yaml"
    nodes_only.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: a}\n")
    assert run(["budgets", "-f", str(nodes_only)]) == 1
    assert "no NodePool" in capsys.readouterr().err
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Pod\n")
    assert run(["budgets", "-f", str(broken)]) == 1
    assert "broken.yaml: document 2 (Pod/?): missing 'metadata.name'" in capsys.readouterr().err
