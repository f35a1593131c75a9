"""`nodeflow plan` lists the nodes it leaves out and why (they vanished without a trace)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from starter.cli import run

AT = "2026-11-22T20:00:00Z"


def _node(name: str, pool: str | None, initialized: bool = True) -> dict[str, Any]:
    labels = {"node.kubernetes.io/instance-type": "m5.large", "karpenter.sh/capacity-type": "on-demand",
              "topology.kubernetes.io/zone": "us-east-1a", "kubernetes.io/arch": "amd64"}
    if pool is not None:
        labels["karpenter.sh/nodepool"] = pool
    if initialized:
        labels["karpenter.sh/initialized"] = "true"
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels,
                         "creationTimestamp": "2026-11-22T18:00:00Z"},
            "spec": {"providerID": f"aws:///us-east-1a/i-{name}"},
            "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "29"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def _claim(node: str, pool: str) -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": f"{node}-claim", "uid": f"uid-claim-{node}", "labels": {"karpenter.sh/nodepool": pool},
                         "creationTimestamp": "2026-11-22T18:00:00Z"},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                     "requirements": []},
            "status": {"nodeName": node, "providerID": f"aws:///us-east-1a/i-{node}",
                       "conditions": [{"type": "Launched", "status": "True"}]}}


def _snapshot(tmp_path: Path) -> Path:
    pool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
            "spec": {"template": {"spec": {"requirements": [], "nodeClassRef": {
                "group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}},
                     "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "Never"}}}
    docs = [pool,
            _node("counted", "default"), _claim("counted", "default"),
            _node("no-claim", "default"),
            _node("booting", "default", initialized=False), _claim("booting", "default"),
            _node("orphan-pool", "ghost"), _claim("orphan-pool", "ghost"),
            _node("unlabelled", None), _claim("unlabelled", "default")]
    path = tmp_path / "snapshot.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path


def test_json_lists_one_node_of_each_kind_with_its_reason(tmp_path: Path, capsys: Any) -> None:
    assert run(["plan", "-f", str(_snapshot(tmp_path)), "--at", AT, "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    got = {e["node"]: e["reason"] for e in data["excluded"]}
    assert got == {"no-claim": "NoNodeClaim", "booting": "NotInitialized", "orphan-pool": "UnknownNodePool",
                   "unlabelled": "NoNodePoolLabel"}
    by_node = {e["node"]: e["message"] for e in data["excluded"]}
    assert by_node["orphan-pool"] == "nodepool not found (NodePool=ghost)"
    assert "booting-claim is not Initialized" in by_node["booting"]
    assert {"budgets", "commands", "blocked", "final"} <= set(data)  # the existing keys stay


def test_table_has_an_excluded_section(tmp_path: Path, capsys: Any) -> None:
    assert run(["plan", "-f", str(_snapshot(tmp_path)), "--at", AT, "-o", "table"]) == 0
    out = capsys.readouterr().out
    start = out.index("EXCLUDED (4)")
    section = out[start:out.index("\n\n", start)]  # the section ends at its blank line (NODES lists every node)
    for node, reason in (("no-claim", "NoNodeClaim"), ("booting", "NotInitialized"),
                         ("orphan-pool", "UnknownNodePool"), ("unlabelled", "NoNodePoolLabel")):
        assert any(node in line and reason in line for line in section.splitlines()), (node, section)
    assert "counted" not in section
