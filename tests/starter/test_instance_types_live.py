"""`nodeflow instance-types --nodepool` against a live cluster (the simulator's API server) in eu-west-1: a real
process reading the NodePool and its EC2NodeClass from the cluster and discovering eu-west-1 from the devstack's EC2
stand-in. The pool allows only `karpenter.k8s.aws/instance-generation Gt 6` and the class's subnets are in
eu-west-1b and eu-west-1c: every listed type is of generation 7 or later, offered only there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from api.instance_types import labels as T

ROOT = Path(__file__).resolve().parents[2]


def _objects() -> list[dict[str, Any]]:
    pool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "new-gen"}, "spec": {
        "template": {"spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "eu"},
            "requirements": [{"key": T.GENERATION, "operator": "Gt", "values": ["6"]}]}}}}
    node_class = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "eu"},
                  "spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "r",
                           "subnetSelectorTerms": [{"tags": {"k": "v"}}],
                           "securityGroupSelectorTerms": [{"tags": {"k": "v"}}]},
                  "status": {"subnets": [{"id": "subnet-b", "zone": "eu-west-1b"},
                                         {"id": "subnet-c", "zone": "eu-west-1c"}]}}
    return [node_class, pool]


def test_a_live_pool_in_eu_west_1_lists_only_generation_over_6(sim: Any, cloud_endpoint: str) -> None:
    sim.load_objects(_objects())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "KUBECONFIG"))}
    env.update({"AWS_REGION": "eu-west-1", "AWS_ENDPOINT_URL": cloud_endpoint, "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing", "HOME": "/nonexistent"})
    proc = subprocess.run([sys.executable, "-m", "starter.cli", "instance-types", "--nodepool", "new-gen",
                           "--kubeconfig", sim.kubeconfig_path, "-o", "json"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = json.loads(proc.stdout)
    assert len(rows) > 50  # c7i, m7g, r8g, ...: far more than the bundled catalog's four m7i
    assert all(int(r["labels"][T.GENERATION]) > 6 for r in rows)
    zones = {o["zone"] for r in rows for o in r["offerings"]}
    assert zones == {"eu-west-1b", "eu-west-1c"}
    assert all(r["labels"]["topology.kubernetes.io/region"] == "eu-west-1" for r in rows)
