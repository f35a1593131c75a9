"""Static NodePools (`spec.replicas`, Karpenter's StaticCapacity) in api/: the model, validation, the CRD."""

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from api.nodepool import NodePool
from api.validation import (
    STATIC_LIMITS_MESSAGE,
    STATIC_TRANSITION_MESSAGE,
    STATIC_WEIGHT_MESSAGE,
    nodepool_warnings,
    validate_nodepool,
)

CRD = Path(__file__).resolve().parents[2] / "deploy" / "crds" / "karpenter.sh_nodepools.yaml"

STATIC: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "static"},
    "spec": {
        "replicas": 3,
        "template": {"spec": {
            "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}],
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
        }},
        "limits": {"nodes": 4},
        "disruption": {"budgets": [{"nodes": "1"}]},
    },
}


def static(**spec: Any) -> dict[str, Any]:
    doc = copy.deepcopy(STATIC)
    for key, value in spec.items():
        if value is ...:
            doc["spec"].pop(key, None)
        else:
            doc["spec"][key] = value
    return doc


def test_replicas_round_trip_and_accessors() -> None:
    pool = NodePool.model_validate(STATIC)
    assert pool.to_dict() == STATIC
    assert pool.replicas == 3 and pool.is_static
    dynamic = NodePool.model_validate(static(replicas=...))
    assert dynamic.replicas is None and not dynamic.is_static
    assert "replicas" not in dynamic.to_dict()["spec"]
    assert NodePool.model_validate(static(replicas=0)).replicas == 0  # a static pool scaled to zero


def test_replicas_does_not_change_the_template_hash() -> None:
    """Scaling a static pool is not drift: replicas is outside the template."""
    scaled = NodePool.model_validate(static(replicas=7))
    assert NodePool.model_validate(STATIC).template_hash() == scaled.template_hash()


def test_negative_replicas_is_rejected_by_the_model_and_validation() -> None:
    with pytest.raises(ValueError):
        NodePool.model_validate(static(replicas=-1))
    assert validate_nodepool(static(replicas=-1)) == ["spec.replicas: must be at least 0, got -1"]
    assert validate_nodepool(static(replicas="3")) == ["spec.replicas: must be an integer, got str"]
    assert validate_nodepool(static(replicas=True)) == ["spec.replicas: must be an integer, got bool"]


def test_a_valid_static_pool_has_no_problems() -> None:
    assert validate_nodepool(STATIC) == []
    assert validate_nodepool(static(limits=...)) == []


def test_only_limits_nodes_on_a_static_pool() -> None:
    problems = validate_nodepool(static(limits={"nodes": 4, "cpu": "100", "memory": "1Ti"}))
    assert problems == [f"spec.limits[cpu]: {STATIC_LIMITS_MESSAGE}", f"spec.limits[memory]: {STATIC_LIMITS_MESSAGE}"]
    assert validate_nodepool(static(replicas=..., limits={"cpu": "100"})) == []  # dynamic pools keep them


def test_no_weight_on_a_static_pool() -> None:
    assert validate_nodepool(static(weight=10)) == [f"spec.weight: {STATIC_WEIGHT_MESSAGE}"]
    assert validate_nodepool(static(replicas=..., weight=10)) == []


def test_warnings_explain_ignored_consolidation_and_tight_limits() -> None:
    doc = static(disruption={"consolidationPolicy": "WhenEmpty", "consolidateAfter": "0s"})
    assert nodepool_warnings(doc) == [
        "spec.disruption.consolidationPolicy is ignored on static NodePools (spec.replicas is set): their nodes are "
        "never consolidated"]
    assert nodepool_warnings(static(limits={"nodes": 2})) == [
        "spec.limits.nodes (2) is below spec.replicas (3): the pool is held at 2 node(s)"]
    equal = nodepool_warnings(static(limits={"nodes": "3"}))
    assert len(equal) == 1 and "drift is terminate-first" in equal[0]
    assert nodepool_warnings(STATIC) == []
    assert nodepool_warnings(static(replicas=..., disruption={"consolidationPolicy": "WhenEmpty"})) == []


def test_the_crd_carries_the_same_rules() -> None:
    crd = yaml.safe_load(CRD.read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["properties"]["replicas"]["type"] == "integer" and spec["properties"]["replicas"]["minimum"] == 0
    rules = {r["message"]: r["rule"] for r in spec["x-kubernetes-validations"]}
    assert rules[STATIC_TRANSITION_MESSAGE] == "has(self.replicas) == has(oldSelf.replicas)"
    assert rules[STATIC_LIMITS_MESSAGE].startswith("!has(self.replicas)")
    assert rules[STATIC_WEIGHT_MESSAGE] == "!has(self.replicas) || !has(self.weight)"
