"""`nodeflow plan --kubeconfig` against the simulator gives the same answer as `-f` on the same objects."""

from __future__ import annotations

import json

import pytest
import yaml

from api import labels
from bench.clusters import node_objects, node_pool, pod
from starter.cli import run

pytestmark = pytest.mark.e2e
AT = "2026-01-02T00:00:00Z"


def _objects() -> list[dict]:
    objs = [node_pool("default", budgets=[{"nodes": "100%"}]),
            node_pool("frozen", budgets=[{"nodes": "100%"}], annotations={labels.PAUSED_ANNOTATION: "true"})]
    for name in ("busy-a", "busy-b", "empty-c", "tainted-d"):
        objs += node_objects(name, "m5.xlarge")
    objs += node_objects("frozen-e", "m5.xlarge", pool="frozen")
    objs += [pod(f"web-{i}", "busy-a" if i % 2 else "busy-b", 0.5, 1.0) for i in range(4)]
    node_d = next(o for o in objs if o["kind"] == "Node" and o["metadata"]["name"] == "tainted-d")
    node_d["spec"]["taints"] = [{"key": labels.DISRUPTED_TAINT_KEY, "effect": "NoSchedule"}]
    return objs


def test_live_plan_matches_file_plan(sim, tmp_path, capsys) -> None:
    objs = _objects()
    sim.load_objects(objs)
    assert run(["plan", "--kubeconfig", sim.kubeconfig_path, "--at", AT, "-o", "json"]) == 0
    live = json.loads(capsys.readouterr().out)

    snap = tmp_path / "snap.yaml"
    snap.write_text(yaml.safe_dump_all(objs))
    assert run(["plan", "-f", str(snap), "--at", AT, "-o", "json"]) == 0
    offline = json.loads(capsys.readouterr().out)

    live_nodes = {n for c in live["commands"] for n in c["nodes"]}
    offline_nodes = {n for c in offline["commands"] for n in c["nodes"]}
    assert [c["method"] for c in live["commands"]] == ["Emptiness"]
    assert live_nodes == offline_nodes == {"empty-c"}  # tainted-d is in flight; frozen-e's NodePool is paused
    assert {b["node"] for b in live["blocked"]} >= {"frozen-e"}
    assert live["budgets"] == offline["budgets"] and live["final"] == offline["final"]


def test_live_plan_reports_unreachable_cluster(tmp_path, capsys) -> None:
    cfg = tmp_path / "kubeconfig"
    cfg.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "x", "cluster": {"server": "http://127.0.0.1:9"}}],
        "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}],
        "users": [{"name": "x", "user": {"token": "t"}}]}))
    assert run(["plan", "--kubeconfig", str(cfg), "-o", "json"]) == 1
    assert "cannot read the cluster at http://127.0.0.1:9" in capsys.readouterr().err
