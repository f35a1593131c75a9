"""Durability of a drift rollout's bake: the worker process (planner schedule included) finds the pool's
DisruptionPolicy with drift waves and starts the pool's DriftRolloutWorkflow; it is SIGKILLed while wave 1 bakes
and a new one takes over. The bake deadline is workflow state (a durable timer), so the new worker keeps it: wave 2
starts no earlier than the deadline set before the kill, and the rollout finishes."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from support.disruption_stack import fresh, replica_set
from temporalio.client import Client

from api import labels
from bench.clusters import node_objects, node_pool
from contracts.disruption import DisruptionResult
from contracts.policy import RolloutPhase
from workflows.rollout import DriftRolloutWorkflow

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
BAKE = 10.0


def _spawn(client: Client, sim: Any, moto_endpoint: str, tq: str, log: Path) -> subprocess.Popen:
    cmd = [sys.executable, str(ROOT / "worker.py"), "--address", client.service_client.config.target_host,
           "--kubeconfig", sim.kubeconfig_path, "--ec2-endpoint", moto_endpoint, "--task-queue", tq,
           "--resync-seconds", "1", "--no-provisioning", "--min-drain-time", "500ms",  # Karpenter's 5 s, shortened
           "--ami-id", sim.world.ec2.image_id(),  # not a listing of moto's Amazon images (2-4 s) per start
           "--no-instance-type-discovery",  # the bundled catalog: 1,000+ types discovered per start cost CPU seconds
           "--sticky-queue-timeout", "1s"]  # the killed worker's cached workflows move on after 1 s, not 10 s
    env = dict(os.environ, PYTHONPATH=str(ROOT), NODEFLOW_PLANNER_SECONDS="2")
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log.open("wb"))


def _stop(proc: subprocess.Popen | None) -> None:
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


async def _rollout(client: Client, tq: str, timeout: float) -> Any:
    """The pool's rollout on this test's task queue (the session's dev server holds other tests' rollouts of a pool
    named `default`), once a planner pass started it."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        async for wf in client.list_workflows(f"WorkflowType = 'DriftRolloutWorkflow' AND TaskQueue = '{tq}'"):
            return client.get_workflow_handle_for(DriftRolloutWorkflow.run, wf.id, run_id=wf.run_id)
        await asyncio.sleep(0.5)
    raise AssertionError("no planner pass started the pool's drift rollout")


async def _status(handle, timeout: float, check) -> Any:
    """Query until `check` holds (the query waits for a worker: none answers while the new one starts)."""
    loop = asyncio.get_running_loop()
    end, last = loop.time() + timeout, None
    while loop.time() < end:
        try:
            last = await asyncio.wait_for(handle.query(DriftRolloutWorkflow.status), 5)
            if check(last):
                return last
        except Exception:  # no worker yet
            pass
        await asyncio.sleep(0.2)
    raise AssertionError(f"rollout status never matched: {last}")


async def test_worker_sigkill_during_bake_keeps_the_bake_deadline(temporal_client: Client, sim_ec2: Any,
                                                                  moto_endpoint: str, tmp_path: Path) -> None:
    objs = [node_pool("default", budgets=[{"nodes": "1"}], consolidate_after="Never")]
    for i in range(2):
        objs += node_objects(f"old-{i}", "m5.large", annotations={labels.TEMPLATE_HASH_ANNOTATION: "stale"})
    objs += node_objects("spare-0", "m5.large")
    objs.append(replica_set("api", 2, "500m"))
    objs.append({"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": "waves"},
                 "spec": {"nodePools": ["default"], "drift": {"waves": [1, "100%"], "bakeTime": f"{BAKE:g}s",
                                                               "healthTimeout": "20s"}}})
    sim_ec2.load_objects(fresh(objs))
    tq = f"tq-rollout-{uuid.uuid4().hex[:8]}"
    first = _spawn(temporal_client, sim_ec2, moto_endpoint, tq, tmp_path / "worker-1.log")
    second = None
    try:
        handle = await _rollout(temporal_client, tq, 150)  # a loaded host starts a worker slowly
        baking = await _status(handle, 60, lambda s: s.phase == RolloutPhase.BAKING)
        first.kill()  # SIGKILL mid-bake: nothing is saved on the way out
        first.wait(10)
        second = _spawn(temporal_client, sim_ec2, moto_endpoint, tq, tmp_path / "worker-2.log")
        after = await _status(handle, 120, lambda s: True)
        result = await asyncio.wait_for(handle.result(), 90)
        listed = [w async for w in temporal_client.list_workflows(
            f"WorkflowType = 'DisruptionWorkflow' AND TaskQueue = '{tq}'")]
        started = sorted(w.start_time for w in listed)
        outcomes = [(await temporal_client.get_workflow_handle(w.id, result_type=DisruptionResult).result())
                    for w in listed]
    finally:
        _stop(first)
        _stop(second)
    assert baking.bake_until is not None and baking.wave == 1
    if after.phase == RolloutPhase.BAKING:  # the new worker answered before the bake ended: the same deadline
        assert after.bake_until == baking.bake_until
    assert result.phase == RolloutPhase.SUCCEEDED and result.disrupted == 2, (result.message, outcomes)
    assert len(started) == 2, started
    assert started[1] >= baking.bake_until, (started, baking.bake_until)
