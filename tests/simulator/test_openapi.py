"""The OpenAPI documents and the server-side field check built on them (kubectl's tests are in test_kubectl.py)."""

from __future__ import annotations

from simulator.fieldcheck import check
from simulator.openapi import gv_document, root_document
from simulator.resources import BY_KIND, RESOURCE_TYPES


def test_every_served_kind_has_a_schema_and_a_patch_with_field_validation() -> None:
    root = root_document()["paths"]
    for rt in RESOURCE_TYPES:
        key = f"apis/{rt.group}/{rt.version}" if rt.group else f"api/{rt.version}"
        assert root[key]["serverRelativeURL"].startswith(f"/openapi/v3/{key}?hash=")
        doc = gv_document(rt.group, rt.version)
        assert doc is not None
        gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
        patches = [p["patch"] for p in doc["paths"].values() if p.get("patch", {}).get(
            "x-kubernetes-group-version-kind") == gvk]
        assert len(patches) == 1, rt.kind
        assert any(p["name"] == "fieldValidation" for p in patches[0]["parameters"])


def test_unknown_fields_and_shapes() -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "labels": {"a": "b"}},
                  "spec": {"replicas": "two", "selector": {"matchLabels": {"a": "b"}}, "strategy": {
                      "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
                      "template": {"spec": {"containers": [{"name": "c", "resources": {
                          "requests": {"cpu": 1, "memory": "1Gi"}}, "colour": "red"}]}}}}
    assert check(BY_KIND["Deployment"], deployment) == [
        "spec.replicas: expected integer, got str", 'unknown field "spec.template.spec.containers[0].colour"']


def test_crd_schemas_come_from_deploy_crds() -> None:
    pool = {"spec": {"template": {"spec": {"nodeClassRef": {"name": "x"}, "expireAfter": "720h",
                                           "requirements": [{"key": "k", "operator": "In", "values": ["a"]}]}},
                     "limits": {"cpu": 1000}, "weight": 5, "disruption": {"budget": []}}}
    assert check(BY_KIND["NodePool"], pool) == ['unknown field "spec.disruption.budget"']
    patch = {"metadata": {"annotations": {"a": "b"}}, "spec": {"$setElementOrder/x": [], "weight": 3}}
    assert check(BY_KIND["NodePool"], patch) == []
