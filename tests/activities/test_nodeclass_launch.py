"""Launching from a NodePool's EC2NodeClass (moto + simulator): RunInstances gets the class's resolved image,
subnet, groups, profile, user data, disks, IMDS options and tags (checked on the instance via DescribeInstances);
the NodeClaim records what it was launched with; a class that does not resolve blocks the launch with an Event."""

from __future__ import annotations

import base64
from typing import Any

import pytest
import yaml
from support.nodeclass_world import AwsWorld, create, events, node_class, node_pool
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.nodeclass import NodeClassActivities
from activities.provisioning import ProvisioningActivities
from api.catalog import load_default_catalog
from api.ec2nodeclass import HASH_ANNOTATION, SECURITY_GROUPS_ANNOTATION, SUBNET_ANNOTATION
from api.nodeclass_launch import ClusterInfo, instance_profile_name
from contracts.disruption import LaunchInput, Replacement
from contracts.nodeclass import NodeClassInput
from gateways.kube import KubeClient

CLUSTER = ClusterInfo("demo", "https://demo.eks.example", base64.b64encode(b"-----CA-----").decode())


def _spec(world: AwsWorld, **extra: Any) -> dict[str, Any]:
    return {"amiFamily": "AL2023", "amiSelectorTerms": [{"tags": {"team": world.tag}}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}],
            "role": world.role, "tags": {"team": "platform"}, "kubelet": {"maxPods": 42},
            "blockDeviceMappings": [{"deviceName": "/dev/xvda", "rootVolume": True,
                                     "ebs": {"volumeSize": "50Gi", "volumeType": "gp3", "encrypted": True}}],
            **extra}


def _setup(kube: KubeClient, world: AwsWorld, spec: dict[str, Any], pool: str = "web") -> None:
    create(kube, node_class("nodes", spec))
    create(kube, node_pool(pool, "nodes", taints=[{"key": "dedicated", "value": "web", "effect": "NoSchedule"}]))
    NodeClassActivities(kube, world.ec2, world.ssm, world.iam, cluster_name="demo").reconcile_all(NodeClassInput())


def _launch(kube: KubeClient, world: AwsWorld, pool: str = "web", key: str = "disrupt-x/1/0") -> Any:
    acts = ProvisioningActivities(kube, world.ec2, load_default_catalog(), cluster=CLUSTER)
    inp = LaunchInput(key=key, node_pool=pool, reason="Drifted",
                      replacement=Replacement(instance_types=["m5.large"], zone="us-east-1a"))
    return ActivityEnvironment().run(acts.launch_replacement, inp)


def _instance(world: AwsWorld, instance_id: str) -> dict[str, Any]:
    return world.ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]


async def test_launch_uses_the_resolved_class(kube: KubeClient, world: AwsWorld) -> None:
    _setup(kube, world, _spec(world))
    launched = await _launch(kube, world)
    inst = _instance(world, launched.instance_id)
    assert inst["ImageId"] == world.images["amd64-b"]  # the newest amd64 image, not the arm64 one
    assert inst["SubnetId"] == world.subnets["big-a"]  # us-east-1a, the subnet with the most free addresses
    assert {g["GroupId"] for g in inst["SecurityGroups"]} == {world.groups["tagged"]}
    assert inst["IamInstanceProfile"]["Arn"].endswith("/" + instance_profile_name("demo", "us-east-1", "nodes"))
    assert inst["MetadataOptions"]["HttpTokens"] == "required"
    assert inst["MetadataOptions"]["HttpPutResponseHopLimit"] == 1
    tags = {t["Key"]: t["Value"] for t in inst["Tags"]}
    assert tags["karpenter.sh/nodepool"] == "web" and tags["karpenter.sh/nodeclaim"] == launched.node_claim
    assert tags["kubernetes.io/cluster/demo"] == "owned" and tags["eks:eks-cluster-name"] == "demo"
    assert tags["team"] == "platform" and tags["karpenter.k8s.aws/ec2nodeclass"] == "nodes"
    raw = world.ec2.describe_instance_attribute(InstanceId=launched.instance_id, Attribute="userData")
    data = base64.b64decode(raw["UserData"]["Value"]).decode()
    assert data.startswith("MIME-Version: 1.0") and "Content-Type: application/node.eks.aws" in data
    config = yaml.safe_load(data.split("application/node.eks.aws\n\n")[1].split("\n--//")[0])
    assert config["kind"] == "NodeConfig"
    assert config["spec"]["cluster"] == {"name": "demo", "apiServerEndpoint": CLUSTER.endpoint,
                                         "certificateAuthority": CLUSTER.ca}
    assert config["spec"]["kubelet"]["config"] == {"maxPods": 42}
    assert "--register-with-taints=dedicated=web:NoSchedule,karpenter.sh/unregistered:NoExecute" in \
        config["spec"]["kubelet"]["flags"]  # registers unregistered, as Karpenter's nodes do
    assert any(f.startswith("--node-labels=") and "karpenter.sh/nodepool=web" in f and "team=web" in f
               and "karpenter.sh/do-not-sync-taints=true" in f for f in config["spec"]["kubelet"]["flags"])


async def test_the_nodeclaim_records_what_it_was_launched_with(kube: KubeClient, world: AwsWorld) -> None:
    _setup(kube, world, _spec(world))
    launched = await _launch(kube, world)
    claim = kube.get_node_claim(launched.node_claim) or {}
    annotations = claim["metadata"]["annotations"]
    assert claim["status"]["imageID"] == world.images["amd64-b"]
    assert annotations[SUBNET_ANNOTATION] == world.subnets["big-a"]
    assert annotations[SECURITY_GROUPS_ANNOTATION] == world.groups["tagged"]
    assert annotations[HASH_ANNOTATION] == (kube.get_node_class("nodes") or {})["metadata"]["annotations"][
        HASH_ANNOTATION]
    # capacity as Karpenter reports it for m5.large under this class: the 50Gi root volume, maxPods 42,
    # memory less the 7.5% VM overhead (8192Mi - 615); allocatable less 1Gi + 10% of the volume for storage
    assert claim["status"]["capacity"] == {"cpu": "2", "memory": "7577Mi", "ephemeral-storage": "50Gi", "pods": "42"}
    assert claim["status"]["allocatable"]["ephemeral-storage"] == "44Gi"  # 50Gi - 1Gi - 5Gi
    # A retry of the same launch finds the instance instead of launching a second one.
    again = await _launch(kube, world)
    assert (again.node_claim, again.instance_id) == (launched.node_claim, launched.instance_id)


async def test_a_class_that_does_not_resolve_blocks_the_launch(kube: KubeClient, world: AwsWorld) -> None:
    spec = _spec(world, subnetSelectorTerms=[{"tags": {"karpenter.sh/discovery": "nobody-" + world.tag}}])
    _setup(kube, world, spec)
    with pytest.raises(ApplicationError) as err:
        await _launch(kube, world)
    assert err.value.type == "NodeClassNotReady" and err.value.non_retryable
    assert "subnetSelectorTerms[0]" in str(err.value)
    assert kube.list_node_claims() == []  # nothing launched, not even a NodeClaim
    seen = events(kube, "NodePool", "web")
    assert [(e["reason"], e["type"]) for e in seen] == [("NodeClassNotReady", "Warning")]
    assert "SubnetsReady=False" in seen[0]["message"]


async def test_a_missing_class_blocks_the_launch_when_the_cluster_has_classes(kube: KubeClient,
                                                                             world: AwsWorld) -> None:
    _setup(kube, world, _spec(world))
    create(kube, node_pool("orphan", "no-such-class"))
    with pytest.raises(ApplicationError) as err:
        await _launch(kube, world, pool="orphan", key="disrupt-y/1/0")
    assert err.value.type == "NodeClassNotReady" and "'no-such-class' not found" in str(err.value)
    assert [e["reason"] for e in events(kube, "NodePool", "orphan")] == ["NodeClassNotReady"]
