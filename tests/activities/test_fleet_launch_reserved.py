"""A reserved launch through the provisioning activity against the stand-in EC2 (devstack/moto_fleet.py,
devstack/moto_reservations.py) and the simulator (docs/semantics.md §16.4): one CreateFleet whose launch template
targets the class's reservation, the NodeClaim labelled with it and the class's count lowered; the reservation
used up, EC2's ReservationCapacityExceeded marks it full (status and the unavailable offerings) and the claim goes
as no capacity; `--launch-api run-instances` targets the reservation too."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from support.nodeclass_world import AwsWorld, create, node_class, node_pool
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.nodeclass import NodeClassActivities
from activities.provisioning import ProvisioningActivities
from api.capacity_reservations import RESERVATION_ID_LABEL, RESERVATION_TYPE_LABEL
from api.catalog import load_default_catalog
from api.nodeclass_launch import ClusterInfo
from contracts.disruption import LaunchInput, Replacement
from contracts.nodeclass import NodeClassInput
from gateways.kube import KubeClient
from planning.pricing.unavailable_offerings import UnavailableOfferings
from planning.provisioning.fleet import LaunchApi

CLUSTER = ClusterInfo("demo", "https://demo.eks.example", base64.b64encode(b"-----CA-----").decode())


def _setup(kube: KubeClient, world: AwsWorld) -> str:
    rid = str(world.ec2.create_capacity_reservation(
        InstanceType="m5.xlarge", InstancePlatform="Linux/UNIX", AvailabilityZone="us-east-1a", InstanceCount=1,
        InstanceMatchCriteria="targeted", TagSpecifications=[{"ResourceType": "capacity-reservation", "Tags": [
            {"Key": "team", "Value": world.tag}]}])["CapacityReservation"]["CapacityReservationId"])
    create(kube, node_class("nodes", {
        "amiFamily": "AL2023", "amiSelectorTerms": [{"tags": {"team": world.tag}}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}], "role": world.role,
        "capacityReservationSelectorTerms": [{"tags": {"team": world.tag}}]}))
    create(kube, node_pool("web", "nodes"))
    NodeClassActivities(kube, world.ec2, world.ssm, world.iam, cluster_name="demo").reconcile_all(NodeClassInput())
    return rid


def _launch(acts: ProvisioningActivities, key: str) -> Any:
    inp = LaunchInput(key=key, node_pool="web", reason="Provisioning",
                      replacement=Replacement(instance_types=["m5.xlarge", "m5.large"], capacity_type="reserved"))
    return ActivityEnvironment().run(acts.launch_replacement, inp)


def _count(kube: KubeClient) -> int:
    obj = kube.get_node_class("nodes") or {}
    return int(obj["status"]["capacityReservations"][0]["availableInstanceCount"])


def _restore(kube: KubeClient, count: int) -> None:
    obj = kube.get_node_class("nodes") or {}
    entries = [{**obj["status"]["capacityReservations"][0], "availableInstanceCount": count}]
    kube.patch_node_class_status("nodes", {"status": {"capacityReservations": entries}})


async def test_a_reserved_fleet_targets_the_reservation_and_a_full_one_is_marked(kube: KubeClient,
                                                                                 world: AwsWorld) -> None:
    rid = _setup(kube, world)
    fleets: list[dict[str, Any]] = []
    world.ec2.meta.events.register("provide-client-params.ec2.CreateFleet",
                                   lambda params, **_: fleets.append(params))
    cache = UnavailableOfferings()
    acts = ProvisioningActivities(kube, world.ec2, load_default_catalog(), cluster=CLUSTER, offerings=cache)
    launched = await _launch(acts, "res-a/1/0")
    assert (launched.instance_type, launched.zone, launched.capacity_type) == ("m5.xlarge", "us-east-1a", "reserved")
    (config,) = fleets[0]["LaunchTemplateConfigs"]
    assert [(o["InstanceType"], o["AvailabilityZone"]) for o in config["Overrides"]] == [("m5.xlarge", "us-east-1a")]
    assert fleets[0]["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "on-demand"
    name = config["LaunchTemplateSpecification"]["LaunchTemplateName"]
    data = world.ec2.describe_launch_template_versions(LaunchTemplateName=name)["LaunchTemplateVersions"][0][
        "LaunchTemplateData"]
    assert data["CapacityReservationSpecification"]["CapacityReservationTarget"]["CapacityReservationId"] == rid
    claim = kube.get_node_claim(launched.node_claim) or {}
    assert claim["metadata"]["labels"][RESERVATION_ID_LABEL] == rid
    assert claim["metadata"]["labels"][RESERVATION_TYPE_LABEL] == "default"
    assert _count(kube) == 0  # one launch into it
    _restore(kube, 1)  # a stale count: the next launch asks EC2, which refuses
    with pytest.raises(ApplicationError) as err:
        await _launch(acts, "res-b/1/0")
    assert err.value.type == "InsufficientCapacity" and "m5.xlarge/us-east-1a" in err.value.message
    assert _count(kube) == 0 and cache.unavailable("m5.xlarge", "us-east-1a", "reserved")
    assert kube.get_node_claim(launched.node_claim) is not None
    assert len(kube.list_node_claims()) == 1  # the refused claim went


async def test_run_instances_targets_the_reservation_too(kube: KubeClient, world: AwsWorld) -> None:
    rid = _setup(kube, world)
    runs: list[dict[str, Any]] = []
    world.ec2.meta.events.register("provide-client-params.ec2.RunInstances", lambda params, **_: runs.append(params))
    acts = ProvisioningActivities(kube, world.ec2, load_default_catalog(), cluster=CLUSTER,
                                  offerings=UnavailableOfferings(), launch_api=LaunchApi.RUN_INSTANCES)
    launched = await _launch(acts, "res-c/1/0")
    assert launched.capacity_type == "reserved"
    assert runs[0]["CapacityReservationSpecification"] == {
        "CapacityReservationPreference": "capacity-reservations-only",
        "CapacityReservationTarget": {"CapacityReservationId": rid}}
