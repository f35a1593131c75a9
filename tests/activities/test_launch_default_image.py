"""A plain launch (a NodePool without an EC2NodeClass) with no AMI setting takes an Amazon-owned image
(activities/provisioning.py `_image_id`). The other launch tests give the AMI: listing moto's Amazon images costs
2-4 s a call, and fifteen of them did so before."""

from __future__ import annotations

from typing import Any

from support.nodeclass_world import create, node_pool
from temporalio.testing import ActivityEnvironment

from activities.provisioning import ProvisioningActivities
from api import labels
from api.catalog import load_default_catalog
from contracts.disruption import LaunchInput, Replacement
from gateways.kube import KubeClient
from runtime.cloud_clients import ec2_client

ON_DEMAND = [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]}]


async def test_a_plain_launch_without_an_ami_setting_takes_an_amazon_image(k8s: Any, moto_endpoint: str) -> None:
    kube = KubeClient(k8s)
    ec2 = ec2_client("us-east-1", moto_endpoint)
    create(kube, node_pool("web", "absent", requirements=ON_DEMAND))  # no EC2NodeClass: the plain launch
    acts = ProvisioningActivities(kube, ec2, load_default_catalog())
    inp = LaunchInput(key="plain-image/1/0", node_pool="web", reason="Provisioning",
                      replacement=Replacement(instance_types=["m5.large"], capacity_type="on-demand"))
    launched = await ActivityEnvironment().run(acts.launch_replacement, inp)
    try:
        (res,) = ec2.describe_instances(InstanceIds=[launched.instance_id])["Reservations"]
        (image,) = ec2.describe_images(ImageIds=[res["Instances"][0]["ImageId"]])["Images"]
        assert image.get("ImageOwnerAlias") == "amazon", image
    finally:
        ec2.terminate_instances(InstanceIds=[launched.instance_id])
