"""The CapacityBuffer CRD (deploy/crds/autoscaling.x-k8s.io_capacitybuffers.yaml) through the real `kubernetes`
client against the simulator: refused, defaulted and served as kube-apiserver does with Karpenter v1.14's CRD
(docs/semantics.md §20), and the same rules in api/capacity_buffer.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client import ApiException
from pydantic import ValidationError

from api import capacity_buffer as cb
from deploy.crds.generate_crds import CRD_DIR, render
from simulator.server import Simulator

CB = (cb.GROUP, cb.VERSION, "default", cb.PLURAL)


def body(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": cb.API_VERSION, "kind": cb.KIND, "metadata": {"name": "b", "namespace": "default"},
            "spec": spec}


def create(k8s: client.ApiClient, obj: dict[str, Any]) -> dict[str, Any]:
    return client.CustomObjectsApi(k8s).create_namespaced_custom_object(*CB, obj)


def refused(k8s: client.ApiClient, obj: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ApiException) as exc:
        create(k8s, obj)
    assert exc.value.status == 422, exc.value.body
    return [(c["field"], c["message"]) for c in json.loads(exc.value.body)["details"]["causes"]]


def test_the_crd_file_is_what_the_generator_writes() -> None:
    name = f"{cb.GROUP}_{cb.PLURAL}.yaml"
    assert (CRD_DIR / name).read_text(encoding="utf-8") == render()[name]
    crd = yaml.safe_load(render()[name])
    assert crd["spec"]["scope"] == "Namespaced" and crd["spec"]["names"]["shortNames"] == ["cb"]
    assert crd["spec"]["versions"][0]["subresources"] == {"status": {}}


@pytest.mark.parametrize(("spec", "message"), [
    ({"podTemplateRef": {"name": "t"}, "scalableRef": {"kind": "Deployment", "name": "w"}, "replicas": 1},
     cb.ONE_REF_MESSAGE),
    ({"podTemplateRef": {"name": "t"}}, cb.PODTEMPLATE_NEEDS_COUNT_MESSAGE),
])
def test_the_cel_rules_refuse_as_kube_apiserver_and_the_model_agree(sim: Simulator, k8s: client.ApiClient,
                                                                    spec: dict[str, Any], message: str) -> None:
    assert refused(k8s, body(**spec)) == [("spec", f'Invalid value: "object": {message}')]
    with pytest.raises(ValidationError, match=message):
        cb.CapacityBuffer.model_validate(body(**spec))


def test_schema_checks_refuse_negative_counts_and_empty_names(sim: Simulator, k8s: client.ApiClient) -> None:
    fields = [f for f, _ in refused(k8s, body(scalableRef={"kind": "Deployment", "name": ""}, replicas=-1))]
    assert "spec.replicas" in fields and "spec.scalableRef.name" in fields
    assert [f for f, _ in refused(k8s, body(podTemplateRef={"name": "t"}, limits={"cpu": "lots"}))] == \
        ["spec.limits[cpu]"]
    with pytest.raises(ValidationError, match="is not a quantity"):
        cb.CapacityBuffer.model_validate(body(podTemplateRef={"name": "t"}, limits={"cpu": "lots"}))


def test_a_valid_buffer_is_stored_with_the_default_strategy_and_its_status_is_written_apart(
        sim: Simulator, k8s: client.ApiClient) -> None:
    stored = create(k8s, body(podTemplateRef={"name": "t"}, replicas=2, status={"replicas": 9}))
    assert stored["spec"]["provisioningStrategy"] == cb.ACTIVE_CAPACITY
    assert "status" not in stored["spec"]  # pruned: an unknown field
    api = client.CustomObjectsApi(k8s)
    api.patch_namespaced_custom_object_status(*CB, "b", {"status": {"replicas": 2, "conditions": [
        {"type": cb.READY_FOR_PROVISIONING, "status": "True", "reason": cb.REASON_RESOLVED, "message": "ok",
         "lastTransitionTime": "2026-11-22T20:00:00Z"}]}})
    got = api.get_namespaced_custom_object(*CB, "b")
    assert got["status"]["replicas"] == 2 and got["status"]["conditions"][0]["type"] == cb.READY_FOR_PROVISIONING
    assert cb.CapacityBuffer.model_validate(got).status.condition(cb.READY_FOR_PROVISIONING).status == "True"
    pt = client.CoreV1Api(k8s).create_namespaced_pod_template("default", {
        "metadata": {"name": "t"}, "template": {"spec": {"containers": [{"name": "c", "image": "pause"}]}}})
    assert pt.metadata.name == "t"
