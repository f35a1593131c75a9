"""A launch through the worker from an EC2NodeClass (dev server + simulator wired to moto + the real worker's
wiring): with the cheapest type out of capacity in every zone, the ProvisioningWorkflow's launch is ONE CreateFleet
whose refused overrides come back as errors beside an instance of the next type; the node joins from the launch
template's user data and the pod runs. On RunInstances (before CreateFleet) the launch asked EC2 once per offering."""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from kubernetes import client as k8s
from support.disruption_stack import Stack, disruption_stack, fresh, replica_set, wait_for
from support.nodeclass_world import AwsWorld, create, node_class

from api import labels
from bench.clusters import node_pool
from contracts.nodeclass import NodeClassInput
from contracts.provisioning import PodRef, ProvisioningInput, ProvisioningPhase, ProvisioningSettings
from gateways.kube import KubeClient
from simulator.ec2 import IceInjector
from workflows.nodeclass import NodeClassWorkflow
from workflows.provisioning import ProvisioningWorkflow

pytestmark = pytest.mark.e2e
CA = base64.b64encode(b"-----CA-----").decode()
FAST = ProvisioningSettings(ready_timeout_seconds=60, ready_poll_seconds=1, ice_backoff_seconds=1, ice_attempts=2)
REQS = [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
        {"key": labels.ARCH_LABEL, "operator": "In", "values": ["amd64"]},
        {"key": labels.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large", "m5.xlarge"]},
        {"key": labels.ZONE_LABEL, "operator": "In", "values": ["us-east-1a", "us-east-1b"]}]


@asynccontextmanager
async def _world_stack(temporal_client: Any, sim_ec2: Any, moto_endpoint: str,
                       watch: bool = False) -> AsyncIterator[tuple[AwsWorld, Stack]]:
    """`watch`: the worker's deletion watcher on (a deleted NodeClaim is terminated)."""
    world = AwsWorld(moto_endpoint)
    worker = {"cluster_name": "e2e", "cluster_endpoint": sim_ec2.base_url, "cluster_ca": CA, "watch": watch}
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=worker, ssm=world.ssm,
                                iam=world.iam) as stack:
        create(KubeClient(stack.api), node_class("default", {
            "amiFamily": "AL2023", "amiSelectorTerms": [{"tags": {"team": world.tag}}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}], "role": world.role}))
        yield world, stack


@pytest.fixture
async def world_stack(temporal_client: Any, sim_ec2: Any, moto_endpoint: str) -> AsyncIterator[tuple[AwsWorld, Stack]]:
    async with _world_stack(temporal_client, sim_ec2, moto_endpoint) as pair:
        yield pair


@pytest.fixture
async def watching_stack(temporal_client: Any, sim_ec2: Any,
                         moto_endpoint: str) -> AsyncIterator[tuple[AwsWorld, Stack]]:
    async with _world_stack(temporal_client, sim_ec2, moto_endpoint, watch=True) as pair:
        yield pair


def _pods(stack: Stack) -> list[dict[str, Any]]:
    items = k8s.CoreV1Api(stack.api).list_namespaced_pod("default", label_selector="app=api")
    return stack.api.sanitize_for_serialization(items.items)


def _unschedulable(stack: Stack) -> list[PodRef]:
    return [PodRef(key=f"default/{p['metadata']['name']}", uid=p["metadata"]["uid"]) for p in _pods(stack)
            if any(c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
                   for c in (p.get("status") or {}).get("conditions") or [])]


def _running(stack: Stack) -> int:
    return sum(1 for p in _pods(stack) if (p.get("status") or {}).get("phase") == "Running")


async def test_an_iced_type_is_refused_inside_one_create_fleet_through_the_worker(world_stack: Any) -> None:
    _, stack = world_stack
    resolved = await stack.client.execute_workflow(NodeClassWorkflow.run, NodeClassInput(),
                                                   id=f"nodeclass-{uuid.uuid4()}", task_queue=stack.task_queue)
    assert [(c.name, c.ready) for c in resolved.classes] == [("default", True)], resolved
    ops: list[str] = []
    stack.ec2.meta.events.register("provide-client-params.ec2.*", lambda model, **_: ops.append(model.name))
    ice = IceInjector().install(stack.ec2)
    ice.exhaust("m5.large")  # every zone
    await asyncio.to_thread(stack.sim.load_objects, fresh([
        node_pool("default", requirements=REQS, consolidate_after="Never"), replica_set("api", 1, "1")]))
    refs = await wait_for(lambda: _unschedulable(stack), what="the pending pod")
    result = await stack.client.execute_workflow(
        ProvisioningWorkflow.run, ProvisioningInput(pods=refs, settings=FAST), id=f"provision-{uuid.uuid4()}",
        task_queue=stack.task_queue)
    assert result.outcome == ProvisioningPhase.SUCCEEDED, result.message
    (launched,) = result.launched
    assert launched.instance_type == "m5.xlarge"
    assert ops.count("CreateFleet") == 1 and "RunInstances" not in ops  # one request, every offering in it
    assert sorted(ice.refused) == [("m5.large", "us-east-1a"), ("m5.large", "us-east-1b")]
    await wait_for(lambda: _running(stack) == 1, timeout=60, what="the api pod running on the fleet's node")


async def test_every_override_refused_backs_off_with_karpenters_events(world_stack: Any) -> None:
    _, stack = world_stack
    await stack.client.execute_workflow(NodeClassWorkflow.run, NodeClassInput(), id=f"nodeclass-{uuid.uuid4()}",
                                        task_queue=stack.task_queue)
    ice = IceInjector().install(stack.ec2)
    ice.exhaust("m5.large")
    ice.exhaust("m5.xlarge")
    await asyncio.to_thread(stack.sim.load_objects, fresh([
        node_pool("default", requirements=REQS, consolidate_after="Never"), replica_set("api", 1, "1")]))
    refs = await wait_for(lambda: _unschedulable(stack), what="the pending pod")
    result = await stack.client.execute_workflow(
        ProvisioningWorkflow.run, ProvisioningInput(pods=refs, settings=FAST), id=f"provision-{uuid.uuid4()}",
        task_queue=stack.task_queue)
    assert result.outcome == ProvisioningPhase.FAILED and result.no_capacity == ["default"]
    assert ice.fleet_requests == 1  # the second attempt found every offering marked and asked EC2 nothing
    assert len(ice.refused) == 4
    # the refused NodeClaim is deleted; its finalizer goes with the lifecycle controller's next pass, not at once
    await wait_for(lambda: stack.node_claims() == [] or None, timeout=30, what="the refused NodeClaim gone")
    events = [e for e in stack.events() if e["reason"] == "InsufficientCapacityError"]
    assert {e["involvedObject"]["kind"] for e in events} >= {"NodePool", "Pod"}
    assert any("InsufficientInstanceCapacity" in e["message"] for e in events if e["involvedObject"]["kind"] == "Pod")


def _templates(stack: Stack, node_class_name: str) -> list[str]:
    found = stack.ec2.describe_launch_templates(Filters=[
        {"Name": "tag:karpenter.k8s.aws/ec2nodeclass", "Values": [node_class_name]},
        {"Name": "tag:eks:eks-cluster-name", "Values": ["e2e"]}], MaxResults=200)["LaunchTemplates"]
    return sorted(t["LaunchTemplateName"] for t in found)


async def test_a_deleted_class_waits_for_its_nodeclaim_then_its_launch_templates_go(watching_stack: Any) -> None:
    """Through the worker's wiring: the launch's templates carry the worker's cluster and the class, and the
    NodeClassWorkflow finalizes a deleted class once its NodeClaim is gone (docs/semantics.md §16.3)."""
    _, stack = watching_stack
    kube = KubeClient(stack.api)

    async def resolve() -> Any:
        return await stack.client.execute_workflow(NodeClassWorkflow.run, NodeClassInput(),
                                                   id=f"nodeclass-{uuid.uuid4()}", task_queue=stack.task_queue)

    await resolve()
    assert "karpenter.k8s.aws/termination" in (kube.get_node_class("default") or {})["metadata"]["finalizers"]
    earlier = _templates(stack, "default")  # the shared stand-in keeps earlier tests' class "default" templates
    await asyncio.to_thread(stack.sim.load_objects, fresh([
        node_pool("default", requirements=REQS, consolidate_after="Never"), replica_set("api", 1, "1")]))
    refs = await wait_for(lambda: _unschedulable(stack), what="the pending pod")
    result = await stack.client.execute_workflow(
        ProvisioningWorkflow.run, ProvisioningInput(pods=refs, settings=FAST), id=f"provision-{uuid.uuid4()}",
        task_queue=stack.task_queue)
    (launched,) = result.launched
    made = _templates(stack, "default")
    assert len(set(made) - set(earlier)) == 1  # this launch's one template, tagged with the class and cluster
    kube.custom.delete_cluster_custom_object("karpenter.k8s.aws", "v1", "ec2nodeclasses", "default")
    await resolve()
    assert kube.get_node_class("default") is not None and _templates(stack, "default") == made
    waiting = [e for e in stack.events() if e["reason"] == "WaitingOnNodeClaimTermination"]
    assert [e["message"] for e in waiting] == [f"Waiting on NodeClaim termination for {launched.node_claim}"]
    kube.delete_node_claim(launched.node_claim)  # its termination drains and terminates it, then the finalizer goes
    await wait_for(lambda: stack.node_claims() == [] or None, timeout=60, what="the NodeClaim gone")
    await resolve()
    assert kube.get_node_class("default") is None and _templates(stack, "default") == []  # earlier ones too
