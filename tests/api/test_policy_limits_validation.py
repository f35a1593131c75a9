"""api/policy_limits_validation.py: deprecations that leave no NodePool to launch in, and jitter with nothing to
move earlier, are reported by `nodeflow validate` on the policy (docs/semantics.md §15.11-15.12)."""

from __future__ import annotations

from typing import Any

from api.disruption_policy import load_disruption_policy
from api.disruption_policy_validation import policy_set_problems
from api.nodepool import NodePool


def pool(name: str, expire_after: str = "720h", replicas: int | None = None) -> NodePool:
    spec: dict[str, Any] = {"template": {"spec": {
        "requirements": [], "expireAfter": expire_after,
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}}}
    if replicas is not None:
        spec["replicas"] = replicas
    return NodePool.model_validate({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
                                    "spec": spec})


def policy(name: str, pools: list[str], **spec: Any) -> Any:
    return load_disruption_policy({"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy",
                                   "metadata": {"name": name}, "spec": {"nodePools": pools, **spec}})


def test_deprecating_every_dynamic_pool_is_reported():
    pools = [pool("a"), pool("b"), pool("static", replicas=2)]
    retire = policy("retire", ["a", "b"], provisioning={"deprecated": True})
    ((name, problem),) = policy_set_problems(pools, [retire])
    assert name == "retire" and problem.startswith("spec.provisioning.deprecated: every NodePool (a, b) is deprecated")
    assert policy_set_problems(pools, [policy("retire", ["a"], provisioning={"deprecated": True})]) == []


def test_jitter_on_pools_that_never_expire_is_reported():
    ((name, problem),) = policy_set_problems([pool("a", "Never")], [policy("j", ["a"], expiration={"jitter": "10%"})])
    assert name == "j" and "spec.expiration.jitter: 10% has no effect" in problem
    assert policy_set_problems([pool("a")], [policy("j", ["a"], expiration={"jitter": "10%"})]) == []
    graceful = policy("j", ["a"], expiration={"jitter": "10%", "gracefulExpireAfter": "600h"})
    assert policy_set_problems([pool("a", "Never")], [graceful]) == []
