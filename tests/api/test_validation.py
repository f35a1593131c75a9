"""validate_nodepool / validate_nodeclaim: every rule of docs/semantics.md §1.1 and the Karpenter v1 CRD rules."""

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from api.validation import nodepool_warnings, validate_nodeclaim, validate_nodepool

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

VALID: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {
        "template": {
            "metadata": {"labels": {"team": "web"}},
            "spec": {
                "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}],
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
            },
        },
        "disruption": {"budgets": [{"nodes": "10%"}]},
    },
}


def with_(path: str, value: Any) -> dict[str, Any]:
    """VALID with the dotted `path` set to `value` (numbers index lists); `...` deletes the key."""
    doc = copy.deepcopy(VALID)
    keys: list[Any] = [int(k) if k.isdigit() else k for k in path.split(".")]
    target: Any = doc
    for k in keys[:-1]:
        if isinstance(k, str) and k not in target:
            target[k] = {}
        target = target[k]
    if value is ...:
        del target[keys[-1]]
    else:
        target[keys[-1]] = value
    return doc


def test_valid_pool_has_no_problems() -> None:
    assert validate_nodepool(VALID) == []


@pytest.mark.parametrize("name", ["nodepool-maintenance-window.yaml", "nodepool-aks-nap.yaml"])
def test_examples_are_valid(name: str) -> None:
    assert validate_nodepool(yaml.safe_load((EXAMPLES / name).read_text())) == []


def test_schedule_without_duration_names_the_budget() -> None:
    doc = with_("spec.disruption.budgets", [{"nodes": "10%"}, {"nodes": "0", "schedule": "@daily"}])
    assert validate_nodepool(doc) == ["spec.disruption.budgets[1]: 'schedule' must be set with 'duration'"]
    doc = with_("spec.disruption.budgets", [{"nodes": "0", "duration": "1h"}])
    assert validate_nodepool(doc) == ["spec.disruption.budgets[0]: 'schedule' must be set with 'duration'"]


@pytest.mark.parametrize(
    ("budget", "fragment"),
    [
        ({"nodes": "101%"}, "'nodes' '101%'"),
        ({"nodes": "1000a%"}, "'nodes' '1000a%'"),
        ({"nodes": "-1"}, "'nodes' '-1'"),
        ({"nodes": "10 %"}, "'nodes' '10 %'"),
        ({"nodes": "10%\n"}, "'nodes' '10%\\n'"),  # `$` is the end of the text, as in the API server
        ({"nodes": 5}, "nodes: must be a string"),
        ({"nodes": "1", "reasons": ["Expired"]}, "'reasons' value 'Expired'"),
        ({"nodes": "1", "reasons": ["Empty", "Empty"]}, "must not repeat"),
        ({"nodes": "1", "reasons": "Empty"}, "reasons: must be a list of strings"),
        ({"nodes": "0", "schedule": "@every 1h", "duration": "1h"}, "must be a 5-field cron expression"),
        ({"nodes": "0", "schedule": "0 9 * *", "duration": "1h"}, "must be a 5-field cron expression"),
        ({"nodes": "0", "schedule": "0 9 * * 8", "duration": "1h"}, "cannot be parsed"),
        ({"nodes": "0", "schedule": "@hourly x", "duration": "1h"}, "cannot be parsed"),
        ({"nodes": "0", "schedule": "@daily", "duration": "30s"}, "'duration' '30s' does not match"),
        ({"nodes": "0", "schedule": "@daily", "duration": "1d"}, "'duration' '1d' does not match"),
        ({"nodes": "0", "schedule": "@daily", "duration": "1h", "timeZone": "Moon/Base"}, "unknown time zone"),
        ({"nodes": "0", "schedule": "@daily", "duration": "1h", "timeZone": "Local"}, "not an explicit IANA"),
        ({"nodes": "0", "timeZone": "UTC"}, "'timeZone' requires 'schedule'"),
        ({"nodes": "0", "window": "1h"}, "budgets[0].window: unknown field"),
    ],
)
def test_budget_rules(budget: dict[str, Any], fragment: str) -> None:
    problems = validate_nodepool(with_("spec.disruption.budgets", [budget]))
    assert any(fragment in p for p in problems), problems
    assert all(p.startswith("spec.disruption.budgets[0]") for p in problems), problems


@pytest.mark.parametrize(
    "budget",
    [
        {"nodes": "0"}, {"nodes": "100%"}, {"nodes": "99%"}, {"nodes": "250"}, {},
        {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"},
        {"nodes": "0", "schedule": "@annually", "duration": "20m0s"},
        {"nodes": "0", "schedule": "*/5 1,2 ? * *", "duration": "2h20m"},
        {"nodes": "0", "schedule": "0 9 * * 1-5", "duration": "8h", "timeZone": "Europe/Berlin"},
        {"nodes": "1", "reasons": []},
        {"nodes": "1", "reasons": ["Empty", "Drifted", "Underutilized"]},
    ],
)
def test_valid_budgets(budget: dict[str, Any]) -> None:
    assert validate_nodepool(with_("spec.disruption.budgets", [budget])) == []


def test_at_most_fifty_budgets_and_all_problems_reported() -> None:
    budgets = [{"nodes": "1"}] * 51 + [{"nodes": "x"}, {"nodes": "0", "schedule": "@daily"}]
    problems = validate_nodepool(with_("spec.disruption.budgets", budgets))
    assert "spec.disruption.budgets: has 53 items, at most 50 allowed (maxItems)" in problems
    assert any(p.startswith("spec.disruption.budgets[51]: 'nodes'") for p in problems)
    assert "spec.disruption.budgets[52]: 'schedule' must be set with 'duration'" in problems


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("spec.disruption.consolidationPolicy", "WhenUnderutilized", "spec.disruption.consolidationPolicy: "),
        ("spec.disruption.consolidationPolicy", "balanced", "'balanced' is not one of WhenEmpty, WhenEmptyOr"),
        ("spec.disruption.consolidateAfter", "1.5h", "spec.disruption.consolidateAfter: '1.5h' does not match"),
        ("spec.disruption.consolidateAfter", "never", "does not match"),
        ("spec.template.spec.expireAfter", "30d", "spec.template.spec.expireAfter: '30d' does not match"),
        ("spec.template.spec.terminationGracePeriod", "Never", "spec.template.spec.terminationGracePeriod: 'Never'"),
        ("spec.template.spec.nodeClassRef", ..., "spec.template.spec.nodeClassRef: required field is missing"),
        ("spec.template.spec.nodeClassRef.name", "", "nodeClassRef.name: name may not be empty"),
        ("spec.template.spec.nodeClassRef.group", "karpenter.k8s.aws/v1", "must not contain '/'"),
        ("spec.template.spec.requirements", ..., "spec.template.spec.requirements: required field is missing"),
        ("spec.template.spec.requirements.0.operator", "Equals", "requirements[0].operator: 'Equals' is not one of"),
        ("spec.template.spec.requirements.0.values", [], "operator 'In' must have a value defined"),
        ("spec.template.spec.requirements.0.minValues", 2, "must have at least that many values"),
        ("spec.template.spec.requirements.0.minValues", 51, "minValues: must be between 1 and 50"),
        ("spec.template.spec.requirements.0.key", "kubernetes.io/hostname", "'kubernetes.io/hostname' is restricted"),
        ("spec.template.spec.requirements.0.key", "karpenter.sh/nodepool", "is restricted"),
        ("spec.template.spec.requirements.0.key", "karpenter.sh/custom", 'label domain "karpenter.sh" is restricted'),
        ("spec.template.spec.requirements.0.key", "example.kubernetes.io/x", 'label domain "kubernetes.io"'),
        ("spec.template.spec.requirements.0.key", "x.k8s.io/y", 'label domain "k8s.io" is restricted'),
        ("spec.template.spec.requirements.0.key", "bad key", "is not a qualified name"),
        ("spec.template.spec.taints", [{"key": "a", "effect": "Sometimes"}], "taints[0].effect: 'Sometimes'"),
        ("spec.template.spec.startupTaints", [{"effect": "NoSchedule"}], "startupTaints[0].key: required"),
        ("spec.template.metadata.labels", {"karpenter.sh/nodepool": "x"}, "labels[karpenter.sh/nodepool]: label"),
        ("spec.template.metadata.labels", {"team": "a b"}, "is not a valid label value"),
        ("spec.template.metadata.labels", {"team": 5}, "value must be a string"),
        ("spec.template.spec.kubelet", {}, "spec.template.spec.kubelet: unknown field"),
        ("spec.limits", {"cpu": "lots"}, "spec.limits[cpu]: 'lots' is not a resource quantity"),
        ("spec.weight", 0, "spec.weight: must be between 1 and 100, got 0"),
        ("spec.weight", 101, "spec.weight: must be between 1 and 100"),
        ("spec.weight", "5", "spec.weight: must be an integer"),
        ("metadata.name", "Bad_Name", "metadata.name: 'Bad_Name' must be a lowercase DNS name"),
        ("metadata.name", "a" * 64, "at most 63 characters"),
        ("apiVersion", "karpenter.sh/v1beta1", "apiVersion: must be 'karpenter.sh/v1'"),
        ("spec.template.spec", ..., "spec.template.spec: required field is missing"),
        ("spec.disruption.budgets", "10%", "spec.disruption.budgets: must be a list"),
    ],
)
def test_field_rules(path: str, value: Any, expected: str) -> None:
    problems = validate_nodepool(with_(path, value))
    assert any(expected in p for p in problems), problems


@pytest.mark.parametrize(
    ("requirement", "ok"),
    [
        ({"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["4"]}, True),
        ({"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lt", "values": ["4", "8"]}, False),
        ({"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["-1"]}, False),
        ({"key": "topology.kubernetes.io/zone", "operator": "Exists"}, True),
        ({"key": "topology.kubernetes.io/zone", "operator": "DoesNotExist", "values": ["a"]}, False),
        ({"key": "node.kubernetes.io/instance-type", "operator": "NotIn", "values": ["t3.nano"]}, True),
        ({"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64", "amd64"], "minValues": 2}, True),
        ({"key": "node-restriction.kubernetes.io/x", "operator": "Exists"}, True),
        ({"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5 large"]}, False),
        ({"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["x" * 64]}, False),
    ],
)
def test_requirement_operators(requirement: dict[str, Any], ok: bool) -> None:
    problems = validate_nodepool(with_("spec.template.spec.requirements", [requirement]))
    assert (problems == []) is ok, problems


def test_deprecated_expire_after_is_a_warning_not_a_problem() -> None:
    doc = with_("spec.disruption.expireAfter", "720h")
    assert validate_nodepool(doc) == []
    assert nodepool_warnings(doc) and "deprecated" in nodepool_warnings(doc)[0]
    bad = with_("spec.disruption.expireAfter", "30d")
    assert any(p.startswith("spec.template.spec.expireAfter: '30d'") for p in validate_nodepool(bad))


def test_budget_that_always_blocks_is_a_warning() -> None:
    doc = with_("spec.disruption.budgets", [{"nodes": "10%"}, {"nodes": "0", "reasons": ["Drifted"]}])
    assert validate_nodepool(doc) == []
    assert nodepool_warnings(doc) == [
        "spec.disruption.budgets[1]: nodes '0' without a schedule blocks voluntary disruption (Drifted) at all times"
    ]
    windowed = with_("spec.disruption.budgets", [{"nodes": "0", "schedule": "@daily", "duration": "1h"}])
    assert nodepool_warnings(windowed) == []


def test_non_objects() -> None:
    assert validate_nodepool([1]) == ["(document): must be an object, got list"]
    assert "spec: required field is missing" in validate_nodepool({"apiVersion": "karpenter.sh/v1",
                                                                   "kind": "NodePool", "metadata": {"name": "a"}})


CLAIM: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodeClaim",
    "metadata": {"name": "default-abcde"},
    "spec": {
        "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]}],
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
        "expireAfter": "720h",
    },
    "status": {"providerID": "aws:///us-east-1a/i-1"},
}


def test_nodeclaim_rules() -> None:
    assert validate_nodeclaim(CLAIM) == []
    bad = copy.deepcopy(CLAIM)
    bad["spec"]["expireAfter"] = "1y"
    bad["spec"]["resources"]["requests"]["cpu"] = "many"
    bad["spec"]["requirements"][0]["operator"] = "Like"
    del bad["spec"]["nodeClassRef"]
    problems = validate_nodeclaim(bad)
    assert problems == [
        "spec.requirements[0].operator: 'Like' is not one of In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte",
        "spec.nodeClassRef: required field is missing",
        "spec.expireAfter: '1y' does not match ^(([0-9]+(s|m|h))+|Never)$",
        "spec.resources.requests[cpu]: 'many' is not a resource quantity",
    ]
