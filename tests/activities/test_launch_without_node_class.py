"""A plain launch (the cluster has no EC2NodeClass) takes the worker's `--ami-id`, and without one is refused
before anything exists (activities/nodeclass_launch.py `_legacy`): it used to take the lexically first
Amazon-owned image DescribeImages listed, which on a real account is any operating system, and a node that never
joins."""

from __future__ import annotations

from typing import Any

import pytest
from support.nodeclass_world import create, events, node_pool
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.provisioning import ProvisioningActivities
from api import labels
from api.catalog import load_default_catalog
from contracts.disruption import LaunchInput, Replacement
from gateways.kube import KubeClient
from runtime.cloud_clients import ec2_client
from simulator.ec2 import DEFAULT_AMI

ON_DEMAND = [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]}]


def _input(pool: str) -> LaunchInput:
    return LaunchInput(key=f"plain-image-{pool}/1/0", node_pool=pool, reason="Provisioning",
                       replacement=Replacement(instance_types=["m5.large"], capacity_type="on-demand"))


def _pool_instances(ec2: Any, pool: str) -> list[dict[str, Any]]:
    resp = ec2.describe_instances(Filters=[{"Name": "tag:karpenter.sh/nodepool", "Values": [pool]}])
    return [i for r in resp["Reservations"] for i in r["Instances"]]


async def test_without_an_ami_setting_the_launch_is_refused_naming_both_ways_out(k8s: Any,
                                                                                 moto_endpoint: str) -> None:
    kube = KubeClient(k8s)
    ec2 = ec2_client("us-east-1", moto_endpoint)
    create(kube, node_pool("no-image", "absent", requirements=ON_DEMAND))
    acts = ProvisioningActivities(kube, ec2, load_default_catalog())
    with pytest.raises(ApplicationError) as err:
        await ActivityEnvironment().run(acts.launch_replacement, _input("no-image"))
    assert err.value.type == "NodeClassNotReady" and err.value.non_retryable
    assert "--ami-id" in str(err.value) and "EC2NodeClass" in str(err.value)
    assert kube.list_node_claims() == [] and _pool_instances(ec2, "no-image") == []  # nothing exists
    (seen,) = events(kube, "NodePool", "no-image")
    assert (seen["reason"], seen["type"]) == ("NodeClassNotReady", "Warning")
    assert "--ami-id" in seen["message"] and "no-image" in seen["message"]


async def test_with_an_ami_setting_the_launch_takes_that_image(k8s: Any, moto_endpoint: str) -> None:
    kube = KubeClient(k8s)
    ec2 = ec2_client("us-east-1", moto_endpoint)
    create(kube, node_pool("given-image", "absent", requirements=ON_DEMAND))
    acts = ProvisioningActivities(kube, ec2, load_default_catalog(), ami_id=DEFAULT_AMI)
    launched = await ActivityEnvironment().run(acts.launch_replacement, _input("given-image"))
    try:
        (inst,) = _pool_instances(ec2, "given-image")
        assert (inst["InstanceId"], inst["ImageId"]) == (launched.instance_id, DEFAULT_AMI)
    finally:
        ec2.terminate_instances(InstanceIds=[launched.instance_id])
