"""Launch templates are deleted as Karpenter deletes them, through boto3 against the EC2 stand-in and the simulator
(docs/semantics.md §16.3): a minute after their last launch (not while a launch holds one, which the next launch
then makes again), those a previous process left once booked and unused for a minute (other clusters' never),
and all of an EC2NodeClass once it is deleted and its NodeClaims are gone (the class waits for them, saying so)."""

from __future__ import annotations

import base64
from typing import Any

from support.nodeclass_world import AwsWorld, create, events, node_class, node_pool
from temporalio.testing import ActivityEnvironment

from activities.launch_templates import LaunchTemplates
from activities.nodeclass import NodeClassActivities
from activities.provisioning import ProvisioningActivities
from api.catalog import load_default_catalog
from api.launch_templates import NODECLASS_FINALIZER
from api.nodeclass_launch import ClusterInfo
from contracts.disruption import LaunchInput, Replacement
from contracts.nodeclass import NodeClassInput
from devstack.audit import leaked_launch_templates
from gateways.ec2 import Ec2Gateway
from gateways.kube import KubeClient
from planning.provisioning.launch_templates import TemplateBook

CA = base64.b64encode(b"-----CA-----").decode()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _cluster(world: AwsWorld) -> str:
    return f"c-{world.tag}"  # the shared stand-in holds other tests' templates: each test its own cluster


def _setup(kube: KubeClient, world: AwsWorld, templates: LaunchTemplates) -> NodeClassActivities:
    create(kube, node_class("nodes", {
        "amiFamily": "AL2023", "amiSelectorTerms": [{"tags": {"team": world.tag}}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}], "role": world.role}))
    create(kube, node_pool("web", "nodes"))
    acts = NodeClassActivities(kube, world.ec2, world.ssm, world.iam, cluster_name=_cluster(world),
                               templates=templates)
    acts.reconcile_all(NodeClassInput())
    return acts


def _provisioning(kube: KubeClient, world: AwsWorld, ec2: Any, templates: LaunchTemplates) -> ProvisioningActivities:
    cluster = ClusterInfo(_cluster(world), "https://demo.eks.example", CA)
    return ProvisioningActivities(kube, ec2, load_default_catalog(), cluster=cluster, templates=templates)


def _launch(acts: ProvisioningActivities, key: str) -> Any:
    inp = LaunchInput(key=key, node_pool="web", reason="Provisioning",
                      replacement=Replacement(instance_types=["m5.large"], capacity_type="on-demand"))
    return ActivityEnvironment().run(acts.launch_replacement, inp)


def _ours(world: AwsWorld) -> list[str]:
    found = Ec2Gateway(world.ec2).launch_templates([{"Name": "tag:eks:eks-cluster-name",
                                                     "Values": [_cluster(world)]}])
    return sorted(t["LaunchTemplateName"] for t in found)


class _SweepDuringFleet(Ec2Gateway):
    """EC2 while a CreateFleet is in flight: a minute passes and the worker's sweep runs before EC2 answers."""

    def __init__(self, client: Any, clock: Clock) -> None:
        super().__init__(client)
        self.clock = clock
        self.templates: LaunchTemplates | None = None
        self.swept: list[list[str]] = []

    def create_fleet(self, params: dict[str, Any]) -> dict[str, Any]:
        assert self.templates is not None
        self.clock.now += 120
        self.swept.append(self.templates.sweep())
        return super().create_fleet(params)


async def test_a_template_goes_a_minute_after_its_last_launch_but_never_during_one(
        kube: KubeClient, world: AwsWorld) -> None:
    clock = Clock()
    ec2 = _SweepDuringFleet(world.ec2, clock)
    templates = ec2.templates = LaunchTemplates(ec2, _cluster(world), TemplateBook(clock))
    _setup(kube, world, templates)
    acts = _provisioning(kube, world, ec2, templates)
    first = await _launch(acts, "prov-lt/1/0")
    assert ec2.swept == [[]]  # the sweep ran two minutes into the launch: its template was held
    (name,) = _ours(world)
    assert first.instance_id and templates.book.known() == [name] and templates.book.held() == []
    clock.now += 59
    assert templates.sweep() == [] and _ours(world) == [name]  # used (released) 59 s ago: kept
    clock.now += 1
    assert templates.sweep() == [name] and _ours(world) == []  # a minute unused: deleted
    assert templates.sweep() == []  # nothing left to delete
    second = await _launch(acts, "prov-lt/1/1")  # the next launch makes it again (same parameters, same name)
    assert second.instance_id and _ours(world) == [name]


async def test_a_new_process_deletes_what_an_old_one_left_but_not_another_clusters(
        kube: KubeClient, world: AwsWorld) -> None:
    old = LaunchTemplates(Ec2Gateway(world.ec2), _cluster(world))
    _setup(kube, world, old)
    await _launch(_provisioning(kube, world, world.ec2, old), "prov-lt/2/0")
    (left,) = _ours(world)
    other = LaunchTemplates(Ec2Gateway(world.ec2), f"other-{world.tag}")
    other.ensure("nodeflow.dev/other-cluster", {"ImageId": world.images["amd64-a"]},
                 {"karpenter.k8s.aws/ec2nodeclass": "nodes", "eks:eks-cluster-name": f"other-{world.tag}"})
    clock = Clock()
    fresh = LaunchTemplates(Ec2Gateway(world.ec2), _cluster(world), TemplateBook(clock))
    assert fresh.sweep() == []  # nothing booked yet
    assert fresh.hydrate() == [left]  # the leader books the cluster's templates: each gets a minute to be used
    assert fresh.sweep() == []
    clock.now += 60
    assert fresh.sweep() == [left] and _ours(world) == []
    still = Ec2Gateway(world.ec2).launch_templates([{"Name": "launch-template-name",
                                                     "Values": ["nodeflow.dev/other-cluster"]}])
    assert len(still) == 1  # another cluster's template is never taken for ours
    Ec2Gateway(world.ec2).delete_launch_template(still[0]["LaunchTemplateId"])


async def test_a_deleted_class_waits_for_its_claims_then_its_templates_and_finalizer_go(
        kube: KubeClient, world: AwsWorld) -> None:
    templates = LaunchTemplates(Ec2Gateway(world.ec2), _cluster(world))
    resolver = _setup(kube, world, templates)
    assert NODECLASS_FINALIZER in (kube.get_node_class("nodes") or {})["metadata"]["finalizers"]
    launched = await _launch(_provisioning(kube, world, world.ec2, templates), "prov-lt/3/0")
    names = _ours(world)
    assert len(names) == 1
    kube.custom.delete_cluster_custom_object("karpenter.k8s.aws", "v1", "ec2nodeclasses", "nodes")
    resolver.reconcile_all(NodeClassInput())
    assert kube.get_node_class("nodes") is not None and _ours(world) == names  # its NodeClaim still exists
    assert {"reason": "WaitingOnNodeClaimTermination", "type": "Normal",
            "message": f"Waiting on NodeClaim termination for {launched.node_claim}"} in events(
        kube, "EC2NodeClass", "nodes")
    kube.remove_finalizer("NodeClaim", launched.node_claim)
    kube.delete_node_claim(launched.node_claim)
    resolver.reconcile_all(NodeClassInput())
    assert _ours(world) == [] and kube.get_node_class("nodes") is None
    assert leaked_launch_templates(Ec2Gateway(world.ec2).launch_templates([]), [], _cluster(world)) == []
    resolver.reconcile_all(NodeClassInput())  # nothing left to do: idempotent


async def test_the_audit_counts_templates_whose_class_is_gone(kube: KubeClient, world: AwsWorld) -> None:
    templates = LaunchTemplates(Ec2Gateway(world.ec2), _cluster(world))
    _setup(kube, world, templates)
    await _launch(_provisioning(kube, world, world.ec2, templates), "prov-lt/4/0")
    found = Ec2Gateway(world.ec2).launch_templates([])
    assert leaked_launch_templates(found, kube.list_node_classes(), _cluster(world)) == []
    # the class's object is gone without its finalizer having run (removed by hand): its template is left
    kube.patch_node_class("nodes", {"metadata": {"finalizers": None}})
    kube.custom.delete_cluster_custom_object("karpenter.k8s.aws", "v1", "ec2nodeclasses", "nodes")
    assert leaked_launch_templates(found, kube.list_node_classes(), _cluster(world)) == _ours(world)
    assert len(_ours(world)) == 1
    templates.delete_class("nodes")
    assert leaked_launch_templates(Ec2Gateway(world.ec2).launch_templates([]), kube.list_node_classes(),
                                   _cluster(world)) == []
