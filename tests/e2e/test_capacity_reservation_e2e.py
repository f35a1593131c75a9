"""Capacity reservations through the worker (dev server + simulator wired to the stand-in EC2 + the real worker's
wiring, docs/semantics.md §16.4): the EC2NodeClass's `capacityReservationSelectorTerms` resolve into
`status.capacityReservations`; a pool that allows `reserved` launches its first node into the reservation (one
CreateFleet whose launch template targets it; the NodeClaim and Node carry the reservation labels); when EC2
refuses the used-up reservation (ReservationCapacityExceeded) the reservation is marked full and the next attempt
launches on-demand. Before capacity reservations the terms were ignored and every launch was on-demand."""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes import client as k8s
from support.disruption_stack import Stack, disruption_stack, fresh, replica_set, wait_for
from support.nodeclass_world import AwsWorld, create, node_class

from api import labels
from api.capacity_reservations import RESERVATION_ID_LABEL, RESERVATION_TYPE_LABEL
from bench.clusters import node_pool
from contracts.nodeclass import NodeClassInput
from contracts.provisioning import PodRef, ProvisioningInput, ProvisioningPhase, ProvisioningSettings
from gateways.kube import KubeClient
from workflows.nodeclass import NodeClassWorkflow
from workflows.provisioning import ProvisioningWorkflow

pytestmark = pytest.mark.e2e
CA = base64.b64encode(b"-----CA-----").decode()
FAST = ProvisioningSettings(ready_timeout_seconds=60, ready_poll_seconds=1, ice_backoff_seconds=1, ice_attempts=2)
REQS = [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["reserved", "on-demand"]},
        {"key": labels.ARCH_LABEL, "operator": "In", "values": ["amd64"]},
        {"key": labels.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large", "m5.xlarge"]},
        {"key": labels.ZONE_LABEL, "operator": "In", "values": ["us-east-1a", "us-east-1b"]}]


@pytest.fixture
async def world_stack(temporal_client: Any, sim_ec2: Any, moto_endpoint: str
                      ) -> AsyncIterator[tuple[AwsWorld, Stack, str]]:
    world = AwsWorld(moto_endpoint)
    reservation = world.ec2.create_capacity_reservation(
        InstanceType="m5.xlarge", InstancePlatform="Linux/UNIX", AvailabilityZone="us-east-1a", InstanceCount=1,
        InstanceMatchCriteria="targeted", TagSpecifications=[{"ResourceType": "capacity-reservation", "Tags": [
            {"Key": "team", "Value": world.tag}]}])["CapacityReservation"]["CapacityReservationId"]
    worker = {"cluster_name": "e2e", "cluster_endpoint": sim_ec2.base_url, "cluster_ca": CA}
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=worker, ssm=world.ssm,
                                iam=world.iam) as stack:
        create(KubeClient(stack.api), node_class("default", {
            "amiFamily": "AL2023", "amiSelectorTerms": [{"tags": {"team": world.tag}}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}], "role": world.role,
            "capacityReservationSelectorTerms": [{"tags": {"team": world.tag}}]}))
        yield world, stack, reservation


def _pending(stack: Stack, app: str) -> list[PodRef]:
    items = k8s.CoreV1Api(stack.api).list_namespaced_pod("default", label_selector=f"app={app}").items
    pods = stack.api.sanitize_for_serialization(items)
    return [PodRef(key=f"default/{p['metadata']['name']}", uid=p["metadata"]["uid"]) for p in pods
            if any(c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
                   for c in (p.get("status") or {}).get("conditions") or [])]


def _class_reservations(stack: Stack) -> list[dict[str, Any]]:
    obj = KubeClient(stack.api).get_node_class("default") or {}
    return list((obj.get("status") or {}).get("capacityReservations") or [])


async def _provision(stack: Stack, app: str) -> Any:
    refs = await wait_for(lambda: _pending(stack, app), what=f"the pending {app} pod")
    return await stack.client.execute_workflow(
        ProvisioningWorkflow.run, ProvisioningInput(pods=refs, settings=FAST), id=f"provision-{uuid.uuid4()}",
        task_queue=stack.task_queue)


async def test_a_reserved_launch_fills_the_reservation_then_falls_back_to_on_demand(world_stack: Any) -> None:
    world, stack, reservation = world_stack
    resolved = await stack.client.execute_workflow(NodeClassWorkflow.run, NodeClassInput(),
                                                   id=f"nodeclass-{uuid.uuid4()}", task_queue=stack.task_queue)
    assert [(c.name, c.ready) for c in resolved.classes] == [("default", True)], resolved
    (entry,) = _class_reservations(stack)
    assert (entry["id"], entry["instanceType"], entry["availabilityZone"], entry["reservationType"],
            entry["instanceMatchCriteria"], entry["availableInstanceCount"]) == (
        reservation, "m5.xlarge", "us-east-1a", "default", "targeted", 1)
    ops: list[str] = []
    stack.ec2.meta.events.register("provide-client-params.ec2.*", lambda model, **_: ops.append(model.name))
    await asyncio.to_thread(stack.sim.load_objects, fresh([
        node_pool("default", requirements=REQS, consolidate_after="Never"), replica_set("first", 1, "3")]))
    first = await _provision(stack, "first")
    assert first.outcome == ProvisioningPhase.SUCCEEDED, first.message
    (launched,) = first.launched
    assert (launched.capacity_type, launched.instance_type, launched.zone) == ("reserved", "m5.xlarge", "us-east-1a")
    assert ops.count("CreateFleet") == 1
    claim = next(c for c in stack.node_claims() if c["metadata"]["name"] == launched.node_claim)
    assert claim["metadata"]["labels"][RESERVATION_ID_LABEL] == reservation
    assert claim["metadata"]["labels"][RESERVATION_TYPE_LABEL] == "default"
    assert claim["metadata"]["labels"][labels.CAPACITY_TYPE_LABEL] == "reserved"
    (cr,) = world.ec2.describe_capacity_reservations(CapacityReservationIds=[reservation])["CapacityReservations"]
    assert cr["AvailableInstanceCount"] == 0  # EC2 counts the instance in the reservation
    assert _class_reservations(stack)[0]["availableInstanceCount"] == 0  # and the launch counted it
    # Another cluster's view: the class still says there is room (as before the next resolution), so the next
    # launch targets the reservation, EC2 refuses it, and the retry launches on-demand.
    KubeClient(stack.api).patch_node_class_status("default", {"status": {"capacityReservations": [
        {**_class_reservations(stack)[0], "availableInstanceCount": 1}]}})
    await asyncio.to_thread(stack.sim.load_objects, [replica_set("second", 1, "3")])
    refused = await _provision(stack, "second")  # the batch's NodeClaim was for the reservation
    assert refused.outcome == ProvisioningPhase.FAILED and refused.no_capacity == ["default"], refused.message
    assert ops.count("CreateFleet") == 2  # refused by EC2 once; the second round knew the reservation was full
    assert _class_reservations(stack)[0]["availableInstanceCount"] == 0  # marked full by EC2's refusal
    assert any(e["reason"] == "InsufficientCapacityError" for e in stack.events())
    fallback = await _provision(stack, "second")  # the next pass for the still-pending pod (the intake's)
    assert fallback.outcome == ProvisioningPhase.SUCCEEDED, fallback.message
    (on_demand,) = fallback.launched
    assert on_demand.capacity_type == "on-demand" and ops.count("CreateFleet") == 3
    claim = next(c for c in stack.node_claims() if c["metadata"]["name"] == on_demand.node_claim)
    assert RESERVATION_ID_LABEL not in claim["metadata"]["labels"]
    node_name = await wait_for(lambda: next((c["status"].get("nodeName") for c in stack.node_claims()
                                             if c["metadata"]["name"] == launched.node_claim
                                             and (c.get("status") or {}).get("nodeName")), None),
                               timeout=60, what="the reserved claim's node")
    node = stack.api.sanitize_for_serialization(k8s.CoreV1Api(stack.api).read_node(node_name))
    await wait_for(lambda: RESERVATION_ID_LABEL in (stack.api.sanitize_for_serialization(
        k8s.CoreV1Api(stack.api).read_node(node_name))["metadata"].get("labels") or {}), timeout=60,
                   what="the reservation label on the Node")
    assert node["metadata"]["name"] == node_name
