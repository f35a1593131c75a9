"""`nodeflow pause|resume`: globally through the planner schedule, per NodePool through its annotation."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import timedelta

from temporalio.client import Client

from api import labels
from bench.clusters import node_pool
from client.planner_schedule import ensure_planner_schedule, planner_paused
from starter.cli import run


def _annotations(sim, name: str) -> dict:
    from kubernetes import client as k8s

    api = sim.api_client()
    try:
        pool = k8s.CustomObjectsApi(api).get_cluster_custom_object("karpenter.sh", "v1", "nodepools", name)
    finally:
        api.close()
    return pool["metadata"].get("annotations") or {}


def test_pause_and_resume_one_nodepool(sim, capsys) -> None:
    sim.load_objects([node_pool("default"), node_pool("gpu")])
    assert run(["pause", "--nodepool", "gpu", "--kubeconfig", sim.kubeconfig_path, "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == {"scope": "nodepool", "nodePool": "gpu", "paused": True, "wasPaused": False}
    assert _annotations(sim, "gpu")[labels.PAUSED_ANNOTATION] == "true"
    assert labels.PAUSED_ANNOTATION not in _annotations(sim, "default")

    assert run(["resume", "--nodepool", "gpu", "--kubeconfig", sim.kubeconfig_path]) == 0
    assert "NodePool gpu resumed" in capsys.readouterr().out
    assert labels.PAUSED_ANNOTATION not in _annotations(sim, "gpu")

    assert run(["pause", "--nodepool", "nope", "--kubeconfig", sim.kubeconfig_path]) == 1
    assert "NodePool 'nope' not found" in capsys.readouterr().err


async def test_pause_and_resume_globally(temporal_client: Client, capsys) -> None:
    sid = f"nodeflow-planner-{uuid.uuid4().hex[:8]}"
    address = temporal_client.service_client.config.target_host
    handle = await ensure_planner_schedule(temporal_client, every=timedelta(minutes=5), task_queue=f"tq-{sid}",
                                           schedule_id=sid)
    try:
        code = await asyncio.to_thread(run, ["pause", "--address", address, "--schedule-id", sid, "-o", "json"])
        assert code == 0
        assert json.loads(capsys.readouterr().out)["paused"] is True
        assert await planner_paused(temporal_client, schedule_id=sid)
        assert await asyncio.to_thread(run, ["resume", "--address", address, "--schedule-id", sid]) == 0
        assert "planner resumed" in capsys.readouterr().out
        assert not await planner_paused(temporal_client, schedule_id=sid)
    finally:
        await handle.delete()
    code = await asyncio.to_thread(run, ["pause", "--address", address, "--schedule-id", sid])
    assert code == 1 and f"schedule '{sid}' not found" in capsys.readouterr().err
