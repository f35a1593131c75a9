"""EC2NodeClass drift end to end: dev server + simulator (wired to moto) + the real worker.

- a class resolves image A and nodes are launched from it; a newer image B appears; the next resolution
  (NodeClassWorkflow) marks their NodeClaims Drifted/AMIDrift, and the planner replaces them one at a time under
  a budget of 1, with replacements launched from image B;
- a security group that joins the class's selection (SecurityGroupDrift), then a subnet that leaves it
  (SubnetDrift), are detected on the NodeClaim.
"""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from support.disruption_stack import Stack, disruption_stack, replica_set, wait_for
from support.nodeclass_world import AwsWorld, create, node_class
from temporalio.testing import ActivityEnvironment

from activities.provisioning import ProvisioningActivities
from api import labels
from api.catalog import load_default_catalog
from api.nodeclass_launch import ClusterInfo
from api.snapshot import Snapshot
from bench.clusters import node_pool
from contracts.disruption import DisruptionPhase, LaunchInput, Replacement
from contracts.nodeclass import NodeClassInput, NodeClassResult
from gateways.kube import KubeClient
from planning.planner.plan import plan
from workflows.nodeclass import NodeClassWorkflow

pytestmark = pytest.mark.e2e  # any xdist worker: the "demo" group is test_demo.py's shared run (and the disruption e2e)
CA = base64.b64encode(b"-----CA-----").decode()
ROLLOUT = "nodeflow.dev/rollout"  # the class selects images carrying this tag with the world's id


def _class_spec(world: AwsWorld) -> dict[str, Any]:
    return {"amiFamily": "AL2023", "amiSelectorTerms": [{"tags": {ROLLOUT: world.tag}}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}], "role": world.role}


def _pool() -> dict[str, Any]:
    return node_pool("default", budgets=[{"nodes": "1"}], consolidate_after="Never", requirements=[
        {"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
        {"key": labels.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large"]},
        {"key": labels.ZONE_LABEL, "operator": "In", "values": ["us-east-1a", "us-east-1b"]}])


@pytest.fixture
async def world_stack(temporal_client: Any, sim_ec2: Any, moto_endpoint: str) -> AsyncIterator[tuple[AwsWorld, Stack]]:
    world = AwsWorld(moto_endpoint)
    world.ec2.create_tags(Resources=[world.images["amd64-a"]], Tags=[{"Key": ROLLOUT, "Value": world.tag}])
    # min_drain_seconds: Karpenter's 5 s MinDrainTime (docs/semantics.md §9.5), shortened for the two terminations
    worker = {"cluster_name": "e2e", "cluster_endpoint": sim_ec2.base_url, "cluster_ca": CA, "min_drain_seconds": 0.5}
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=worker, ssm=world.ssm,
                                iam=world.iam) as stack:
        kube = KubeClient(stack.api)
        create(kube, node_class("default", _class_spec(world)))
        await asyncio.to_thread(create, kube, _pool())
        yield world, stack


async def _resolve(stack: Stack) -> NodeClassResult:
    """One NodeClassWorkflow run, as the `nodeflow-nodeclass` Schedule starts it."""
    return await stack.client.execute_workflow(NodeClassWorkflow.run, NodeClassInput(), id=f"nodeclass-{uuid.uuid4()}",
                                               task_queue=stack.task_queue)


async def _launch(stack: Stack, zones: list[str]) -> list[str]:
    """Nodes launched from the class (the provisioning activity, as a disruption's replacement launch runs it)."""
    # the nodes' bootstrap names this cluster's API server, or its kubelets would join none (simulator/membership.py)
    acts = ProvisioningActivities(KubeClient(stack.api), stack.ec2, load_default_catalog(),
                                  cluster=ClusterInfo("e2e", stack.sim.base_url, CA))
    claims = []
    for i, zone in enumerate(zones):
        inp = LaunchInput(key=f"seed-{uuid.uuid4().hex[:6]}/1/{i}", node_pool="default", reason="Provisioning",
                          replacement=Replacement(instance_types=["m5.large"], zone=zone))
        claims.append((await ActivityEnvironment().run(acts.launch_replacement, inp)).node_claim)
    await wait_for(lambda: _initialized(stack) >= len(zones), timeout=60, what="seed nodes ready")
    return claims


def _initialized(stack: Stack) -> int:
    return sum(1 for n in stack.nodes() if (n["metadata"].get("labels") or {}).get(labels.INITIALIZED_LABEL))


def _claims(stack: Stack) -> dict[str, dict[str, Any]]:
    return {c["metadata"]["name"]: c for c in stack.node_claims() if not c["metadata"].get("deletionTimestamp")}


def _drifted(claim: dict[str, Any]) -> str | None:
    for c in (claim.get("status") or {}).get("conditions") or []:
        if c["type"] == "Drifted" and c["status"] == "True":
            return c.get("reason")
    return None


def _in_disruption(stack: Stack) -> int:
    return sum(1 for n in stack.nodes() if n["metadata"].get("deletionTimestamp") or any(
        t.get("key") == labels.DISRUPTED_TAINT_KEY for t in (n.get("spec") or {}).get("taints") or []))


def _dry_run_drift(stack: Stack) -> str:
    """`nodeflow plan -f` on what the cluster holds now, the Drifted conditions removed: the node it drifts, decided
    from the EC2NodeClass alone."""
    objs = KubeClient(stack.api).cluster_objects()
    for o in objs:
        if o["kind"] == "NodeClaim":
            o["status"]["conditions"] = [c for c in o["status"].get("conditions") or [] if c["type"] != "Drifted"]
    result = plan(Snapshot.from_objects(objs), datetime.now(UTC))
    (cmd,) = [c for c in result.commands if c.method == "Drift"][:1]
    return cmd.nodes[0]


async def test_a_new_ami_rolls_the_nodes_one_at_a_time(world_stack: tuple[AwsWorld, Stack]) -> None:
    world, stack = world_stack
    first = await _resolve(stack)
    assert [(c.name, c.ready, c.amis) for c in first.classes] == [("default", True, 1)], first
    seeds = await _launch(stack, ["us-east-1a", "us-east-1b"])
    stack.sim.load_objects([replica_set("app", 2, "1500m")])  # one pod per node: a drifted node needs a new one
    assert {_claims(stack)[c]["status"]["imageID"] for c in seeds} == {world.images["amd64-a"]}
    assert (await stack.planner_pass()).started == []  # current nodes: nothing to do

    world.ec2.create_tags(Resources=[world.images["amd64-b"]], Tags=[{"Key": ROLLOUT, "Value": world.tag}])
    second = await _resolve(stack)
    assert second.drifted == {"AMIDrift": 2}
    assert {c: _drifted(_claims(stack)[c]) for c in seeds} == {c: "AMIDrift" for c in seeds}
    dry_run = _dry_run_drift(stack)
    assert dry_run in {_claims(stack)[c]["status"]["nodeName"] for c in seeds}

    first_pass = await stack.planner_pass()
    assert len(first_pass.started) == 1  # budget 1
    uids = {n["metadata"]["name"]: n["metadata"]["uid"] for n in stack.nodes()}
    assert first_pass.started[0] == f"disrupt-{uids[dry_run]}", "the live planner decides as the dry run"
    peak = 0
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 150
    while any(c in _claims(stack) for c in seeds):
        assert loop.time() < deadline, [await stack.failures(w) for w in stack.started]
        await stack.planner_pass()
        peak = max(peak, await asyncio.to_thread(_in_disruption, stack))
        await asyncio.sleep(0.5)
    results = [await stack.outcome(w) for w in stack.started]
    assert len(results) == 2 and all(r.outcome == DisruptionPhase.SUCCEEDED for r in results), results
    assert peak <= 1, "a budget of 1 disrupts one node at a time"
    events = {(e["involvedObject"]["name"], e["reason"], e["message"]) for e in stack.events()}
    assert any(reason == "DisruptionTerminating" and msg == "Disrupting Node: Drifted"
               for _, reason, msg in events), events
    replacements = [r.replacements[0].node_claim for r in results]
    claims = _claims(stack)
    assert set(claims) == set(replacements)
    assert {claims[c]["status"]["imageID"] for c in replacements} == {world.images["amd64-b"]}
    assert (await _resolve(stack)).drifted == {}  # the new nodes are current


async def test_security_group_and_subnet_drift_are_detected(world_stack: tuple[AwsWorld, Stack]) -> None:
    world, stack = world_stack
    await _resolve(stack)
    (seed,) = await _launch(stack, ["us-east-1a"])
    subnet = _claims(stack)[seed]["metadata"]["annotations"]["nodeflow.dev/subnet-id"]
    assert subnet == world.subnets["big-a"]

    discovery = [{"Key": "karpenter.sh/discovery", "Value": world.tag}]
    world.ec2.create_tags(Resources=[world.groups["named"]], Tags=discovery)  # a group joins the selection
    assert (await _resolve(stack)).drifted == {"SecurityGroupDrift": 1}
    assert _drifted(_claims(stack)[seed]) == "SecurityGroupDrift"

    world.ec2.delete_tags(Resources=[world.groups["named"]], Tags=discovery)
    world.ec2.delete_tags(Resources=[subnet], Tags=discovery)  # the node's subnet leaves it
    assert (await _resolve(stack)).drifted == {"SubnetDrift": 1}
    assert _drifted(_claims(stack)[seed]) == "SubnetDrift"
