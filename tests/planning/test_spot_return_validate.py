"""api/policy_spot_validation.py: spot controls on pools that cannot fall back, and a zoneBalance on pools pinned to
one zone, are reported by `nodeflow validate` on the policy (docs/semantics.md §15.5-15.6)."""

from __future__ import annotations

from typing import Any

from api import labels as L
from api.disruption_policy import load_disruption_policy
from api.disruption_policy_validation import policy_set_problems
from api.nodepool import NodePool

CT = L.CAPACITY_TYPE_LABEL


def pool(name: str, *requirements: dict[str, Any]) -> NodePool:
    spec = {"template": {"spec": {"requirements": list(requirements),
                                  "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                   "name": "default"}}}}
    return NodePool.model_validate({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
                                    "spec": spec})


def policy(pools: list[str], **spec: Any) -> Any:
    return load_disruption_policy({"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy",
                                   "metadata": {"name": "p"}, "spec": {"nodePools": pools, **spec}})


def test_spot_controls_on_pools_that_cannot_fall_back_are_reported():
    od = pool("od", {"key": CT, "operator": "In", "values": ["on-demand"]})
    spot_only = pool("spot", {"key": CT, "operator": "In", "values": ["spot"]})
    ((name, problem),) = policy_set_problems([od, spot_only], [policy(["od", "spot"], spot={"returnAfter": "30m"})])
    assert name == "p" and problem.startswith("spec.spot: has no effect: no selected NodePool (od, spot) admits both")
    both = pool("both", {"key": CT, "operator": "In", "values": ["spot", "on-demand"]})
    assert policy_set_problems([od, both], [policy(["od", "both"], spot={"maxOnDemandFraction": "25%"})]) == []
    assert policy_set_problems([pool("any")], [policy(["any"], spot={"returnAfter": "30m"})]) == []
    not_od = pool("notod", {"key": CT, "operator": "NotIn", "values": ["on-demand"]})
    assert len(policy_set_problems([not_od], [policy(["notod"], spot={"returnAfter": "30m"})])) == 1


def test_zone_balance_on_pools_pinned_to_one_zone_is_reported():
    pinned = pool("a", {"key": L.ZONE_LABEL, "operator": "In", "values": ["us-east-1a"]})
    ((_, problem),) = policy_set_problems([pinned], [policy(["a"], provisioning={"zoneBalance": 1})])
    assert problem == "spec.provisioning.zoneBalance: has no effect: every selected NodePool (a) launches in one zone"
    assert policy_set_problems([pool("b")], [policy(["b"], provisioning={"zoneBalance": 1})]) == []
