"""Karpenter v1.15's API changes in the models, `nodeflow validate` and the CRDs: consolidateAfter is optional with
default 0s (kubernetes-sigs/karpenter#3220), and NodeSelectorRequirement.operator is a full enum
(kubernetes-sigs/karpenter#2924)."""

from __future__ import annotations

import copy
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from api.meta import NUMERIC_OPERATOR_MESSAGE, REQUIREMENT_OPERATORS, NodeSelectorRequirement
from api.nodepool import NodePool
from api.validation import validate_nodeclaim, validate_nodepool

CRDS = Path(__file__).resolve().parents[2] / "deploy" / "crds"
CPU = "karpenter.k8s.aws/instance-cpu"
POOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "p"},
    "spec": {"template": {"spec": {
        "requirements": [], "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "d"}}},
        "disruption": {"consolidationPolicy": "WhenEmpty"}}}


def pool(disruption: dict[str, Any] | None = None, *reqs: dict[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(POOL)
    if disruption is not None:
        doc["spec"]["disruption"] = disruption
    doc["spec"]["template"]["spec"]["requirements"] = list(reqs)
    return doc


def crd_spec(name: str) -> dict[str, Any]:
    crd = yaml.safe_load((CRDS / name).read_text())
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]


# ---- consolidateAfter ----------------------------------------------------------------------------------------
def test_consolidate_after_may_be_left_out_and_means_0s() -> None:
    assert validate_nodepool(pool()) == []
    model = NodePool.model_validate(pool())
    assert model.consolidate_after == timedelta(0)
    assert "consolidateAfter" not in model.to_dict()["spec"]["disruption"]  # written back as it was read


@pytest.mark.parametrize(("value", "after"), [("Never", None), ("0s", timedelta(0)), ("1h30m", timedelta(hours=1.5))])
def test_objects_written_for_v114_keep_their_consolidate_after(value: str, after: timedelta | None) -> None:
    doc = pool({"consolidationPolicy": "WhenEmpty", "consolidateAfter": value})
    assert validate_nodepool(doc) == []
    assert NodePool.model_validate(doc).consolidate_after == after


def test_a_bad_consolidate_after_is_still_refused() -> None:
    problems = validate_nodepool(pool({"consolidateAfter": "1.5h"}))
    assert len(problems) == 1 and problems[0].startswith("spec.disruption.consolidateAfter:"), problems


def test_the_crd_defaults_consolidate_after_and_no_longer_requires_it() -> None:
    disruption = crd_spec("karpenter.sh_nodepools.yaml")["properties"]["disruption"]
    assert "consolidateAfter" not in disruption.get("required", [])
    assert disruption["properties"]["consolidateAfter"]["default"] == "0s"
    assert disruption["default"] == {"consolidateAfter": "0s"}


# ---- requirement operators --------------------------------------------------------------------------------------
def test_the_operators_are_v115s_enum_in_its_order() -> None:
    assert REQUIREMENT_OPERATORS == ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte")
    pool_req = crd_spec("karpenter.sh_nodepools.yaml")["properties"]["template"]["properties"]["spec"][
        "properties"]["requirements"]
    claim_req = crd_spec("karpenter.sh_nodeclaims.yaml")["properties"]["requirements"]
    for req in (pool_req, claim_req):
        assert req["items"]["properties"]["operator"]["enum"] == list(REQUIREMENT_OPERATORS)
        assert NUMERIC_OPERATOR_MESSAGE in {r["message"] for r in req["x-kubernetes-validations"]}


def test_an_unknown_operator_is_refused_by_the_model_and_by_validate() -> None:
    with pytest.raises(ValidationError):
        NodeSelectorRequirement.model_validate({"key": CPU, "operator": "Foo", "values": ["4"]})
    problems = validate_nodepool(pool(None, {"key": CPU, "operator": "Foo", "values": ["4"]}))
    assert problems == ["spec.template.spec.requirements[0].operator: 'Foo' is not one of In, NotIn, Exists, "
                        "DoesNotExist, Gt, Lt, Gte, Lte"]
    claim = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "c"},
             "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "d"},
                      "requirements": [{"key": CPU, "operator": "gte", "values": ["4"]}]}}
    (problem,) = validate_nodeclaim(claim)
    assert problem.startswith("spec.requirements[0].operator: 'gte' is not one of") and "did you mean" in problem


@pytest.mark.parametrize(("req", "problems"), [
    ({"key": CPU, "operator": "Gte", "values": ["4"]}, []),
    ({"key": CPU, "operator": "Lte", "values": ["16"]}, []),
    ({"key": CPU, "operator": "Gte", "values": ["4", "8"]}, [NUMERIC_OPERATOR_MESSAGE]),
    ({"key": CPU, "operator": "Lte", "values": ["four"]}, [NUMERIC_OPERATOR_MESSAGE]),
    ({"key": CPU, "operator": "Gt"}, [NUMERIC_OPERATOR_MESSAGE]),
])
def test_gte_and_lte_take_one_non_negative_integer(req: dict[str, Any], problems: list[str]) -> None:
    assert validate_nodepool(pool(None, req)) == [f"spec.template.spec.requirements[0]: {p}" for p in problems]
    if not problems:
        assert NodePool.model_validate(pool(None, req)).requirements[0].operator == req["operator"]
