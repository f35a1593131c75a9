"""A launch from an EC2NodeClass whose images are all x86_64 leaves arm64 types out (moto + simulator), as Karpenter's
launch template resolution (amifamily Resolve -> MapToInstanceTypes) leaves types no AMI serves out of the fleet
request: the cheaper c6g.large is passed over for c5.large; with only arm64 types allowed the launch fails saying so.
Found by tests/e2e/test_region_e2e.py, where a generation > 6 pool's cheapest type is the arm64 c7g.large."""

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
from api.nodeclass_launch import ClusterInfo
from contracts.disruption import LaunchInput, Replacement
from contracts.nodeclass import NodeClassInput
from gateways.kube import KubeClient

CLUSTER = ClusterInfo("demo", "https://demo.eks.example", base64.b64encode(b"-----CA-----").decode())


@pytest.fixture
def world(moto_endpoint: str, kube: KubeClient) -> AwsWorld:
    """A class whose one image is x86_64, resolved; a pool under it."""
    world = AwsWorld(moto_endpoint)
    create(kube, node_class("x86", {
        "amiFamily": "AL2023", "amiSelectorTerms": [{"id": world.images["amd64-a"]}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}], "role": world.role}))
    create(kube, node_pool("web", "x86"))
    NodeClassActivities(kube, world.ec2, world.ssm, world.iam, cluster_name="demo").reconcile_all(NodeClassInput())
    return world


def _launch(kube: KubeClient, world: AwsWorld, types: list[str], key: str) -> Any:
    acts = ProvisioningActivities(kube, world.ec2, load_default_catalog(), cluster=CLUSTER)
    inp = LaunchInput(key=key, node_pool="web", reason="Provisioning",
                      replacement=Replacement(instance_types=types, capacity_type="on-demand"))
    return ActivityEnvironment().run(acts.launch_replacement, inp)


async def test_an_arm64_type_is_passed_over_when_the_class_has_only_x86_images(kube: KubeClient,
                                                                              world: AwsWorld) -> None:
    catalog = load_default_catalog()
    c6g, c5 = catalog.get("c6g.large"), catalog.get("c5.large")
    assert c6g and c5 and c6g.arch == "arm64" and c5.arch == "amd64"
    assert min(o.price for o in c6g.offerings) < min(o.price for o in c5.offerings)  # arm64 is tried first
    launched = await _launch(kube, world, ["c6g.large", "c5.large"], "provision-arch/1/0")
    assert launched.instance_type == "c5.large"
    inst = world.ec2.describe_instances(InstanceIds=[launched.instance_id])["Reservations"][0]["Instances"][0]
    assert inst["ImageId"] == world.images["amd64-a"] and inst["InstanceType"] == "c5.large"


async def test_only_arm64_types_fail_naming_the_class(kube: KubeClient, world: AwsWorld) -> None:
    with pytest.raises(ApplicationError) as err:
        await _launch(kube, world, ["c6g.large", "m6g.large"], "provision-arch/2/0")
    assert err.value.type == "LaunchFailed" and err.value.non_retryable
    assert "EC2NodeClass x86 has an image for none of them" in str(err.value)
