"""The `nodeflow-nodeclass` Schedule (every 60 s, overlap SKIP, idempotent, a pause kept) and NodeClassWorkflow
resolving a class end to end: Temporal dev server, worker, moto and the simulator."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from support.nodeclass_world import AwsWorld, create, node_class
from temporalio.client import Client, ScheduleActionStartWorkflow, ScheduleOverlapPolicy
from temporalio.worker import Worker

from activities.nodeclass import NodeClassActivities
from client.nodeclass_schedule import ensure_nodeclass_schedule
from contracts.nodeclass import NodeClassInput, NodeClassResult
from gateways.kube import KubeClient
from workflows.nodeclass import NodeClassWorkflow


async def test_schedule_every_minute_skip_overlap_and_pause_kept(temporal_client: Client) -> None:
    sid = f"nodeflow-nodeclass-{uuid.uuid4().hex[:8]}"
    handle = await ensure_nodeclass_schedule(temporal_client, schedule_id=sid)
    try:
        await handle.pause(note="held")
        await ensure_nodeclass_schedule(temporal_client, schedule_id=sid)  # a worker restart
        desc = await handle.describe()
        assert desc.schedule.state.paused and desc.schedule.state.note == "held"
        assert [i.every for i in desc.schedule.spec.intervals] == [timedelta(seconds=60)]
        assert desc.schedule.policy.overlap == ScheduleOverlapPolicy.SKIP
        action = desc.schedule.action
        assert isinstance(action, ScheduleActionStartWorkflow) and action.workflow == "NodeClassWorkflow"
    finally:
        await handle.delete()


async def test_workflow_resolves_every_class(temporal_client: Client, moto_endpoint: str, k8s: Any) -> None:
    world, kube = AwsWorld(moto_endpoint), KubeClient(k8s)
    create(kube, node_class("nodes", {
        "amiFamily": "AL2023", "amiSelectorTerms": [{"id": world.images["arm64"]}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}],
        "securityGroupSelectorTerms": [{"name": f"named-{world.tag}"}], "instanceProfile": "p"}))
    acts = NodeClassActivities(kube, world.ec2, world.ssm, world.iam, cluster_name="demo")
    tq = f"tq-{uuid.uuid4()}"
    async with Worker(temporal_client, task_queue=tq, workflows=[NodeClassWorkflow], activities=[acts.reconcile]):
        result: NodeClassResult = await temporal_client.execute_workflow(
            NodeClassWorkflow.run, NodeClassInput(), id=f"nodeclass-{uuid.uuid4()}", task_queue=tq,
            result_type=NodeClassResult)
    assert [(c.name, c.ready, c.amis, c.subnets, c.security_groups) for c in result.classes] == [
        ("nodes", True, 1, 3, 1)]
    status = (kube.get_node_class("nodes") or {})["status"]
    assert status["amis"][0]["requirements"][0]["values"] == ["arm64"]
