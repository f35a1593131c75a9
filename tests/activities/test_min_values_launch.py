"""`--min-values-policy` at the launch, through boto3 against the stand-in EC2 and the simulator
(planning/scheduling/min_values.py; docs/semantics.md §17.2): a NodeClaim whose types carry fewer instance families
than its pool's `minValues` is refused under Strict (LaunchFailed, nothing sent to EC2) and, under BestEffort,
created with `minValues` lowered to the families there are and `karpenter.sh/nodeclaim-min-values-relaxed: "true"`,
then launched with one CreateFleet."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from support.nodeclass_world import AwsWorld, create, node_class, node_pool
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.nodeclass import NodeClassActivities
from activities.provisioning import ProvisioningActivities
from api.catalog import load_default_catalog
from api.instance_types import labels as T
from api.nodeclass_launch import ClusterInfo
from contracts.disruption import LaunchInput, Replacement
from contracts.errors import ErrorType
from contracts.nodeclass import NodeClassInput
from gateways.kube import KubeClient
from planning.scheduling.min_values import RELAXED_ANNOTATION, MinValuesPolicy, min_values_policy
from telemetry.metrics import REGISTRY

CLUSTER = ClusterInfo("demo", "https://demo.eks.example", base64.b64encode(b"-----CA-----").decode())
TYPES = ["m5.large", "m5.xlarge", "c5.xlarge"]  # two families


def _acts(kube: KubeClient, world: AwsWorld, pool: str) -> ProvisioningActivities:
    create(kube, node_class("nodes", {
        "amiFamily": "AL2023", "amiSelectorTerms": [{"tags": {"team": world.tag}}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}], "role": world.role}))
    create(kube, node_pool(pool, "nodes", requirements=[
        {"key": T.FAMILY, "operator": "Exists", "minValues": 3}]))
    NodeClassActivities(kube, world.ec2, world.ssm, world.iam, cluster_name="demo").reconcile_all(NodeClassInput())
    return ProvisioningActivities(kube, world.ec2, load_default_catalog(), cluster=CLUSTER)


def _launch(acts: ProvisioningActivities, pool: str, key: str) -> Any:
    inp = LaunchInput(key=key, node_pool=pool, reason="Provisioning",
                      replacement=Replacement(instance_types=TYPES, capacity_type="on-demand"))
    return ActivityEnvironment().run(acts.launch_replacement, inp)


def _created(pool: str, relaxed: str) -> float:
    return REGISTRY.get_sample_value("karpenter_nodeclaims_created_total", {
        "reason": "provisioning", "nodepool": pool, "min_values_relaxed": relaxed}) or 0.0


async def test_strict_refuses_the_launch_that_cannot_meet_min_values(kube: KubeClient, world: AwsWorld) -> None:
    acts = _acts(kube, world, "strict")
    with pytest.raises(ApplicationError) as err:
        await _launch(acts, "strict", "prov-mv/1/0")
    assert err.value.type == ErrorType.LAUNCH_FAILED.value and err.value.non_retryable
    assert "minValues requirement is not met" in err.value.message and T.FAMILY in err.value.message
    assert kube.list_node_claims() == []


async def test_best_effort_relaxes_the_nodeclaim_says_so_and_launches(kube: KubeClient, world: AwsWorld) -> None:
    acts = _acts(kube, world, "relaxed")
    before = _created("relaxed", "true")
    with min_values_policy(MinValuesPolicy.BEST_EFFORT):
        launched = await _launch(acts, "relaxed", "prov-mv/2/0")
    assert launched.instance_id and launched.instance_type in TYPES
    claim = kube.get_node_claim(launched.node_claim) or {}
    assert claim["metadata"]["annotations"][RELAXED_ANNOTATION] == "true"
    (family,) = [q for q in claim["spec"]["requirements"] if q["key"] == T.FAMILY]
    assert family["minValues"] == 2  # m5 and c5: what the claim's types carry
    assert _created("relaxed", "true") == before + 1
