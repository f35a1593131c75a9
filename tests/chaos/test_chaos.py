"""Chaos: the real worker in a subprocess, SIGKILLed 10 times at random moments while node deletions and
planner passes run against a simulator that fails 5% of API requests (429/500/409) and adds latency; the
Temporal dev server (SQLite file) is restarted once, moto_server once. Fixed seed, bounded to a few minutes.

moto_server keeps EC2 state in memory, so restarting it after instances exist would make every node's
instance vanish: that is not an outage EC2 can have (its state is durable), it is a different world. The
restart therefore happens while the worker and the simulator's kubelets are already connected to moto but
before the cluster's instances are launched: it proves that both keep working across an endpoint restart
(fresh connections, no cached dead socket), and every instance the checks count lives in the restarted moto.

End state checked: each node terminated or untouched as intended, 0 leaked instances, 0 stuck finalizers,
0 duplicate replacement launches (instances per NodeClaim tag and per ClientToken, from DescribeInstances),
0 PDB violations outside the grace-deadline path (simulator ledger), no workflow left running.
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from chaos.chaos_cluster import (
    DRIFTED,
    EMPTY,
    MANUAL,
    audit,
    cluster_objects,
    instances,
    nodes,
    retry,
    running_pods,
    settled,
)
from kubernetes import client as k8s
from support.moto_fixtures import AWS_TEST_ENV
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from devstack.processes import MotoServer, TemporalDevServer
from runtime.cloud_clients import ec2_client
from simulator.server import Simulator
from workflows.disruption_models import DisruptionSettings, PlannerInput
from workflows.planner import PlannerWorkflow

pytestmark = pytest.mark.chaos
ROOT = Path(__file__).resolve().parents[2]
SEED = int(os.environ.get("NODEFLOW_CHAOS_SEED", "20261122"))
KILLS = 10
FAULT_RATE, FAULT_LATENCY = 0.05, 0.01
SETTINGS = DisruptionSettings(validation_delay_seconds=0, ready_timeout_seconds=90, ready_poll_seconds=1,
                              termination_poll_seconds=0.5)


class WorkerProcess:
    """`python worker.py` in a subprocess (worker + deletion watcher), killed with SIGKILL and restarted."""

    def __init__(self, address: str, sim: Simulator, moto: str, task_queue: str, log_dir: Path) -> None:
        self.cmd = [sys.executable, str(ROOT / "worker.py"), "--address", address, "--kubeconfig",
                    sim.kubeconfig_path, "--ec2-endpoint", moto, "--task-queue", task_queue,
                    "--resync-seconds", "1", "--ami-id", sim.world.ec2.image_id(), "--log-level", "WARNING"]
        self.log_dir = log_dir
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        env = dict(os.environ, PYTHONPATH=str(ROOT), **AWS_TEST_ENV)
        log = (self.log_dir / f"worker-{self.starts}.log").open("wb")
        self.proc = subprocess.Popen(self.cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log)

    def kill(self) -> bool:
        """SIGKILL (no shutdown hook runs, in-flight activities just die); False when it had already exited."""
        if self.proc is None or self.proc.poll() is not None:
            return False
        self.proc.kill()
        self.proc.wait(10)
        return True

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()


async def _with_retries(fn: Any, what: str, timeout: float = 120) -> Any:
    """Client calls go through a Temporal server restart: retry until it answers again."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await fn()
        except Exception as exc:
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} kept failing: {exc!r}") from exc
            await asyncio.sleep(0.5)


async def _chaos(rng: random.Random, wp: WorkerProcess, temporal: TemporalDevServer, log: list[str]) -> None:
    """10 SIGKILLs at random moments, each followed by a restart; the dev server restarts after the 4th."""
    for n in range(1, KILLS + 1):
        await asyncio.sleep(rng.uniform(1.0, 4.0))
        log.append(f"kill {n}" if wp.kill() else f"worker {n} had exited")
        if n == 4:
            await asyncio.to_thread(temporal.restart)
            log.append("temporal restart")
        await asyncio.sleep(rng.uniform(0.0, 1.0))
        wp.start()


@pytest.mark.timeout(240)
async def test_chaos_ends_in_the_intended_state(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    os.environ.update(AWS_TEST_ENV)
    started = time.monotonic()
    temporal = TemporalDevServer(db_path=tmp_path / "temporal.db", headless=True, log_path=tmp_path / "temporal.log")
    moto = MotoServer(log_path=tmp_path / "moto.log")
    temporal.start()
    moto.start()
    sim = Simulator(time_scale=0.01, ready_delay=1.0, ec2_endpoint=moto.endpoint, ec2_poll_seconds=0.1)
    sim.start()
    tq = f"chaos-{uuid.uuid4()}"
    wp = WorkerProcess(temporal.address, sim, moto.endpoint, tq, tmp_path)
    api = sim.api_client()
    ec2 = ec2_client("us-east-1", moto.endpoint)
    events: list[str] = []
    chaos_task: asyncio.Task | None = None
    try:
        client = await Client.connect(temporal.address, data_converter=pydantic_data_converter)
        wp.start()
        await asyncio.sleep(1.0)
        moto.restart()  # see the module docstring: before any instance exists
        events.append("moto restart")
        sim.load_objects(cluster_objects())
        doomed = {n["metadata"]["name"]: n["spec"]["providerID"].rsplit("/", 1)[-1] for n in nodes(api)
                  if n["metadata"]["name"] in DRIFTED + EMPTY + MANUAL}
        deadline = time.monotonic() + 30
        while not all(running_pods(api, app) == n for app, n in (("web", 4), ("api", 6))):
            assert time.monotonic() < deadline, "pods never ran"
            await asyncio.sleep(0.2)
        sim.inject_faults(rate=FAULT_RATE, codes=(429, 500, 409), latency=FAULT_LATENCY)

        chaos_task = asyncio.create_task(_chaos(rng, wp, temporal, events))
        core = k8s.CoreV1Api(api)
        pending_deletes = list(MANUAL)
        passes = 0
        deadline = time.monotonic() + 150
        while True:
            if pending_deletes and rng.random() < 0.5:
                name = pending_deletes.pop(0)
                await asyncio.to_thread(retry, core.delete_node, name)
                events.append(f"delete {name}")
            try:
                await asyncio.wait_for(client.execute_workflow(
                    PlannerWorkflow.run, PlannerInput(settings=SETTINGS), id=f"chaos-planner-{uuid.uuid4()}",
                    task_queue=tq), 20)
                passes += 1
            except Exception as exc:  # the server restarts or the pass outlives its wait: the next pass follows
                events.append(f"planner pass failed: {type(exc).__name__}")
            if chaos_task.done() and not pending_deletes and await asyncio.to_thread(settled, api):
                break
            assert time.monotonic() < deadline, f"not settled in time; events: {events}"
            await asyncio.sleep(0.5)
        chaos_task.result()

        async def no_running() -> bool:
            running = [w.id async for w in client.list_workflows('ExecutionStatus="Running"')]
            if running:
                desc = await client.get_workflow_handle(running[0]).describe()
                pending = [(a.activity_type.name, a.attempt, a.last_failure.message)
                           for a in desc.raw_description.pending_activities]
                raise AssertionError(f"still running: {running}; first one's pending activities: {pending}")
            return True

        await _with_retries(no_running, "workflows finishing", timeout=60)
        sim.inject_faults(rate=0.0)
        report = await asyncio.to_thread(audit, api, ec2)
        states = {i["InstanceId"]: i["State"]["Name"] for i in instances(ec2)}
        terminated = sorted(n for n, iid in doomed.items()
                            if n not in report["nodes"] and states.get(iid) in ("shutting-down", "terminated"))
        stats = sim.stats()
    finally:
        if chaos_task is not None and not chaos_task.done():
            chaos_task.cancel()
        wp.stop()
        api.close()
        sim.stop()
        moto.stop()
        temporal.stop()

    violations = {c: n for c, n in stats["pdbViolations"].items() if c != "grace-deadline" and n}
    kills = sum(1 for e in events if e.startswith("kill"))
    print(f"\nchaos seed={SEED}: {kills} worker SIGKILLs, 1 Temporal restart, 1 moto restart, "
          f"{sum(stats['faultsInjected'].values())} API faults injected, {passes} planner passes, "
          f"{len(terminated)} nodes terminated, "
          f"{report['replacementLaunches']} replacements launched, {len(report['leakedInstances'])} leaked "
          f"instances, {len(report['stuckFinalizers'])} stuck finalizers, {len(report['duplicateLaunches'])} "
          f"duplicate launches, {sum(violations.values())} PDB violations "
          f"({stats['pdbViolations'].get('grace-deadline', 0)} on the grace-deadline path), "
          f"{time.monotonic() - started:.0f}s")
    assert kills == KILLS and "temporal restart" in events and "moto restart" in events
    assert terminated == sorted(doomed) and len(doomed) == len(DRIFTED + EMPTY + MANUAL), (terminated, doomed)
    assert report["keptTouched"] == []
    assert sorted(n for n in report["nodes"] if n.startswith("keep-")) == ["keep-0", "keep-1"]
    assert len(report["nodes"]) == 6 and report["nodeClaims"] == 6, report
    assert report["leakedInstances"] == [] and report["nodesWithoutInstance"] == [], report
    assert report["stuckFinalizers"] == [], report
    assert report["duplicateLaunches"] == [], report
    assert report["replacementLaunches"] == 4, report
    assert violations == {}, [e for e in sim.ledger() if e["violated"]]
