"""A launch tries offerings in the order the cluster's NodeOverlays price them (moto + simulator): a reserved
offering is taken first, as planning chose it, and reported at its overlay price."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as kube
from support.nodeclass_world import create, node_pool
from temporalio.testing import ActivityEnvironment

from activities.provisioning import ProvisioningActivities
from api import labels
from api.catalog import load_default_catalog
from contracts.disruption import LaunchInput, Replacement
from gateways.kube import KubeClient
from runtime.cloud_clients import ec2_client
from simulator.ec2 import DEFAULT_AMI

ON_DEMAND = [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]}]
RESERVED = {"apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay", "metadata": {"name": "reserved"},
            "spec": {"requirements": [
                {"key": labels.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.xlarge"]},
                {"key": labels.ZONE_LABEL, "operator": "In", "values": ["us-east-1b"]},
                {"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]}],
                "price": "0"}}


@pytest.fixture
def kube_client(k8s: Any) -> Iterator[KubeClient]:
    yield KubeClient(k8s)


@pytest.fixture
def ec2(moto_endpoint: str) -> Iterator[Any]:
    client = ec2_client("us-east-1", moto_endpoint)
    launched: list[str] = []
    yield client, launched
    if launched:  # moto is shared by the session: leave nothing running for another test to adopt
        client.terminate_instances(InstanceIds=launched)


async def _launch(kc: KubeClient, ec2: Any, key: str) -> Any:
    client, launched = ec2
    acts = ProvisioningActivities(kc, client, load_default_catalog(), ami_id=DEFAULT_AMI)
    inp = LaunchInput(key=key, node_pool="web", reason="Underutilized",
                      replacement=Replacement(instance_types=["m5.large", "m5.xlarge"], capacity_type="on-demand"))
    out = await ActivityEnvironment().run(acts.launch_replacement, inp)
    launched.append(out.instance_id)
    return out


async def test_a_reserved_offering_is_launched_first(kube_client: KubeClient, k8s: Any, ec2: Any) -> None:
    create(kube_client, node_pool("web", "absent", requirements=ON_DEMAND))
    plain = await _launch(kube_client, ec2, "disrupt-p/1/0")
    assert (plain.instance_type, plain.zone, plain.price) == ("m5.large", "us-east-1a", 0.096)
    kube.CustomObjectsApi(k8s).create_cluster_custom_object("karpenter.sh", "v1alpha1", "nodeoverlays", RESERVED)
    reserved = await _launch(kube_client, ec2, "disrupt-r/1/0")
    assert (reserved.instance_type, reserved.zone, reserved.price) == ("m5.xlarge", "us-east-1b", 0.0)



@pytest.mark.parametrize(("pool", "expected"), [("web", ("m5.xlarge", "us-east-1b", 0.0)),
                                                ("batch", ("m5.large", "us-east-1a", 0.096))])
async def test_an_overlay_for_a_nodepool_orders_only_that_pools_launches(kube_client: KubeClient, k8s: Any, ec2: Any,
                                                                        pool: str, expected: tuple) -> None:
    create(kube_client, node_pool("web", "absent", requirements=ON_DEMAND))
    scoped = {**RESERVED, "spec": {**RESERVED["spec"], "requirements": [
        *RESERVED["spec"]["requirements"], {"key": "karpenter.sh/nodepool", "operator": "In", "values": [pool]}]}}
    kube.CustomObjectsApi(k8s).create_cluster_custom_object("karpenter.sh", "v1alpha1", "nodeoverlays", scoped)
    launched = await _launch(kube_client, ec2, f"disrupt-{pool}/1/0")
    assert (launched.instance_type, launched.zone, launched.price) == expected
