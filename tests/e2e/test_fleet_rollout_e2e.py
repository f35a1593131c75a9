"""A fleet rollout end to end: three simulated clusters (three API servers, each with its own worker on
its own task queue), one Temporal, one fleet worker as a `worker.py --fleet-only` process.

A new AMI is rolled out in three stages, one cluster each. Each cluster's own machinery does its part: the
NodeClassWorkflow resolves the pinned image and marks the node AMIDrift, the planner starts the pool's
DriftRolloutWorkflow (its DisruptionPolicy rolls drift in waves), which replaces the node. The fleet worker is
SIGKILLed during stage one's bake and restarted: the bake keeps its deadline. In stage two the replacement never
becomes Ready: the pool's rollout halts, so the fleet halts and says why; once fixed, `nodeflow fleet rollout
resume` resumes the pool's rollout too, and the fleet finishes."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from support.cli_runner import nodeflow
from support.disruption_stack import FAST, Stack, disruption_stack, fresh, record_history, replica_set, wait_for
from support.nodeclass_world import AwsWorld, create, node_class
from temporalio.testing import ActivityEnvironment

from activities.provisioning import ProvisioningActivities
from api import labels
from api.catalog import load_default_catalog
from api.fleet import RECORD_ANNOTATION, load_fleet_rollout
from api.nodeclass_launch import ClusterInfo
from bench.clusters import node_pool
from client.fleet import start_fleet_rollout
from contracts.disruption import LaunchInput, Replacement
from contracts.fleet import ClusterPhase, FleetPhase, FleetSettings
from contracts.nodeclass import NodeClassInput
from gateways.kube import KubeClient
from simulator.server import Simulator
from workflows.fleet import FleetRolloutWorkflow
from workflows.nodeclass import NodeClassWorkflow

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600), pytest.mark.xdist_group("fleet")]  # with the fleet restart
ROOT = Path(__file__).resolve().parents[2]
CA = base64.b64encode(b"-----CA-----").decode()
SETTINGS = FAST.model_copy(update={"ready_timeout_seconds": 20.0, "ready_poll_seconds": 0.5})
FLEET = FleetSettings(poll_seconds=1.0, unreachable_retry_seconds=1.0, gate_seconds=1.0)
BAKE_SECONDS = 10


def _class_spec(world: AwsWorld, image: str) -> dict[str, Any]:
    return {"amiFamily": "AL2023", "amiSelectorTerms": [{"id": image}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}], "role": world.role}


def _policy() -> dict[str, Any]:
    return {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": "waves"},
            "spec": {"nodePools": ["general"],
                     "drift": {"waves": ["100%"], "bakeTime": "1s", "maxFailedReplacements": 1,
                               "healthTimeout": "30s"}}}


async def _seed(stack: Stack, cluster: str, world: AwsWorld) -> None:
    """The cluster's objects, its class resolved to the old image, and one node launched from it (with a pod)."""
    kube = KubeClient(stack.api)
    create(kube, node_class("default", _class_spec(world, world.images["amd64-a"])))
    create(kube, node_pool("general", budgets=[{"nodes": "100%"}], consolidate_after="Never", requirements=[
        {"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
        {"key": labels.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large"]},
        {"key": labels.ZONE_LABEL, "operator": "In", "values": ["us-east-1a"]}]))
    kube.custom.create_cluster_custom_object("nodeflow.dev", "v1alpha1", "disruptionpolicies", _policy())
    await _resolve(stack)
    acts = ProvisioningActivities(kube, stack.ec2, load_default_catalog(),
                                  cluster=ClusterInfo(cluster, stack.sim.base_url, CA))
    inp = LaunchInput(key=f"seed-{uuid.uuid4().hex[:6]}/1/0", node_pool="general", reason="Provisioning",
                      replacement=Replacement(instance_types=["m5.large"], zone="us-east-1a"))
    await ActivityEnvironment().run(acts.launch_replacement, inp)
    await wait_for(lambda: _initialized(stack) == 1, timeout=60, what=f"{cluster}'s seed node")
    stack.sim.load_objects(fresh([replica_set("app", 1, "1500m")]))  # a drifted node needs a replacement


def _initialized(stack: Stack) -> int:
    return sum(1 for n in stack.nodes() if (n["metadata"].get("labels") or {}).get(labels.INITIALIZED_LABEL))


async def _resolve(stack: Stack) -> None:
    await stack.client.execute_workflow(NodeClassWorkflow.run, NodeClassInput(), id=f"nodeclass-{uuid.uuid4()}",
                                        task_queue=stack.task_queue)


async def _schedules(stack: Stack, new_image: str) -> None:
    """What the cluster's Schedules do, faster: resolve the EC2NodeClasses and run a planner pass every second, from
    when the fleet's change reaches the cluster until its nodes run the new image (three clusters planning every
    second, idle or not, would load a 2-core machine for nothing)."""
    kube = KubeClient(stack.api)
    while not (await asyncio.to_thread(kube.get_node_class, "default") or {}).get("metadata", {}).get(
            "annotations", {}).get(RECORD_ANNOTATION):
        await asyncio.sleep(0.5)
    while await asyncio.to_thread(_images, stack) != {new_image}:
        await _resolve(stack)
        await stack.planner_pass()
        await asyncio.sleep(1.0)


@contextlib.asynccontextmanager
async def _clusters(client: Any, moto_endpoint: str, world: AwsWorld, n: int) -> AsyncIterator[list[Stack]]:
    async with contextlib.AsyncExitStack() as stack_of:
        stacks = []
        for i in range(n):
            name = f"c{i + 1}-{world.tag}"
            sim = stack_of.enter_context(Simulator(time_scale=0.01, ready_delay=2.0, ec2_endpoint=moto_endpoint,
                                                   cluster_name=name))
            # a 0.5 s MinDrainTime (Karpenter's is 5 s): each stage's replaced node need not wait it out
            worker = {"cluster_name": name, "cluster_endpoint": sim.base_url, "cluster_ca": CA,
                      "min_drain_seconds": 0.5}
            stacks.append(await stack_of.enter_async_context(disruption_stack(
                client, sim, moto_endpoint, SETTINGS, worker=worker, ssm=world.ssm, iam=world.iam)))
        await asyncio.gather(*(_seed(s, f"c{i + 1}-{world.tag}", world) for i, s in enumerate(stacks)))
        loops = [asyncio.create_task(_schedules(s, world.images["amd64-b"])) for s in stacks]
        try:
            yield stacks
        finally:
            for task in loops:
                task.cancel()
            await asyncio.gather(*loops, return_exceptions=True)


def _fleet_worker(client: Any, queue: str) -> subprocess.Popen:
    address = client.service_client.config.target_host
    # --sticky-queue-timeout 1s: the rollout the SIGKILLed worker had cached goes to the new one after 1 s, not 10
    return subprocess.Popen([sys.executable, str(ROOT / "worker.py"), "--fleet-only", "--fleet-task-queue", queue,
                             "--sticky-queue-timeout", "1s", "--address", address, "--log-level", "warning"], cwd=ROOT)


def _document(world: AwsWorld, stacks: list[Stack]) -> dict[str, Any]:
    stages = [{"name": name, "bakeTime": bake, "clusters": [
        {"name": f"c{i + 1}", "taskQueue": stacks[i].task_queue, "nodePools": ["general"]}]}
        for i, (name, bake) in enumerate((("dev", f"{BAKE_SECONDS}s"), ("staging", "1s"), ("prod", "1s")))]
    return {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "FleetRollout", "metadata": {"name": f"ami-{world.tag}"},
            "spec": {"change": {"nodeClass": {"name": "default",
                                              "amiSelectorTerms": [{"id": world.images["amd64-b"]}]}},
                     "stages": stages}}


async def _until(handle: Any, check: Any, what: str, timeout: float = 240) -> Any:
    end = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < end:
        with contextlib.suppress(Exception):  # the fleet worker may be down: no one answers queries
            st = await handle.query(FleetRolloutWorkflow.status, rpc_timeout=timedelta(seconds=2))
            if check(st):
                return st
        await asyncio.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def _images(stack: Stack) -> set[str]:
    return {(c.get("status") or {}).get("imageID") for c in stack.node_claims()
            if not c["metadata"].get("deletionTimestamp")}


async def test_an_ami_rolls_through_three_clusters_halts_in_stage_two_and_resumes(
        temporal_client: Any, moto_endpoint: str) -> None:
    world = AwsWorld(moto_endpoint)
    old, new = world.images["amd64-a"], world.images["amd64-b"]
    queue = f"fleet-{world.tag}"
    async with _clusters(temporal_client, moto_endpoint, world, 3) as stacks:
        stacks[1].sim.world.mark_never_ready("m5.large")  # staging's replacements never become Ready
        assert all(_images(s) == {old} for s in stacks)
        rollout = load_fleet_rollout(_document(world, stacks))
        proc = _fleet_worker(temporal_client, queue)
        try:
            handle, started = await start_fleet_rollout(temporal_client, rollout, task_queue=queue, settings=FLEET)
            assert started
            baking = await _until(handle, lambda s: s.stages[0].phase == "Baking", "stage dev to bake")
            assert _images(stacks[0]) == {new} and _images(stacks[1]) == {old} == _images(stacks[2])
            bake_until = baking.stages[0].bake_until
            await asyncio.sleep(1.0)
            proc.kill()  # SIGKILL during the bake
            proc.wait(10)
            await asyncio.sleep(1.0)
            proc = _fleet_worker(temporal_client, queue)
            await _until(handle, lambda s: True, "the restarted fleet worker to answer")
            back = datetime.now(UTC)

            halted = await _until(handle, lambda s: s.phase == FleetPhase.HALTED, "the fleet to halt in staging")
            assert halted.stages[0].bake_until == bake_until, "a restart keeps the bake's deadline"
            # the bake ended on the timer set before the kill: a bake started over by the new worker would end
            # no earlier than a whole bake after it answered
            stage_two = halted.stages[1].started_at
            assert bake_until <= stage_two < back + _seconds(BAKE_SECONDS), (bake_until, back, stage_two, halted.log)
            assert halted.stage == 2 and halted.stages[1].clusters[0].phase == ClusterPhase.FAILED
            assert "c2: general: drift rollout halted at wave 1/1" in halted.halted_reason
            assert "never became Ready" in halted.halted_reason
            assert halted.stages[2].clusters[0].phase == ClusterPhase.PENDING and _images(stacks[2]) == {old}
            code, out, err = await nodeflow(temporal_client, "fleet", "rollout", "status", rollout.rollout_id)
            assert code == 0 and "Halted, stage 2/3" in out and "nodeflow fleet rollout resume" in out, err

            with stacks[1].sim.world.store.lock:
                stacks[1].sim.world.never_ready_types.clear()
            code, out, err = await nodeflow(temporal_client, "fleet", "rollout", "resume", rollout.rollout_id,
                                            "--reason", "capacity fixed")
            assert code == 0, err
            try:
                result = await asyncio.wait_for(handle.result(), 240)
            except TimeoutError:
                await _dump(temporal_client, handle, stacks)
                raise
            await record_history(handle, "FleetRolloutWorkflow", "three_stages_halt_resume")
            assert all(_images(s) == {new} for s in stacks)
        finally:
            proc.kill()
            proc.wait(10)
    assert result.phase == FleetPhase.SUCCEEDED, result.log
    assert sum("halted:" in line for line in result.log) == 1, result.log  # not again on the note just resumed
    assert [c.phase for s in result.stages for c in s.clusters] == [ClusterPhase.DONE] * 3
    for s in result.stages:  # time per stage against its bake, for the figures
        print(f"stage {s.name}: {(s.done_at - s.started_at).total_seconds():.1f} s, bake until "
              f"{s.bake_until:%H:%M:%S}" if s.bake_until else f"stage {s.name}")


async def _dump(client: Any, handle: Any, stacks: list[Stack]) -> None:
    """What each side was doing when the fleet did not finish: printed for the failure report."""
    from workflows.rollout import DriftRolloutWorkflow
    with contextlib.suppress(Exception):
        st = await handle.query(FleetRolloutWorkflow.status, rpc_timeout=timedelta(seconds=5))
        print("FLEET", st.phase, st.halted_reason, *st.log[-20:], sep="\n  ")
        for s in st.stages:
            print("STAGE", s.name, s.phase, [(c.name, c.phase, c.message, c.pools) for c in s.clusters])
    async for wf in client.list_workflows("WorkflowType='DriftRolloutWorkflow'"):
        with contextlib.suppress(Exception):
            rs = await client.get_workflow_handle(wf.id).query(DriftRolloutWorkflow.status,
                                                                rpc_timeout=timedelta(seconds=5))
            print("ROLLOUT", wf.id, wf.status, rs)
    for i, stack in enumerate(stacks):
        for c in stack.node_claims():
            print("CLAIM", i + 1, c["metadata"]["name"], c["metadata"].get("deletionTimestamp"),
                  (c.get("status") or {}).get("imageID"),
                  [(x["type"], x["status"]) for x in (c.get("status") or {}).get("conditions", [])])
        for n in stack.nodes():
            print("NODE", i + 1, n["metadata"]["name"], (n["metadata"].get("labels") or {}).get(
                labels.INITIALIZED_LABEL), [(x["type"], x["status"]) for x in (n.get("status") or {}).get(
                "conditions", [])], n["spec"].get("taints"))


def _seconds(n: float) -> timedelta:
    return timedelta(seconds=n)
