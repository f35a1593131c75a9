"""`nodeflow plan` says why a static pool's drift is terminate-first and which pool's drift backs off until when
(v1.15: kubernetes-sigs/karpenter#3312; kubernetes-sigs/karpenter#3080). Snapshots built in the test."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import yaml

from api import labels as L
from planning.policies.drift_backoff import DriftBackoff
from starter.cli import run
from tests.planning.planning_factory import AT, node_and_claim, nodepool, ts

STALE = {L.TEMPLATE_HASH_ANNOTATION: "stale-template"}


def _write(tmp_path: Path, *objs: dict | list) -> str:
    flat = [o for obj in objs for o in (obj if isinstance(obj, list) else [obj])]
    path = tmp_path / "snapshot.yaml"
    path.write_text(yaml.safe_dump_all(flat), encoding="utf-8")
    return str(path)


def test_v115_plan_says_terminate_first_and_names_a_backed_off_pool(tmp_path: Path, capsys) -> None:
    static = nodepool("static", budgets=[{"nodes": "1"}], limits={"nodes": "2"})
    static["spec"]["replicas"] = 2
    held = DriftBackoff(3, AT + timedelta(minutes=4))
    dyn = nodepool("dyn", consolidate_after="Never", annotations={L.DRIFT_BACKOFF_ANNOTATION: held.value()})
    path = _write(tmp_path, static, dyn, *[node_and_claim(n, pool="static", claim_annotations=STALE)
                                           for n in ("s-0", "s-1")],
                  node_and_claim("d-0", pool="dyn", claim_annotations=STALE))
    assert run(["plan", "-f", path, "--at", ts(AT), "-o", "table"]) == 0
    out = capsys.readouterr().out
    assert "delete drifted s-0 first (terminate-first: pool at its replicas (limits.nodes 2))" in out
    assert f"drift of nodepool dyn backs off until {ts(held.until)} after 3 failed replacement(s)" in out
    assert run(["plan", "-f", path, "--at", ts(AT), "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (pool,) = data["staticNodePools"]
    assert pool["drift"][0]["terminateFirst"] == "terminate-first: pool at its replicas (limits.nodes 2)"
    assert data["driftBackoffs"] == [{"nodePool": "dyn", "failures": 3, "until": ts(held.until),
                                      "message": f"drift of nodepool dyn backs off until {ts(held.until)} after 3 "
                                                 "failed replacement(s)"}]
