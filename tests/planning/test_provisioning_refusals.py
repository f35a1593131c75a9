"""planning/provisioning/provisioner.py when a pool cannot serve a pod: limits, a class that is not Ready. Each refusal
names the pool and the reason (the Events are built from it), and nothing launches for a pod no pool can serve."""

from __future__ import annotations

from typing import Any

from planning_factory import node_and_claim, nodepool, pod, snapshot

from api import labels as L
from planning.provisioning.provisioner import Exclusion, decide

ON_DEMAND_AMD64 = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
                   {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]}]


def _node_class(name: str, ready: bool) -> dict[str, Any]:
    return {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": name},
            "spec": {"role": "NodeRole", "amiSelectorTerms": [{"alias": "al2023@latest"}],
                     "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
                     "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}]},
            "status": {"amis": [{"id": "ami-1", "name": "al2023", "requirements": [
                {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]}]}],
                "subnets": [{"id": "subnet-a", "zone": "us-east-1a"}], "securityGroups": [{"id": "sg-a"}],
                "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                "reason": "Ready" if ready else "AMINotFound",
                                "lastTransitionTime": "2026-11-22T19:00:00Z"}]}}


def test_a_pool_at_its_limits_passes_the_pod_to_the_next_pool_by_weight() -> None:
    heavy = nodepool("heavy", weight=50, limits={"cpu": "4"}, requirements=ON_DEMAND_AMD64)
    decision = decide(snapshot(heavy, nodepool("default", requirements=ON_DEMAND_AMD64),
                               node_and_claim("a", "m5.xlarge", pool="heavy"), pod("busy", "a", cpu="3500m"),
                               pod("web-0", None, cpu="1")))
    (launch,) = decision.launches
    assert launch.node_pool == "default" and launch.pods == ["default/web-0"]
    assert decision.unservable == [] and decision.pools_at_limit == {}  # served: no pool needs to say so


def test_every_pool_at_its_limits_names_each_and_launches_nothing() -> None:
    objs = [nodepool("heavy", weight=50, limits={"cpu": "4"}), nodepool("default", limits={"memory": "16Gi"}),
            node_and_claim("a", "m5.xlarge", pool="heavy"), node_and_claim("b", "m5.xlarge", pool="default"),
            pod("busy-a", "a", cpu="3500m"), pod("busy-b", "b", cpu="3500m"), pod("web-0", None, cpu="1")]
    decision = decide(snapshot(*objs))
    assert decision.launches == []
    (un,) = decision.unservable
    assert [(e.node_pool, e.reason) for e in un.exclusions] == [("heavy", Exclusion.LIMITS),
                                                                ("default", Exclusion.LIMITS)]
    assert decision.pools_at_limit == {"heavy": "limits cpu=4 reached", "default": "limits memory=16Gi reached"}


def test_a_pool_whose_node_class_is_not_ready_launches_nothing_and_says_why() -> None:
    objs = [_node_class("default", ready=False), nodepool(requirements=ON_DEMAND_AMD64), pod("web-0", None)]
    decision = decide(snapshot(*objs))
    assert decision.launches == []
    (un,) = decision.unservable
    (excl,) = un.exclusions
    assert (excl.node_pool, excl.reason) == ("default", Exclusion.NODE_CLASS)
    assert excl.detail == "cannot launch: EC2NodeClass default not Ready: AMINotFound"
    ready = decide(snapshot(_node_class("default", ready=True), nodepool(requirements=ON_DEMAND_AMD64),
                            pod("web-0", None)))
    assert len(ready.launches) == 1 and ready.unservable == []

