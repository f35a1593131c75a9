"""`nodeflow budgets --kubeconfig`: the same rows read from a live cluster (the simulator's API server)."""

import json
from pathlib import Path

import pytest
import yaml

from simulator.server import Simulator
from starter.cli import run

SEED = Path(__file__).resolve().parents[2] / "examples" / "seed-budgets.yaml"


def test_live_cluster_rows_match_the_snapshot(sim: Simulator, capsys: pytest.CaptureFixture[str]) -> None:
    docs = [d for d in yaml.safe_load_all(SEED.read_text()) if d]
    # one node is being disrupted: its Node carries the karpenter.sh/disrupted taint
    node = next(d for d in docs if d["kind"] == "Node")
    node["spec"]["taints"] = [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]
    sim.load_objects(docs)
    assert run(["budgets", "--kubeconfig", sim.kubeconfig_path, "--at", "2026-11-23T12:00:00Z", "-o", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["reason"], r["limit"], r["total"], r["disrupting"], r["allowed"]) for r in rows] == [
        ("Empty", 4, 19, 1, 3), ("Drifted", 4, 19, 1, 3), ("Underutilized", 5, 19, 1, 4)]


def test_unreachable_cluster_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["budgets", "--kubeconfig", str(tmp_path / "none"), "--at", "2026-11-23T12:00:00Z"]) == 1
    assert capsys.readouterr().err.startswith("error: cannot load kubeconfig")


def test_source_is_required(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config either
    assert run(["budgets"]) == 2
    assert "give -f SNAPSHOT" in capsys.readouterr().err


def test_kubeconfig_env_is_the_live_cluster(sim: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Without -f or --kubeconfig the cluster is $KUBECONFIG's, a `:`-separated list as kubectl merges it."""
    sim.load_objects([d for d in yaml.safe_load_all(SEED.read_text()) if d])
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'absent'}:{sim.kubeconfig_path}")
    assert run(["budgets", "--at", "2026-11-23T12:00:00Z", "-o", "json"]) == 0
    assert {r["nodePool"] for r in json.loads(capsys.readouterr().out)}
