"""deploy/crds/: generated from api/ and enforcing the same rules as `nodeflow validate`.

A small OpenAPI checker (types, required, enum, pattern, maxItems, min/max, unknown fields) runs the
CRD schemas on documents; CEL rules cannot be evaluated here, so their presence is checked by message.
"""

import copy
import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from api.ec2nodeclass_validation import validate_ec2nodeclass
from api.validation import validate_nodepool

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "deploy" / "crds"


def load_generator() -> Any:
    spec = importlib.util.spec_from_file_location("generate_crds", CRDS / "generate_crds.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def schema(name: str) -> dict[str, Any]:
    crd = yaml.safe_load((CRDS / name).read_text())
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def openapi_problems(s: dict[str, Any], value: Any, path: str = "") -> list[str]:
    """The structural-schema checks an API server applies (no CEL)."""
    if "anyOf" in s and not any(not openapi_problems(alt, value, path) for alt in s["anyOf"]):
        return [f"{path}: anyOf"]
    kind = s.get("type") or ("string" if isinstance(value, str) and "pattern" in s else None)
    checks = {"object": dict, "array": list, "string": str, "integer": int}
    if kind in checks and (not isinstance(value, checks[kind]) or isinstance(value, bool)):
        return [f"{path}: type {kind}"]
    out: list[str] = []
    if "enum" in s and value not in s["enum"]:
        out.append(f"{path}: enum")
    if kind == "string" and "pattern" in s and re.search(s["pattern"], value) is None:
        out.append(f"{path}: pattern")
    if kind == "string" and "maxLength" in s and len(value) > s["maxLength"]:
        out.append(f"{path}: maxLength")
    if kind == "integer" and not (s.get("minimum", value) <= value <= s.get("maximum", value)):
        out.append(f"{path}: range")
    if kind == "array":
        if len(value) > s.get("maxItems", len(value)):
            out.append(f"{path}: maxItems")
        for i, item in enumerate(value):
            out += openapi_problems(s.get("items", {}), item, f"{path}[{i}]")
    if kind == "object":
        props = s.get("properties")
        defaulted = {k for k, v in (props or {}).items() if "default" in v}  # the API server defaults first
        out += [f"{path}.{r}: required" for r in s.get("required", []) if r not in value and r not in defaulted]
        for key, item in value.items():
            if props is not None and key in props:
                out += openapi_problems(props[key], item, f"{path}.{key}")
            elif isinstance(s.get("additionalProperties"), dict):
                out += openapi_problems(s["additionalProperties"], item, f"{path}.{key}")
            elif props is not None and not s.get("x-kubernetes-preserve-unknown-fields"):
                out.append(f"{path}.{key}: unknown field")
    return out


def test_committed_crds_are_what_the_generator_writes() -> None:
    rendered = load_generator().render()
    for name, text in rendered.items():
        assert (CRDS / name).read_text() == text, f"{name} is stale: run python deploy/crds/generate_crds.py"


def test_crd_basics() -> None:
    for name, kind in (("karpenter.sh_nodepools.yaml", "NodePool"), ("karpenter.sh_nodeclaims.yaml", "NodeClaim")):
        crd = yaml.safe_load((CRDS / name).read_text())
        assert crd["kind"] == "CustomResourceDefinition"
        assert crd["spec"]["group"] == "karpenter.sh" and crd["spec"]["names"]["kind"] == kind
        assert crd["spec"]["scope"] == "Cluster"
        assert [v["name"] for v in crd["spec"]["versions"]] == ["v1"]


def test_nodepool_defaults_and_cel_rules() -> None:
    spec = schema("karpenter.sh_nodepools.yaml")["properties"]["spec"]["properties"]
    disruption = spec["disruption"]["properties"]
    assert disruption["budgets"]["default"] == [{"nodes": "10%"}]
    assert disruption["budgets"]["maxItems"] == 50
    assert disruption["budgets"]["items"]["properties"]["reasons"]["maxItems"] == 50
    assert disruption["consolidateAfter"]["default"] == "0s"
    assert disruption["consolidationPolicy"]["default"] == "WhenEmptyOrUnderutilized"
    assert spec["template"]["properties"]["spec"]["properties"]["expireAfter"]["default"] == "720h"
    rules = {r["message"]: r["rule"] for r in disruption["budgets"]["x-kubernetes-validations"]}
    assert rules["'schedule' must be set with 'duration'"] == "self.all(x, has(x.schedule) == has(x.duration))"
    req_rules = spec["template"]["properties"]["spec"]["properties"]["requirements"]["x-kubernetes-validations"]
    messages = {r["message"] for r in req_rules}
    assert "requirements with operator 'In' must have a value defined" in messages
    assert "requirements with 'minValues' must have at least that many values specified in the 'values' field" \
        in messages


VALID = yaml.safe_load((ROOT / "examples" / "nodepool-maintenance-window.yaml").read_text())


def test_valid_examples_pass_the_schema() -> None:
    assert openapi_problems(schema("karpenter.sh_nodepools.yaml"), VALID) == []
    aks = yaml.safe_load((ROOT / "examples" / "nodepool-aks-nap.yaml").read_text())
    assert openapi_problems(schema("karpenter.sh_nodepools.yaml"), aks) == []
    seed = list(yaml.safe_load_all((ROOT / "examples" / "seed-budgets.yaml").read_text()))
    claims = [d for d in seed if d["kind"] == "NodeClaim"]
    assert all(openapi_problems(schema("karpenter.sh_nodeclaims.yaml"), c) == [] for c in claims)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("spec.disruption.budgets", [{"nodes": "101%"}]),
        ("spec.disruption.budgets", [{"nodes": "1", "reasons": ["Expired"]}]),
        ("spec.disruption.budgets", [{"nodes": "0", "schedule": "@every 1h", "duration": "1h"}]),
        ("spec.disruption.budgets", [{"nodes": "0", "schedule": "@daily", "duration": "30s"}]),
        ("spec.disruption.budgets", [{"nodes": "1"}] * 51),
        ("spec.disruption.consolidateAfter", "1.5h"),
        ("spec.disruption.consolidationPolicy", "balanced"),
        ("spec.template.spec.expireAfter", "30d"),
        ("spec.template.spec.terminationGracePeriod", "Never"),
        ("spec.template.spec.requirements", [{"key": "a", "operator": "Like"}]),
        ("spec.template.spec.requirements", [{"key": "a", "operator": "In", "values": ["not valid"]}]),
        ("spec.template.spec.taints", [{"key": "a", "effect": "Bad"}]),
        ("spec.weight", 0),
        ("spec.limits", {"cpu": "lots"}),
        ("spec.template.spec.kubelet", {}),
    ],
)
def test_schema_rejects_what_validate_rejects(path: str, value: Any) -> None:
    doc = copy.deepcopy(VALID)
    keys = path.split(".")
    target = doc
    for k in keys[:-1]:
        target = target[k]
    target[keys[-1]] = value
    assert validate_nodepool(doc), "validate accepts it"
    assert openapi_problems(schema("karpenter.sh_nodepools.yaml"), doc), "the CRD schema accepts it"


EC2NC = "karpenter.k8s.aws_ec2nodeclasses.yaml"
EC2NC_VALID = yaml.safe_load((ROOT / "examples" / "ec2nodeclass.yaml").read_text())


def test_ec2nodeclass_crd_basics_and_cel_rules() -> None:
    crd = yaml.safe_load((CRDS / EC2NC).read_text())
    assert crd["metadata"]["name"] == "ec2nodeclasses.karpenter.k8s.aws"
    assert crd["spec"]["group"] == "karpenter.k8s.aws" and crd["spec"]["names"]["kind"] == "EC2NodeClass"
    assert crd["spec"]["scope"] == "Cluster"
    spec = schema(EC2NC)["properties"]["spec"]
    defaults = spec["properties"]["metadataOptions"]["default"]
    assert defaults == {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled", "httpPutResponseHopLimit": 1,
                        "httpTokens": "required"}
    top = {r["message"] for r in schema(EC2NC)["x-kubernetes-validations"]}
    assert "must specify exactly one of ['role', 'instanceProfile']" in top
    assert "must specify amiFamily if amiSelectorTerms does not contain an alias" in top
    ami = {r["message"] for r in spec["properties"]["amiSelectorTerms"]["x-kubernetes-validations"]}
    assert "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms" in ami
    kustomization = yaml.safe_load((ROOT / "deploy" / "kustomization.yaml").read_text())
    assert f"crds/{EC2NC}" in kustomization["resources"]


def test_ec2nodeclass_example_passes_the_schema() -> None:
    assert openapi_problems(schema(EC2NC), EC2NC_VALID) == []


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("spec.amiFamily", "Ubuntu"),
        ("spec.subnetSelectorTerms", [{"id": "subnet-1"}] * 31),
        ("spec.subnetSelectorTerms", [{"id": "vpc-1"}]),
        ("spec.metadataOptions", {"httpTokens": "never"}),
        ("spec.metadataOptions", {"httpPutResponseHopLimit": 65}),
        ("spec.blockDeviceMappings", [{"ebs": {"volumeSize": "100", "volumeType": "gp3"}}]),
        ("spec.blockDeviceMappings", [{"ebs": {"volumeSize": "10Gi", "volumeType": "gp9"}}]),
        ("spec.kubelet", {"maxPods": -1}),
        ("spec.instanceStorePolicy", "RAID1"),
        ("spec.launchTemplateName", "lt"),
    ],
)
def test_ec2nodeclass_schema_rejects_what_validate_rejects(path: str, value: Any) -> None:
    doc = copy.deepcopy(EC2NC_VALID)
    keys = path.split(".")
    doc[keys[0]][keys[1]] = value
    assert validate_ec2nodeclass(doc), "validate accepts it"
    assert openapi_problems(schema(EC2NC), doc), "the CRD schema accepts it"


DP = "nodeflow.dev_disruptionpolicies.yaml"
DP_VALID = yaml.safe_load((ROOT / "examples" / "disruption-policy.yaml").read_text())


def test_disruptionpolicy_crd_basics_and_cel_rules() -> None:
    crd = yaml.safe_load((CRDS / DP).read_text())
    assert crd["metadata"]["name"] == "disruptionpolicies.nodeflow.dev"
    assert crd["spec"]["group"] == "nodeflow.dev" and crd["spec"]["names"]["kind"] == "DisruptionPolicy"
    assert crd["spec"]["scope"] == "Cluster"
    assert [v["name"] for v in crd["spec"]["versions"]] == ["v1alpha1"]
    spec = schema(DP)["properties"]["spec"]
    assert {r["message"] for r in spec["x-kubernetes-validations"]} == {
        "exactly one of 'nodePools' and 'nodePoolSelector' must be set"}
    escalation = spec["properties"]["escalation"]["x-kubernetes-validations"]
    assert escalation[0]["message"] == "forceAfter must be longer than notifyAfter"
    kustomization = yaml.safe_load((ROOT / "deploy" / "kustomization.yaml").read_text())
    assert f"crds/{DP}" in kustomization["resources"]


def test_disruptionpolicy_examples_pass_the_schema() -> None:
    assert openapi_problems(schema(DP), DP_VALID) == []
    for path in ("deploy/examples/disruptionpolicies.yaml", "examples/plan-calendar.yaml"):
        docs = [d for d in yaml.safe_load_all((ROOT / path).read_text()) if d and d["kind"] == "DisruptionPolicy"]
        assert docs and all(openapi_problems(schema(DP), d) == [] for d in docs), path


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("spec.expiration", {"gracefulExpireAfter": "25d"}),
        ("spec.drift", {"waves": [1.5]}),
        ("spec.drift", {"maxFailedReplacements": -1}),
        ("spec.drift", {"bakeTime": "1.5h"}),
        ("spec.hooks", {"preDisruption": {"url": "http://x", "ack": "Maybe"}}),
        ("spec.hooks", {"preDisruption": {"url": "ftp://x"}}),
        ("spec.hooks", {"preDisruption": {"ack": "Required"}}),
        ("spec.hooks", {"preDisruption": {"url": "http://x", "onTimeout": "Later"}}),
        ("spec.consolidation", {"minSavingsPerHour": 0.05}),
        ("spec.consolidation", {"minSavingsPerHour": "five"}),
        ("spec.calendar", {"allowWindows": [{"schedule": "@every 1h", "duration": "1h"}]}),
        ("spec.calendar", {"allowWindows": [{"schedule": "0 1 * * *"}]}),
        ("spec.calendar", {"exclusions": [{"to": "2026-12-01"}]}),
        ("spec.calendar", {"zone": "UTC"}),
    ],
)
def test_disruptionpolicy_schema_rejects_what_validate_rejects(path: str, value: Any) -> None:
    from api.disruption_policy_validation import validate_disruption_policy

    doc = copy.deepcopy(DP_VALID)
    keys = path.split(".")
    doc[keys[0]][keys[1]] = value
    assert validate_disruption_policy(doc), "validate accepts it"
    assert openapi_problems(schema(DP), doc), "the CRD schema accepts it"
