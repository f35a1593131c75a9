"""A NodeClaim launched with one CreateFleet (moto + simulator, the class resolved from moto): an ICE'd family is an
error beside the instance of the same one request, and is marked unavailable; every override refused is
InsufficientCapacity with nothing launched; the ClientToken makes a repeated request answer the first; spot asks
for price-capacity-optimized; types that share parameters share one launch template."""

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
from api.ec2nodeclass import SECURITY_GROUPS_ANNOTATION, SUBNET_ANNOTATION
from api.nodeclass_launch import ClusterInfo
from contracts.disruption import LaunchInput, Replacement
from contracts.nodeclass import NodeClassInput
from gateways.ec2 import Ec2Gateway
from gateways.kube import KubeClient
from planning.pricing.unavailable_offerings import UnavailableOfferings
from simulator.ec2 import IceInjector

CLUSTER = ClusterInfo("demo", "https://demo.eks.example", base64.b64encode(b"-----CA-----").decode())
TYPES = ["t3.large", "c5.large", "m5.large", "m6i.large"]  # cheapest first, on-demand and spot


class Calls:
    """The EC2 operations a client sent, and each CreateFleet's parameters."""

    def __init__(self, client: Any) -> None:
        self.ops: list[str] = []
        self.fleets: list[dict[str, Any]] = []
        client.meta.events.register("provide-client-params.ec2.*", self._seen)

    def _seen(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.ops.append(model.name)
        if model.name == "CreateFleet":
            self.fleets.append(params)


def _setup(kube: KubeClient, world: AwsWorld) -> None:
    create(kube, node_class("nodes", {
        "amiFamily": "AL2023", "amiSelectorTerms": [{"tags": {"team": world.tag}}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}], "role": world.role}))
    create(kube, node_pool("web", "nodes"))
    NodeClassActivities(kube, world.ec2, world.ssm, world.iam, cluster_name="demo").reconcile_all(NodeClassInput())


def _launch(acts: ProvisioningActivities, key: str, capacity: str = "on-demand") -> Any:
    inp = LaunchInput(key=key, node_pool="web", reason="Provisioning",
                      replacement=Replacement(instance_types=TYPES, capacity_type=capacity))
    return ActivityEnvironment().run(acts.launch_replacement, inp)


def _claim_instances(world: AwsWorld, claim: str) -> list[dict[str, Any]]:
    out = world.ec2.describe_instances(Filters=[{"Name": "tag:karpenter.sh/nodeclaim", "Values": [claim]},
                                                {"Name": "instance-state-name", "Values": ["pending", "running"]}])
    return [i for r in out["Reservations"] for i in r["Instances"]]


async def test_an_iced_family_is_skipped_within_one_create_fleet(kube: KubeClient, world: AwsWorld) -> None:
    _setup(kube, world)
    calls, ice, cache = Calls(world.ec2), IceInjector().install(world.ec2), UnavailableOfferings()
    ice.exhaust("t3.large")  # the cheapest family has no capacity in any zone
    acts = ProvisioningActivities(kube, world.ec2, load_default_catalog(), cluster=CLUSTER, offerings=cache)
    launched = await _launch(acts, "prov-a/1/0")
    assert launched.instance_type == "c5.large"  # the next cheapest, from the same request
    assert calls.ops.count("CreateFleet") == 1 and "RunInstances" not in calls.ops
    overrides = [o for c in calls.fleets[0]["LaunchTemplateConfigs"] for o in c["Overrides"]]
    assert [o["InstanceType"] for o in overrides][:2] == ["t3.large", "t3.large"]  # both zones, cheapest first
    assert len(overrides) == len(TYPES) * 2  # every type in both zones the class has subnets in
    assert calls.fleets[0]["OnDemandOptions"] == {"AllocationStrategy": "lowest-price"}
    # the refused overrides came back as errors beside the instance, and are kept out for 3 minutes
    assert {z for t, z in ice.refused if t == "t3.large"} == {"us-east-1a", "us-east-1b"}
    assert cache.unavailable("t3.large", "us-east-1a", "on-demand")
    assert cache.unavailable("t3.large", "us-east-1b", "on-demand")
    assert [i["InstanceId"] for i in _claim_instances(world, launched.node_claim)] == [launched.instance_id]


async def test_every_override_refused_is_insufficient_capacity(kube: KubeClient, world: AwsWorld) -> None:
    _setup(kube, world)
    ice, cache = IceInjector().install(world.ec2), UnavailableOfferings()
    for t in TYPES:
        ice.exhaust(t)
    acts = ProvisioningActivities(kube, world.ec2, load_default_catalog(), cluster=CLUSTER, offerings=cache)
    with pytest.raises(ApplicationError) as err:
        await _launch(acts, "prov-b/1/0")
    assert err.value.type == "InsufficientCapacity" and err.value.non_retryable
    assert err.value.message.startswith("InsufficientInstanceCapacity for every offering: t3.large/")
    assert all(cache.unavailable(t, z, "on-demand") for t in TYPES for z in ("us-east-1a", "us-east-1b"))
    assert kube.list_node_claims() == []  # the claim goes, as after a refused RunInstances


async def test_the_client_token_answers_a_repeated_request_with_the_first(kube: KubeClient, world: AwsWorld) -> None:
    _setup(kube, world)
    calls = Calls(world.ec2)
    acts = ProvisioningActivities(kube, world.ec2, load_default_catalog(), cluster=CLUSTER)
    launched = await _launch(acts, "prov-c/1/0")
    request = calls.fleets[0]
    assert request["ClientToken"].endswith(launched.uid)
    again = Ec2Gateway(world.ec2).create_fleet(request)  # the answer was lost: the same request is sent again
    assert again["Instances"][0]["InstanceIds"] == [launched.instance_id]
    assert len(_claim_instances(world, launched.node_claim)) == 1
    retried = await _launch(acts, "prov-c/1/0")  # a retried activity finds the claim's instance
    assert retried.instance_id == launched.instance_id and calls.ops.count("CreateFleet") == 2


async def test_spot_asks_for_price_capacity_optimized_and_templates_are_shared(kube: KubeClient,
                                                                             world: AwsWorld) -> None:
    _setup(kube, world)
    calls = Calls(world.ec2)
    acts = ProvisioningActivities(kube, world.ec2, load_default_catalog(), cluster=CLUSTER)
    first = await _launch(acts, "prov-d/1/0", capacity="spot")
    await _launch(acts, "prov-d/1/1", capacity="spot")
    assert first.capacity_type == "spot"
    assert [f["SpotOptions"] for f in calls.fleets] == [{"AllocationStrategy": "price-capacity-optimized"}] * 2
    inst = world.ec2.describe_instances(InstanceIds=[first.instance_id])["Reservations"][0]["Instances"][0]
    assert inst.get("InstanceLifecycle") == "spot"
    names = {c["LaunchTemplateSpecification"]["LaunchTemplateName"] for f in calls.fleets
             for c in f["LaunchTemplateConfigs"]}
    assert len(names) == 1 and calls.ops.count("CreateLaunchTemplate") == 1  # one per parameter set, made once


class _NotYetVisible(Ec2Gateway):
    """EC2 right after CreateFleet: DescribeInstances by id does not show the new instance yet."""

    def instances(self, *, ids: Any = None, filters: Any = None) -> list[dict[str, Any]]:
        return [] if ids else super().instances(ids=ids, filters=filters)


async def test_an_instance_not_described_yet_is_taken_from_the_answer(kube: KubeClient, world: AwsWorld) -> None:
    _setup(kube, world)
    acts = ProvisioningActivities(kube, _NotYetVisible(world.ec2), load_default_catalog(), cluster=CLUSTER)
    launched = await _launch(acts, "prov-e/1/0")
    (inst,) = _claim_instances(world, launched.node_claim)
    assert (launched.instance_id, launched.instance_type, launched.zone) == \
        (inst["InstanceId"], inst["InstanceType"], inst["Placement"]["AvailabilityZone"])
    annotations = (kube.get_node_claim(launched.node_claim) or {})["metadata"]["annotations"]
    assert annotations[SUBNET_ANNOTATION] == inst["SubnetId"]
    assert annotations[SECURITY_GROUPS_ANNOTATION] == world.groups["tagged"]  # the class's, which the template has
