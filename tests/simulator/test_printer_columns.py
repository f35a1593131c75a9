"""The simulator prints custom resources from their CRD's additionalPrinterColumns, as kube-apiserver does, so
`kubectl get nodepools,nodeclaims` shows Karpenter's columns (simulator/printer_columns.py)."""

from __future__ import annotations

import subprocess

import pytest

from bench.clusters import node_objects
from devstack.binaries import find_binary
from simulator import printer_columns as pc
from simulator.server import Simulator

KUBECTL = find_binary("kubectl")
POOL = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
        "metadata": {"name": "general", "annotations": {"nodeflow.dev/allowed-disruptions":
                                                        "Empty=1,Drifted=0,Underutilized=1"}},
        "spec": {"weight": 10, "template": {"spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
            "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}}}}
STATUS = {"nodes": 3, "resources": {"cpu": "12", "memory": "48Gi", "nodes": "3", "pods": "330"},
          "conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "",
                          "lastTransitionTime": "2026-01-01T00:00:00Z"}]}


def test_jsonpath_subset_of_printer_columns() -> None:
    obj = {"metadata": {"labels": {"node.kubernetes.io/instance-type": "m5.large"}},
           "status": {"conditions": [{"type": "Drifted", "status": "False"}, {"type": "Ready", "status": "True"}],
                      "list": [1, 2]}}
    assert pc.evaluate(r".metadata.labels.node\.kubernetes\.io/instance-type", obj) == ["m5.large"]
    assert pc.evaluate('.status.conditions[?(@.type=="Ready")].status', obj) == ["True"]
    assert pc.evaluate(".status.list[1]", obj) == [2]
    assert pc.evaluate(".status.missing.field", obj) == []
    with pytest.raises(ValueError):
        pc.evaluate(".status..x", obj)


def test_every_shipped_printer_column_evaluates() -> None:
    for kind, group in (("NodePool", "karpenter.sh"), ("NodeClaim", "karpenter.sh"),
                        ("EC2NodeClass", "karpenter.k8s.aws")):
        columns = pc.columns_of(group, "v1", kind)
        assert columns, kind
        for c in columns:
            pc.evaluate(c["jsonPath"], {})  # raises on a path outside the supported subset


def test_table_cells_follow_the_columns() -> None:
    columns = pc.columns_of("karpenter.sh", "v1", "NodePool")
    assert columns is not None
    created = {**POOL, "metadata": {**POOL["metadata"], "creationTimestamp": "2026-01-01T00:00:00Z"}}
    defs, rows = pc.table(columns, [{**created, "status": STATUS}], lambda ts: "5d" if ts else "?")
    names = [d["name"] for d in defs]
    assert names[:5] == ["Name", "NodeClass", "Nodes", "Ready", "Age"]  # Karpenter's order
    assert dict(zip(names, rows[0], strict=True)) == {
        "Name": "general", "NodeClass": "default", "Nodes": "3", "Ready": "True", "Age": "5d", "Weight": 10,
        "CPU": "12", "Memory": "48Gi", "Allowed Disruptions": "Empty=1,Drifted=0,Underutilized=1"}
    assert [d["priority"] for d in defs] == [0, 0, 0, 0, 0, 1, 1, 1, 1]


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_get_nodepools_shows_karpenters_columns(sim: Simulator) -> None:
    claim = node_objects("n1", "m5.large")[0]
    sim.load_objects([{**POOL, "status": STATUS}, claim])

    def get(*args: str) -> str:
        out = subprocess.run([KUBECTL or "kubectl", "--kubeconfig", sim.kubeconfig_path, "get", *args],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout

    narrow = get("nodepools").splitlines()
    assert narrow[0].split() == ["NAME", "NODECLASS", "NODES", "READY", "AGE"]
    assert narrow[1].split()[:4] == ["general", "default", "3", "True"]
    wide = get("nodepools", "-o", "wide").splitlines()
    assert wide[0].split() == ["NAME", "NODECLASS", "NODES", "READY", "AGE", "WEIGHT", "CPU", "MEMORY", "ALLOWED",
                               "DISRUPTIONS"]
    assert wide[1].split()[5:] == ["10", "12", "48Gi", "Empty=1,Drifted=0,Underutilized=1"]
    claims = get("nodeclaims", "-o", "wide").splitlines()
    assert claims[0].split() == ["NAME", "TYPE", "CAPACITY", "ZONE", "NODE", "READY", "AGE", "IMAGEID", "ID",
                                 "NODEPOOL", "NODECLASS", "DRIFTED"]
    cells = claims[1].split()
    assert cells[:6] == ["n1-claim", "m5.large", "on-demand", "us-east-1a", "n1", "True"]
    assert cells[7:] == [claim["status"]["providerID"], "default", "default"]  # no imageID, no Drifted: blank
