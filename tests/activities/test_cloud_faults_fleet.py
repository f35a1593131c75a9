"""EC2's partial answers to a fleet launch, through boto3 against the stand-in with its fault knob on
(devstack/cloud_faults.py, per-override CreateFleet rules; docs/reliability.md#the-clouds-own-failures): overrides
refused beside an instance are marked unavailable and the instance is the launch; every override refused is
InsufficientCapacity, each marked, with nothing launched and the NodeClaim gone. One CreateFleet each."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
from support.nodeclass_world import AwsWorld, create, node_class, node_pool
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.nodeclass import NodeClassActivities
from activities.provisioning import ProvisioningActivities
from api.catalog import load_default_catalog
from api.labels import NODECLAIM_TAG
from api.nodeclass_launch import ClusterInfo
from contracts.disruption import LaunchInput, Replacement
from contracts.errors import ErrorType
from contracts.nodeclass import NodeClassInput
from devstack.cloud_faults import FaultRule, clear_faults, fault_counts, set_faults
from gateways.kube import KubeClient
from planning.pricing.unavailable_offerings import UnavailableOfferings

TYPES = ["t3.large", "c5.large", "m5.large"]  # cheapest first
ZONES = ("us-east-1a", "us-east-1b")  # the class's subnets


@pytest.fixture
def cloud(cloud_endpoint: str) -> Iterator[AwsWorld]:
    """A world (network, images, role) in the devstack's stand-in; the knob off after."""
    yield AwsWorld(cloud_endpoint)
    clear_faults(cloud_endpoint)


def _acts(kube: KubeClient, world: AwsWorld, cache: UnavailableOfferings) -> ProvisioningActivities:
    create(kube, node_class("nodes", {
        "amiFamily": "AL2023", "amiSelectorTerms": [{"tags": {"team": world.tag}}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}], "role": world.role}))
    create(kube, node_pool("web", "nodes"))
    NodeClassActivities(kube, world.ec2, world.ssm, world.iam, cluster_name="demo").reconcile_all(NodeClassInput())
    cluster = ClusterInfo("demo", "https://demo.eks.example", base64.b64encode(b"-----CA-----").decode())
    return ProvisioningActivities(kube, world.ec2, load_default_catalog(), cluster=cluster, offerings=cache)


def _launch(acts: ProvisioningActivities, key: str) -> Any:
    inp = LaunchInput(key=key, node_pool="web", reason="Provisioning",
                      replacement=Replacement(instance_types=TYPES, capacity_type="on-demand"))
    return ActivityEnvironment().run(acts.launch_replacement, inp)


def _running(world: AwsWorld, claim: str) -> list[dict[str, Any]]:
    out = world.ec2.describe_instances(Filters=[{"Name": f"tag:{NODECLAIM_TAG}", "Values": [claim]},
                                                {"Name": "instance-state-name", "Values": ["pending", "running"]}])
    return [i for r in out["Reservations"] for i in r["Instances"]]


async def test_refused_overrides_beside_an_instance_are_marked_and_the_instance_is_the_launch(
        kube: KubeClient, cloud: AwsWorld, cloud_endpoint: str) -> None:
    cache = UnavailableOfferings()
    acts = _acts(kube, cloud, cache)
    set_faults(cloud_endpoint, [FaultRule("CreateFleet", "InsufficientInstanceCapacity",
                                          params={"InstanceType": "t3.large"})])
    launched = await _launch(acts, "prov-partial/1/0")
    assert launched.instance_type == "c5.large"  # the next cheapest, from the same request
    assert [i["InstanceId"] for i in _running(cloud, launched.node_claim)] == [launched.instance_id]
    assert all(cache.unavailable("t3.large", z, "on-demand") for z in ZONES)
    assert not any(cache.unavailable(t, z, "on-demand") for t in TYPES[1:] for z in ZONES)
    counts = fault_counts(cloud_endpoint)
    assert counts["calls"]["CreateFleet"] == 1 and counts["injected"] == {"CreateFleet": 2}  # one per zone
    again = await _launch(acts, "prov-partial/1/1")  # the marked type is no longer asked for
    assert again.instance_type == "c5.large"
    assert fault_counts(cloud_endpoint)["injected"] == {"CreateFleet": 2}


async def test_every_override_refused_is_insufficient_capacity_with_nothing_launched(
        kube: KubeClient, cloud: AwsWorld, cloud_endpoint: str) -> None:
    cache = UnavailableOfferings()
    acts = _acts(kube, cloud, cache)
    set_faults(cloud_endpoint, [FaultRule("CreateFleet", "InsufficientInstanceCapacity")])
    with pytest.raises(ApplicationError) as err:
        await _launch(acts, "prov-none/1/0")
    assert err.value.type == ErrorType.INSUFFICIENT_CAPACITY.value and err.value.non_retryable
    assert all(cache.unavailable(t, z, "on-demand") for t in TYPES for z in ZONES)
    assert kube.list_node_claims() == []
    tagged = cloud.ec2.describe_instances(Filters=[{"Name": "tag:karpenter.sh/nodepool", "Values": ["web"]},
                                                   {"Name": "subnet-id", "Values": list(cloud.subnets.values())}])
    assert [i for r in tagged["Reservations"] for i in r["Instances"]] == []
    counts = fault_counts(cloud_endpoint)
    assert counts["calls"]["CreateFleet"] == 1 and counts["injected"] == {"CreateFleet": len(TYPES) * len(ZONES)}
