"""NodePool model: defaults, YAML round trip, the AKS NAP alias, accessors and the drift hash."""

import copy
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from api.nodepool import NodePool

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

FULL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
  uid: 0b7c6f0e-1111-2222-3333-444455556666
  resourceVersion: "42"
  labels:
    env: prod
  annotations:
    karpenter.sh/nodepool-hash: "123"
  deletionTimestamp: "2026-11-22T10:00:00Z"
  finalizers: [karpenter.sh/termination]
spec:
  template:
    metadata:
      labels:
        team: web
      annotations:
        example.com/owner: web
    spec:
      requirements:
      - key: karpenter.sh/capacity-type
        operator: In
        values: [spot, on-demand]
        minValues: 2
      - key: karpenter.k8s.aws/instance-cpu
        operator: Gt
        values: ["3"]
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
      taints:
      - key: dedicated
        value: web
        effect: NoSchedule
      startupTaints:
      - key: example.com/agent-not-ready
        effect: NoExecute
      expireAfter: 168h
      terminationGracePeriod: 24h
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: 10m
    budgets:
    - nodes: "20%"
      reasons: [Empty, Drifted]
    - nodes: "0"
      schedule: "0 9 * * 1-5"
      duration: 8h
      timeZone: America/New_York
  limits:
    cpu: "1000"
    memory: 1000Gi
  weight: 10
status:
  resources:
    cpu: "12"
"""


def test_yaml_round_trip_is_exact() -> None:
    doc = yaml.safe_load(FULL)
    pool = NodePool.model_validate(doc)
    assert pool.to_dict() == doc
    assert yaml.safe_dump(pool.to_dict(), sort_keys=False) == yaml.safe_dump(doc, sort_keys=False)


@pytest.mark.parametrize("name", ["nodepool-maintenance-window.yaml", "seed-budgets.yaml"])
def test_examples_round_trip(name: str) -> None:
    doc = next(d for d in yaml.safe_load_all((EXAMPLES / name).read_text()) if d["kind"] == "NodePool")
    assert NodePool.model_validate(doc).to_dict() == doc


def test_unknown_fields_survive() -> None:
    doc = yaml.safe_load(FULL)
    doc["spec"]["template"]["spec"]["kubelet"] = {"maxPods": 110}
    doc["spec"]["replicas"] = 3
    assert NodePool.model_validate(doc).to_dict() == doc


def test_accessors() -> None:
    pool = NodePool.model_validate(yaml.safe_load(FULL))
    assert pool.name == "default"
    assert pool.expire_after == timedelta(hours=168)
    assert pool.consolidate_after == timedelta(minutes=10)
    assert pool.termination_grace_period == timedelta(hours=24)
    assert pool.consolidation_policy == "WhenEmpty"
    assert [b.nodes for b in pool.budgets] == ["20%", "0"]
    assert pool.budgets[1].time_zone == "America/New_York"
    assert [r.key for r in pool.requirements] == ["karpenter.sh/capacity-type", "karpenter.k8s.aws/instance-cpu"]
    assert pool.requirements[0].min_values == 2
    assert pool.weight == 10
    assert pool.metadata.deletion_timestamp is not None
    assert pool.metadata.resource_version == "42"
    assert pool.template_labels == {"team": "web"}
    assert pool.annotation("karpenter.sh/nodepool-hash") == "123"


def test_defaults() -> None:
    pool = NodePool.model_validate({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "p"},
                                    "spec": {"template": {"spec": {"requirements": []}}}})
    assert pool.expire_after == timedelta(hours=720)
    assert pool.consolidate_after == timedelta(0)
    assert pool.consolidation_policy == "WhenEmptyOrUnderutilized"
    assert [(b.nodes, b.reasons) for b in pool.budgets] == [("10%", None)]
    assert pool.termination_grace_period is None
    assert pool.weight == 0
    defaulted = pool.defaulted()["spec"]
    assert defaulted["disruption"] == {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s",
                                       "budgets": [{"nodes": "10%"}]}
    assert defaulted["template"]["spec"]["expireAfter"] == "720h"
    # defaults do not leak into the round trip
    assert "disruption" not in pool.to_dict()["spec"]


def test_never_disables() -> None:
    doc = yaml.safe_load(FULL)
    doc["spec"]["disruption"]["consolidateAfter"] = "Never"
    doc["spec"]["template"]["spec"]["expireAfter"] = "Never"
    pool = NodePool.model_validate(doc)
    assert pool.consolidate_after is None and pool.expire_after is None


def test_explicit_empty_budgets_and_reasons_are_kept() -> None:
    doc = yaml.safe_load(FULL)
    doc["spec"]["disruption"]["budgets"] = [{"nodes": "1", "reasons": []}]
    pool = NodePool.model_validate(doc)
    assert pool.budgets[0].reasons == []
    doc["spec"]["disruption"]["budgets"] = []
    assert NodePool.model_validate(doc).budgets == []


def test_aks_nap_expire_after_alias_moves_with_a_warning() -> None:
    doc = yaml.safe_load((EXAMPLES / "nodepool-aks-nap.yaml").read_text())
    original = copy.deepcopy(doc)
    pool = NodePool.model_validate(doc)
    assert doc == original  # input untouched
    assert pool.expire_after is None  # "Never"
    assert pool.spec.template.spec.expire_after == "Never"
    assert "expireAfter" not in pool.to_dict()["spec"]["disruption"]
    assert pool.to_dict()["spec"]["template"]["spec"]["expireAfter"] == "Never"
    assert len(pool.warnings) == 1 and "deprecated" in pool.warnings[0]


def test_alias_loses_to_the_template_value() -> None:
    doc = yaml.safe_load(FULL)
    doc["spec"]["disruption"]["expireAfter"] = "Never"
    pool = NodePool.model_validate(doc)
    assert pool.expire_after == timedelta(hours=168)
    assert "ignored" in pool.warnings[0]


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("spec", "disruption", "consolidationPolicy"), "Sometimes"),
        (("spec", "disruption", "consolidateAfter"), "soon"),
        (("spec", "template", "spec", "expireAfter"), "30d"),
        (("spec", "template", "spec", "terminationGracePeriod"), "forever"),
        (("kind",), "NodeClaim"),
    ],
)
def test_unusable_values_are_refused(path: tuple[str, ...], value: str) -> None:
    doc = yaml.safe_load(FULL)
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(ValidationError):
        NodePool.model_validate(doc)


def _hash(mutate) -> str:  # type: ignore[no-untyped-def]
    doc = yaml.safe_load(FULL)
    mutate(doc)
    return NodePool.model_validate(doc).template_hash()


BASE = _hash(lambda d: None)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d["spec"]["template"]["metadata"]["labels"].update(team="api"),
        lambda d: d["spec"]["template"]["metadata"]["annotations"].update(x="y"),
        lambda d: d["spec"]["template"]["spec"]["taints"].append({"key": "k", "effect": "NoSchedule"}),
        lambda d: d["spec"]["template"]["spec"]["startupTaints"].clear(),
        lambda d: d["spec"]["template"]["spec"]["nodeClassRef"].update(name="other"),
        lambda d: d["spec"]["template"]["spec"].update(expireAfter="Never"),
        lambda d: d["spec"]["template"]["spec"].update(terminationGracePeriod="1h"),
    ],
)
def test_template_changes_change_the_hash(mutate) -> None:  # type: ignore[no-untyped-def]
    assert _hash(mutate) != BASE


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d["spec"]["template"]["spec"]["requirements"].pop(),
        lambda d: d["spec"].update(weight=99),
        lambda d: d["spec"]["limits"].update(cpu="5"),
        lambda d: d["spec"]["disruption"].update(consolidateAfter="1h", budgets=[]),
        lambda d: d["metadata"]["labels"].update(env="dev"),
        lambda d: d["spec"]["template"]["spec"].update(expireAfter="10080m"),  # same duration, other spelling
        lambda d: d["spec"]["template"]["spec"]["taints"].insert(0, d["spec"]["template"]["spec"]["taints"].pop()),
    ],
)
def test_behavioural_fields_do_not_change_the_hash(mutate) -> None:  # type: ignore[no-untyped-def]
    assert _hash(mutate) == BASE


def test_hash_treats_absent_as_default_and_empty() -> None:
    def strip(d: dict) -> None:
        d["spec"]["template"]["spec"].pop("expireAfter")

    def explicit(d: dict) -> None:
        d["spec"]["template"]["spec"]["expireAfter"] = "720h"

    def empty_labels(d: dict) -> None:
        d["spec"]["template"]["metadata"]["labels"] = {}

    def no_labels(d: dict) -> None:
        d["spec"]["template"]["metadata"].pop("labels")

    assert _hash(strip) == _hash(explicit)
    assert _hash(empty_labels) == _hash(no_labels)
