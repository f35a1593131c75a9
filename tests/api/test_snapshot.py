"""Snapshot loading: YAML streams, kind: List, JSON, the fast path, and error messages that name the document."""

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

import api.snapshot as snapshot_mod
from api.snapshot import Snapshot, SnapshotError, load_snapshot, parse_snapshot

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

POOL = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
        "spec": {"template": {"spec": {"requirements": []}}}}
CLAIM = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "nc-1"},
         "status": {"nodeName": "node-1"}}
NODE = {"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "node-1", "creationTimestamp": "2026-11-01T00:00:00Z"}}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-1", "namespace": "shop"},
       "spec": {"nodeName": "node-1"}}
PDB = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "shop"},
       "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}}
CATALOG = {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "InstanceTypeCatalog", "metadata": {"name": "small"},
           "instanceTypes": [{"name": "m5.large", "cpu": "2", "memory": "8Gi", "pods": 29,
                              "offerings": [{"zone": "us-east-1a", "capacityType": "on-demand", "price": 0.096}]}]}
CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}}
ALL = [POOL, CLAIM, NODE, POD, PDB, CATALOG, CONFIGMAP]


def check_sorted(snap: Snapshot) -> None:
    assert [p.name for p in snap.node_pools] == ["default"]
    assert [c.name for c in snap.node_claims] == ["nc-1"]
    assert snap.nodes == [NODE] and snap.pods == [POD] and snap.pdbs == [PDB]
    assert snap.others == [CONFIGMAP]
    assert snap.catalog is not None and snap.catalog.get("m5.large") is not None


def test_yaml_stream() -> None:
    snap = parse_snapshot(yaml.safe_dump_all(ALL), "s.yaml")
    check_sorted(snap)
    assert snap.nodes[0]["metadata"]["creationTimestamp"] == "2026-11-01T00:00:00Z"  # not a datetime


def test_unquoted_timestamps_stay_strings() -> None:
    text = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  creationTimestamp: 2026-11-01T00:00:00Z\n"
    assert parse_snapshot(text).nodes[0]["metadata"]["creationTimestamp"] == "2026-11-01T00:00:00Z"


def test_kind_list_and_empty_documents() -> None:
    text = "---\n---\n" + yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": ALL})
    check_sorted(parse_snapshot(text))


def test_json_input() -> None:
    check_sorted(parse_snapshot(json.dumps({"apiVersion": "v1", "kind": "List", "items": ALL})))
    check_sorted(parse_snapshot(json.dumps(ALL)))


def test_round_trip_through_to_objects(tmp_path: Path) -> None:
    snap = parse_snapshot(yaml.safe_dump_all(ALL))
    path = tmp_path / "out.yaml"
    path.write_text(snap.to_yaml())
    again = load_snapshot(path)
    check_sorted(again)
    assert again.to_objects() == snap.to_objects()


def test_several_catalog_documents_merge() -> None:
    other = json.loads(json.dumps(CATALOG))
    other["instanceTypes"][0]["name"] = "m5.xlarge"
    other["metadata"]["name"] = "more"
    snap = parse_snapshot(yaml.safe_dump_all([CATALOG, other]))
    assert snap.catalog is not None and [t.name for t in snap.catalog.instance_types] == ["m5.large", "m5.xlarge"]
    with pytest.raises(SnapshotError, match="already defined by another catalog document"):
        parse_snapshot(yaml.safe_dump_all([CATALOG, {**CATALOG, "metadata": {"name": "again"}}]), "c.yaml")


def test_a_catalog_keeps_its_overhead_and_region_through_the_snapshot() -> None:
    doc = {**json.loads(json.dumps(CATALOG)), "vmMemoryOverheadPercent": 0.05, "region": "eu-west-1"}
    snap = parse_snapshot(yaml.safe_dump_all([doc]))
    assert snap.catalog is not None
    assert (snap.catalog.vm_memory_overhead_percent, snap.catalog.region) == (0.05, "eu-west-1")


def test_deprecated_alias_warning_is_collected() -> None:
    snap = load_snapshot(EXAMPLES / "nodepool-aks-nap.yaml")
    assert snap.node_pools[0].expire_after is None
    assert snap.warnings and snap.warnings[0].startswith("NodePool/default: spec.disruption.expireAfter")


def test_seed_example_loads() -> None:
    snap = load_snapshot(EXAMPLES / "seed-budgets.yaml")
    assert (len(snap.node_pools), len(snap.node_claims), len(snap.nodes)) == (1, 19, 19)


def _doc(**changes: Any) -> dict[str, Any]:
    return {**NODE, **changes}


@pytest.mark.parametrize(
    ("docs_or_text", "message"),
    [
        ("a: [1\n", "f.yaml: document 1: invalid YAML at line 2 column 1: "),
        (yaml.safe_dump_all([NODE]) + "---\nkind: Node\n  bad: indent\n", "f.yaml: document 2: invalid YAML at line"),
        ([NODE, [1, 2]], "f.yaml: document 2: expected a Kubernetes object (a mapping), got list"),
        ([{"apiVersion": "v1", "metadata": {"name": "x"}}], "f.yaml: document 1 (?/x): missing 'kind'"),
        ([{"kind": "Node", "metadata": {"name": "x"}}], "f.yaml: document 1 (Node/x): missing 'apiVersion'"),
        ([POD, _doc(metadata={})], "f.yaml: document 2 (Node/?): missing 'metadata.name'"),
        ([{**POOL, "apiVersion": "karpenter.sh/v1beta1"}],
         "f.yaml: document 1 (NodePool/default): apiVersion 'karpenter.sh/v1beta1' is not supported for NodePool; "
         "use karpenter.sh/v1"),
        ([NODE, NODE], "f.yaml: document 2 (Node/node-1): duplicate Node (first seen at document 1)"),
        ([{**POOL, "spec": {"disruption": {"consolidateAfter": "soon"}}}],
         "f.yaml: document 1 (NodePool/default): spec.disruption.consolidateAfter: "),
        ([{"apiVersion": "v1", "kind": "List", "items": [POD, json.loads(json.dumps(POD))]}],
         "f.yaml: document 1 item 2 (Pod/shop/web-1): duplicate Pod (first seen at document 1 item 1)"),
        ([{"apiVersion": "v1", "kind": "List", "items": {"a": 1}}],
         "f.yaml: document 1 (List/?): 'items' must be a list"),
    ],
)
def test_errors_name_file_document_and_object(docs_or_text: Any, message: str) -> None:
    text = docs_or_text if isinstance(docs_or_text, str) else yaml.safe_dump_all(docs_or_text)
    with pytest.raises(SnapshotError) as info:
        parse_snapshot(text, "f.yaml")
    assert str(info.value).startswith(message), str(info.value)
    assert "Traceback" not in str(info.value)


def test_same_pod_name_in_two_namespaces_is_fine() -> None:
    other = {**POD, "metadata": {"name": "web-1", "namespace": "other"}}
    assert len(parse_snapshot(yaml.safe_dump_all([POD, other])).pods) == 2


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match=r"missing\.yaml: cannot read"):
        load_snapshot(tmp_path / "missing.yaml")
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(SnapshotError, match="not UTF-8"):
        load_snapshot(binary)


def big_cluster(nodes: int, pods: int) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [POOL]
    for i in range(nodes):
        docs.append({"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": f"node-{i}", "labels": {"karpenter.sh/nodepool": "default", "karpenter.sh/initialized": "true",
                                            "node.kubernetes.io/instance-type": "m5.large"},
            "creationTimestamp": "2026-11-01T00:00:00Z"},
            "spec": {"providerID": f"aws:///us-east-1a/i-{i}"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}], "allocatable": {"cpu": "2"}}})
    for i in range(pods):
        docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": f"web-{i}", "namespace": "shop", "labels": {"app": "web"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u",
                                 "controller": True}]},
            "spec": {"nodeName": f"node-{i % nodes}", "containers": [
                {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]},
            "status": {"phase": "Running", "startTime": "2026-11-01T00:05:00Z"}})
    return docs


def test_fast_path_matches_pyyaml(monkeypatch: pytest.MonkeyPatch) -> None:
    text = yaml.dump_all(big_cluster(40, 400), Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False)
    monkeypatch.setattr(snapshot_mod, "FAST_YAML_BYTES", 1000)  # take the yaml_rs path for this small text
    fast = parse_snapshot(text)
    assert (len(fast.nodes), len(fast.pods)) == (40, 400)
    monkeypatch.setattr(snapshot_mod, "FAST_YAML_BYTES", 10**12)  # force PyYAML
    slow = parse_snapshot(text)
    assert slow.nodes == fast.nodes and slow.pods == fast.pods
    assert slow.node_pools[0].to_dict() == fast.node_pools[0].to_dict()


def test_fast_path_refusal_falls_back_to_pyyaml_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot_mod, "FAST_YAML_BYTES", 10)
    with pytest.raises(SnapshotError, match="document 2: invalid YAML"):
        parse_snapshot(yaml.safe_dump(NODE) + "---\nkind: [\n", "f.yaml")
    # duplicate keys: yaml_rs refuses, PyYAML takes the last one (as kubectl does)
    snap = parse_snapshot("apiVersion: v1\nkind: Node\nmetadata: {name: a}\nmetadata: {name: b}\n")
    assert snap.nodes[0]["metadata"]["name"] == "b"


def test_load_object_is_the_loaders_own_load_of_one_object() -> None:
    """The worker's cache loads each object once and keeps it between passes (runtime/cluster_view.py): one
    object's load is what the loader puts in a snapshot, and a bad object fails as the loader fails."""
    from simulator.generate import generate_cluster

    objs = generate_cluster(4, 5, seed=9)
    fresh = Snapshot.from_objects(objs)
    loads = [snapshot_mod.load_object(o) for o in objs]
    assert [x for x in loads if type(x).__name__ == "NodePool"] == fresh.node_pools
    assert [x for x in loads if type(x).__name__ == "NodeClaim"] == fresh.node_claims
    for kind, attr in (("Node", "nodes"), ("Pod", "pods"), ("PodDisruptionBudget", "pdbs")):
        assert [x for x in loads if isinstance(x, dict) and x["kind"] == kind] == getattr(fresh, attr)
    broken = {"apiVersion": "v1", "kind": "Node", "metadata": {}}
    with pytest.raises(SnapshotError, match=r"metadata\.name"):
        Snapshot.from_objects([*objs, broken])
    with pytest.raises(SnapshotError, match=r"metadata\.name"):
        snapshot_mod.load_object(broken)
