"""`nodeflow plan` names the instance-type volume attachment limit when it is why a pod goes to a new node or a move
is refused (v1.15: kubernetes-sigs/karpenter#3202; docs/semantics.md §3.5). Snapshots built in the test."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from api import labels as L
from planning.scheduling.volume_topology import EBS_DRIVER
from starter.cli import run
from tests.planning.planning_factory import AT, node_and_claim, nodepool, pod, ts

TYPES = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
         {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.xlarge", "m5.2xlarge"]}]
GP3 = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "gp3"},
       "provisioner": EBS_DRIVER, "volumeBindingMode": "WaitForFirstConsumer"}
FULL = f"pod default/x-1: node b has no volume attachment left for driver {EBS_DRIVER} (1 of 1)"


def _write(tmp_path: Path, *objs: dict | list) -> str:
    flat = [o for obj in objs for o in (obj if isinstance(obj, list) else [obj])]
    path = tmp_path / "snapshot.yaml"
    path.write_text(yaml.safe_dump_all(flat), encoding="utf-8")
    return str(path)


def _claim(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default"},
            "spec": {"storageClassName": "gp3", "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"phase": "Pending"}}


def _with_volume(name: str, node: str, claim: str) -> dict:
    p = pod(name, node, "100m", "64Mi")
    p["spec"]["volumes"] = [{"name": "d", "persistentVolumeClaim": {"claimName": claim}}]
    return p


def _csinode(node: str, count: int) -> dict:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": node},
            "spec": {"drivers": [{"name": EBS_DRIVER, "nodeID": f"i-{node}", "allocatable": {"count": count}}]}}


def test_v115_plan_names_the_full_node_on_the_pod_line_and_counts_it(tmp_path: Path, capsys) -> None:
    """a (m5.2xlarge) is replaced by a cheaper m5.xlarge; its pod x-1 would fit on b but for b's one attachment."""
    path = _write(tmp_path, nodepool(requirements=TYPES), GP3, node_and_claim("a", "m5.2xlarge"),
                  node_and_claim("b"), _csinode("b", 1), _claim("data-1"), _claim("data-2"),
                  _with_volume("x-1", "a", "data-1"), _with_volume("y-1", "b", "data-2"))
    assert run(["plan", "-f", path, "--at", ts(AT), "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (cmd,) = data["commands"]
    assert cmd["nodes"] == ["a"] and cmd["pods"] == [{"pod": "default/x-1", "to": "new-0", "why": FULL}]
    assert data["scheduling"]["podsVolumeLimited"] == 1
    assert run(["plan", "-f", path, "--at", ts(AT), "-o", "table"]) == 0
    out = capsys.readouterr().out
    assert f"   pod default/x-1 -> new-0 ({FULL})" in out
    assert "1 pods kept off a node by its volume attachment limit" in out


def test_v115_plan_names_the_full_node_where_a_move_is_refused(tmp_path: Path, capsys) -> None:
    """a and b (same type) each attach one volume and allow one: neither pod fits on the other node, and a new node
    is no cheaper. Karpenter's message, then the limit, is each node's detail."""
    only = [TYPES[0], {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.xlarge"]}]
    path = _write(tmp_path, nodepool(requirements=only), GP3,
                  node_and_claim("a"), node_and_claim("b"), _csinode("a", 1), _csinode("b", 1), _claim("data-1"),
                  _claim("data-2"), _with_volume("x-1", "a", "data-1"), _with_volume("y-1", "b", "data-2"))
    assert run(["plan", "-f", path, "--at", ts(AT), "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["commands"] == [] and data["scheduling"]["podsVolumeLimited"] == 2
    detail = {n["node"]: n["detail"] for n in data["nodes"]}
    assert detail["a"] == f"Can't replace with a cheaper node; {FULL}"
    assert detail["b"] == ("Can't replace with a cheaper node; pod default/y-1: node a has no volume attachment left "
                           f"for driver {EBS_DRIVER} (1 of 1)")
