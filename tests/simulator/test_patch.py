"""Patch flavours: unit cases for each algorithm, then what the kubernetes client sends for core and CRD types."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client import ApiException
from support.sim_objects import node, nodeclaim

from simulator.errors import ApiError
from simulator.patch import json_patch, merge_patch, strategic_merge_patch
from simulator.server import Simulator


def test_merge_patch_merges_maps_deletes_nulls_and_replaces_lists() -> None:
    doc = {"a": {"b": 1, "c": 2}, "l": [1, 2], "keep": True}
    assert merge_patch(doc, {"a": {"b": None, "d": 3}, "l": [3]}) == {"a": {"c": 2, "d": 3}, "l": [3], "keep": True}
    assert doc == {"a": {"b": 1, "c": 2}, "l": [1, 2], "keep": True}, "input untouched"


def test_strategic_merge_uses_the_kubernetes_list_strategies() -> None:
    doc = {"metadata": {"finalizers": ["a"], "labels": {"x": "1"}},
           "spec": {"taints": [{"key": "t1", "effect": "NoSchedule"}]},
           "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Drifted", "status": "False"}]}}
    out = strategic_merge_patch(doc, {
        "metadata": {"finalizers": ["b", "a"], "labels": {"x": None, "y": "2"}},
        "spec": {"taints": [{"key": "t2", "effect": "NoSchedule"}]},
        "status": {"conditions": [{"type": "Drifted", "status": "True"}]}})
    assert out["metadata"] == {"finalizers": ["a", "b"], "labels": {"y": "2"}}
    assert out["spec"]["taints"] == [{"key": "t2", "effect": "NoSchedule"}], "taints have no merge key: replaced"
    assert out["status"]["conditions"] == [{"type": "Ready", "status": "True"}, {"type": "Drifted", "status": "True"}]
    deleted = strategic_merge_patch(out, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]},
                                          "status": {"conditions": [{"type": "Ready", "$patch": "delete"}]}})
    assert deleted["metadata"]["finalizers"] == ["b"]
    assert deleted["status"]["conditions"] == [{"type": "Drifted", "status": "True"}]
    replaced = strategic_merge_patch(out, {"metadata": {"labels": {"$patch": "replace", "only": "me"}}})
    assert replaced["metadata"]["labels"] == {"only": "me"}


def test_json_patch_operations_and_failures() -> None:
    doc = {"metadata": {"finalizers": ["a", "b"]}, "spec": {}}
    out = json_patch(doc, [{"op": "remove", "path": "/metadata/finalizers/0"},
                           {"op": "add", "path": "/spec/taints", "value": []},
                           {"op": "add", "path": "/spec/taints/-", "value": {"key": "k"}},
                           {"op": "test", "path": "/metadata/finalizers/0", "value": "b"},
                           {"op": "copy", "from": "/metadata/finalizers", "path": "/spec/copied"},
                           {"op": "move", "from": "/spec/copied", "path": "/spec/moved"},
                           {"op": "replace", "path": "/spec/moved/0", "value": "z"}])
    assert out == {"metadata": {"finalizers": ["b"]}, "spec": {"taints": [{"key": "k"}], "moved": ["z"]}}
    for bad in ([{"op": "test", "path": "/spec", "value": 1}], [{"op": "remove", "path": "/nope"}],
                [{"op": "replace", "path": "/spec/x", "value": 1}]):
        with pytest.raises(ApiError) as exc:
            json_patch(doc, bad)
        assert exc.value.code == 422


def test_client_patches_on_core_types_are_strategic(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("n1", finalizers=["karpenter.sh/termination"],
                           taints=[{"key": "a", "effect": "NoSchedule"}])])
    v1 = client.CoreV1Api(k8s)
    v1.patch_node("n1", {"metadata": {"finalizers": ["other"]}})
    assert v1.read_node("n1").metadata.finalizers == ["karpenter.sh/termination", "other"]
    v1.patch_node("n1", {"spec": {"taints": [{"key": "a", "effect": "NoSchedule"},
                                             {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]}})
    assert [t.key for t in v1.read_node("n1").spec.taints] == ["a", "karpenter.sh/disrupted"]
    v1.patch_node_status("n1", {"status": {"conditions": [{"type": "MemoryPressure", "status": "False"}]}})
    assert {c.type for c in v1.read_node("n1").status.conditions} == {"Ready", "MemoryPressure"}
    v1.patch_node("n1", [{"op": "remove", "path": "/metadata/finalizers/0"}])
    assert v1.read_node("n1").metadata.finalizers == ["other"]


def test_crds_take_merge_and_json_patch_but_not_strategic(sim: Simulator, k8s: client.ApiClient) -> None:
    custom = client.CustomObjectsApi(k8s)
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", nodeclaim("c1"))
    custom.patch_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "c1",
                                       {"metadata": {"annotations": {"a": "1"}}})
    got = custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "c1")
    assert got["metadata"]["annotations"] == {"a": "1"}
    custom.patch_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "c1",
                                       [{"op": "replace", "path": "/metadata/finalizers", "value": []}],
                                       _content_type="application/json-patch+json")
    assert custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "c1")["metadata"]["finalizers"] == []
    with pytest.raises(ApiException) as exc:
        custom.patch_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "c1", {"spec": {}},
                                           _content_type="application/strategic-merge-patch+json")
    assert exc.value.status == 415 and json.loads(exc.value.body)["reason"] == "UnsupportedMediaType"
