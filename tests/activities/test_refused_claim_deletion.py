"""A NodeClaim whose every offering was refused goes at once, even when a controller puts our finalizer back.

The worker's lifecycle controller and deletion watcher add the termination finalizer to every NodeClaim that is
not deleting. The launch takes the finalizer off and then deletes the claim; a controller that acts between the two
put the finalizer back, and the refused claim stayed, deleting, until a termination came for it (seen in an e2e
run: still there 30 s later). Here the re-add happens on purpose, right after the launch's PATCH.
"""

from __future__ import annotations

from typing import Any

import pytest
from support.nodeclass_world import create, node_pool
from support.sim_objects import node, nodeclaim
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.provisioning import ProvisioningActivities
from api import labels
from api.catalog import load_default_catalog
from contracts.disruption import LaunchInput, Replacement
from contracts.errors import ErrorType
from gateways.kube import KubeClient
from runtime.cloud_clients import ec2_client
from simulator.ec2 import DEFAULT_AMI, IceInjector

ON_DEMAND = [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]}]


class ControllerBetween(KubeClient):
    """Adds our finalizer back right after any PATCH that removes a Node's or NodeClaim's finalizers, as the
    lifecycle controller or the deletion watcher does when its reconcile of that change lands before the DELETE."""

    readds = 0

    def patch_node_claim(self, name: str, body: Any) -> Any:
        return self._readd("NodeClaim", name, body, super().patch_node_claim(name, body))

    def patch_node(self, name: str, body: Any) -> Any:
        return self._readd("Node", name, body, super().patch_node(name, body))

    def _readd(self, kind: str, name: str, body: Any, answer: Any) -> Any:
        if "finalizers" in (body.get("metadata") or {}) and not body["metadata"]["finalizers"]:
            self.readds += int(self.add_finalizer(kind, name))
        return answer


async def _refused_launch(kube: KubeClient, moto_endpoint: str) -> None:
    ec2 = ec2_client("us-east-1", moto_endpoint)
    create(kube, node_pool("web", "absent", requirements=ON_DEMAND))  # no EC2NodeClass: the plain launch
    ice = IceInjector().install(ec2)
    for zone in ("us-east-1a", "us-east-1b", "us-east-1c"):
        ice.exhaust("m5.large", zone)
    acts = ProvisioningActivities(kube, ec2, load_default_catalog(), ami_id=DEFAULT_AMI)
    inp = LaunchInput(key="batch-a/1/0", node_pool="web", reason="Provisioning",
                      replacement=Replacement(instance_types=["m5.large"], capacity_type="on-demand"))
    with pytest.raises(ApplicationError) as err:
        await ActivityEnvironment().run(acts.launch_replacement, inp)
    assert err.value.type == ErrorType.INSUFFICIENT_CAPACITY.value


async def test_a_refused_claim_is_gone_when_the_launch_ends(k8s: Any, moto_endpoint: str) -> None:
    kube = KubeClient(k8s)
    await _refused_launch(kube, moto_endpoint)
    assert kube.list_node_claims() == []


async def test_a_finalizer_put_back_before_the_delete_does_not_hold_the_refused_claim(k8s: Any,
                                                                                      moto_endpoint: str) -> None:
    kube = ControllerBetween(k8s)
    await _refused_launch(kube, moto_endpoint)
    assert kube.readds == 1  # the race happened
    assert kube.list_node_claims() == []


@pytest.mark.parametrize("kind", ["Node", "NodeClaim"])
def test_delete_unheld_deletes_through_a_finalizer_put_back(sim: Any, k8s: Any, kind: str) -> None:
    """The gateway call both paths use: a never-Ready replacement's Node, and a refused or launch-less claim."""
    held = [labels.TERMINATION_FINALIZER, "example.com/other"]
    obj = node("n1", finalizers=held) if kind == "Node" else nodeclaim("n1")
    obj["metadata"]["finalizers"] = held
    sim.load_objects([obj])
    kube = ControllerBetween(k8s)
    assert kube.delete_unheld(kind, "n1")
    assert kube.readds == 1  # the race happened
    assert kube.list_node_claims() == [] and kube.get_node("n1") is None
    assert not kube.delete_unheld(kind, "n1")  # already gone: found nothing


def test_delete_unheld_refuses_other_kinds(k8s: Any) -> None:
    with pytest.raises(ValueError, match="Node or a NodeClaim"):
        KubeClient(k8s).delete_unheld("Pod", "p1")
