"""Durability: the worker process is SIGKILLed in the middle of a drain and a new one takes over.

The termination still completes, the instance is terminated exactly once, no finalizer is left behind and
no PodDisruptionBudget is violated (the simulator's ledger records every pod removal).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from e2e.termination_helpers import (
    PodSpec,
    cluster_objects,
    ec2_client,
    eventually,
    instance_state,
    launch_instances,
    record_history,
)
from kubernetes import client as k8s
from temporalio.client import Client

from contracts.termination import TerminationPhase
from simulator.ec2 import DEFAULT_AMI
from workflows.termination import TerminationWorkflow, workflow_id

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def _spawn(client: Client, sim: Any, moto_endpoint: str, tq: str, log: Path) -> subprocess.Popen:
    cmd = [sys.executable, str(ROOT / "worker.py"), "--address", client.service_client.config.target_host,
           "--kubeconfig", sim.kubeconfig_path, "--ec2-endpoint", moto_endpoint, "--task-queue", tq,
           "--resync-seconds", "1", "--min-drain-time", "500ms",  # Karpenter's 5 s MinDrainTime, shortened
           "--no-instance-type-discovery",  # the bundled catalog: 1,000+ types discovered per start cost CPU seconds
           "--ami-id", DEFAULT_AMI,  # launches for the drained pods: the world has no EC2NodeClass
           "--sticky-queue-timeout", "1s"]  # the killed worker's cached workflows move on after 1 s, not 10 s
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log.open("wb"))


async def test_worker_sigkill_mid_drain(temporal_client: Client, sim: Any, moto_endpoint: str,
                                        tmp_path: Path) -> None:
    ec2 = ec2_client(moto_endpoint)
    i1, i2 = launch_instances(ec2, 2)
    sim.load_objects(cluster_objects({"n1": i1, "n2": i2}, [PodSpec("web", "n1", count=3, grace=5)],
                                     pdbs={"web": 3}))  # blocks every eviction until relaxed below
    api = sim.api_client()
    core, policy = k8s.CoreV1Api(api), k8s.PolicyV1Api(api)
    uid = core.read_node("n1").metadata.uid
    tq = f"tq-{uid[:8]}"
    logs = [tmp_path / "worker-1.log", tmp_path / "worker-2.log"]
    first = _spawn(temporal_client, sim, moto_endpoint, tq, logs[0])
    second = None
    try:
        core.delete_node("n1")
        handle = temporal_client.get_workflow_handle_for(TerminationWorkflow.run, workflow_id(uid))

        async def draining_blocked() -> bool:
            try:
                return bool((await handle.query(TerminationWorkflow.progress)).blocking_pdbs)
            except Exception:
                return False

        for _ in range(300):
            if await draining_blocked():
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the first worker never reached the blocked drain")
        first.kill()  # SIGKILL: no graceful shutdown, the drain activity dies mid-flight
        first.wait(10)
        policy.patch_namespaced_pod_disruption_budget("web", "default", {"spec": {"minAvailable": 1}})
        second = _spawn(temporal_client, sim, moto_endpoint, tq, logs[1])
        result = await asyncio.wait_for(handle.result(), timeout=60)
        await record_history(handle, "worker_killed_mid_drain")
        await eventually(lambda: _gone(core, "n1"), what="n1 gone")
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
    assert result.phase == TerminationPhase.TERMINATED
    assert instance_state(ec2, i1) in ("shutting-down", "terminated")
    calls = sum(log.read_text(errors="replace").count(f"TerminateInstances {i1}") for log in logs)
    assert calls == 1, calls
    claims = k8s.CustomObjectsApi(api).list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims")["items"]
    assert [c["metadata"]["name"] for c in claims] == ["n2-claim"]
    stats = sim.stats()
    assert stats["pdbViolationsTotal"] == 0, sim.ledger()
    assert stats["evictions"].get("201", 0) == 3
    api.close()


def _gone(core: Any, name: str) -> bool:
    try:
        core.read_node(name)
        return False
    except k8s.ApiException as exc:
        return exc.status == 404
