"""Where a running disruption planned its pods reaches the next pass through its memo (Temporal visibility).

Real parts: the Temporal dev server (a DisruptionWorkflow started with no worker stays Running and listed), the
simulator over HTTP, the activity in Temporal's ActivityEnvironment on its own task queue.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from typing import Any

from support.sim_objects import node
from temporalio.client import Client
from temporalio.testing import ActivityEnvironment

from activities.planning_runner import MEMO_NODES, MEMO_PLACEMENTS, PlanningActivities, planned_pods, to_command
from contracts.disruption import NodeRef
from gateways.kube import KubeClient
from planning.disruption.commands import Command, PodMove


async def _read_when_listed(env: ActivityEnvironment, acts: PlanningActivities, node_name: str) -> Any:
    for _ in range(100):  # visibility lists a new workflow within a moment
        read = await env.run(acts._snapshot, None)
        if node_name in read.excluded:
            return read
        await asyncio.sleep(0.1)
    raise AssertionError(f"{node_name} never listed as in flight")


async def test_a_running_disruptions_placements_are_read_from_its_memo(sim: Any, k8s: Any,
                                                                      temporal_client: Client) -> None:
    sim.load_objects([node("plc-a"), node("plc-x")])
    tq = f"placements-{uuid.uuid4().hex[:8]}"
    placements = {"plc-x": ["default/p-1", "default/p-2"], "": ["default/p-3"]}
    handle = await temporal_client.start_workflow(
        "DisruptionWorkflow", id=f"disrupt-{uuid.uuid4()}", task_queue=tq,
        memo={MEMO_NODES: ["plc-a"], MEMO_PLACEMENTS: placements})
    try:
        env = ActivityEnvironment()
        env.info = dataclasses.replace(env.info, task_queue=tq)
        read = await _read_when_listed(env, PlanningActivities(KubeClient(k8s), temporal_client), "plc-a")
        assert read.planned == {"default/p-1": "plc-x", "default/p-2": "plc-x", "default/p-3": ""}
        own = await env.run(PlanningActivities(KubeClient(k8s), temporal_client)._snapshot, handle.id)
        assert own.planned == {}  # a validation does not reserve its own command's pods
    finally:
        await handle.terminate()


def test_to_command_groups_moves_by_destination_and_replacements_under_empty() -> None:
    cmd = Command(method="SingleNodeConsolidation", reason="Underutilized", node_pool="p", nodes=["a"],
                  pods=[PodMove(pod="ns/p-1", to="x"), PodMove(pod="ns/p-2", to="new-0"),
                        PodMove(pod="ns/p-3", to="x")])
    index = {n: NodeRef(name=n, uid=f"uid-{n}") for n in ("a", "x")}  # the cluster's nodes: new-0 is not one
    out = to_command(cmd, index)
    assert out.placements == {"x": ["ns/p-1", "ns/p-3"], "": ["ns/p-2"]}
    assert planned_pods(out.placements, {}) == {"ns/p-1": "x", "ns/p-3": "x", "ns/p-2": ""}
