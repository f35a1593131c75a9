"""Chaos: nothing lost under any single fault, nor under all of them in one run.

Two worker replicas (`python worker.py` in subprocesses, each with the deletion watcher and the planner Schedule's
upkeep, as the Deployment runs them, on the bundled catalog rather than discovering it at each restart) against a
simulator that fails 5% of API requests (429/500/409) and adds latency, a Temporal dev server on a SQLite file, and
moto_server behind a proxy that counts the workers' EC2 calls. Planner passes come only from the
`nodeflow-planner-<queue>` Schedule (every 2 s, overlap SKIP).
For one seed, in one run (bounded to a few minutes):

- replica `b` is SIGKILLed every few seconds all along; both are SIGKILLed around each grace deadline instant,
  and both are down together once, while a user deletes a Node and two NodeClaims (picked up by the watcher
  on restart);
- the Temporal dev server is SIGKILLed twice (not stopped) while terminations, disruptions and a planner pass
  are in flight, and restarted on the same SQLite file;
- the API server answers every request 503 for OUTAGE_SECONDS (30; LONG: 120) while drains and a replacement's
  readiness wait are in flight; watch streams are cut, and resumes are answered 410 Gone (after a cut and after
  the outage);
- grace-* nodes (NodeClaim terminationGracePeriod 60s) hold pods behind a maxUnavailable 0 PDB: each is deleted
  on the grace-deadline path, no earlier than `deadline - its terminationGracePeriodSeconds`, deadline =
  the earliest deletionTimestamp of its Node / NodeClaim + 60 s (wall clock: the simulator's time_scale shortens
  the pods' own grace periods once deleted, not the termination's deadline, which the workflow keeps in real
  time; both the ledger and the deletionTimestamps are stamped by the simulator, to the second);
- EC2 throttles 10% of the workers' launches and terminations all along, answers the first launches with
  InsufficientInstanceCapacity (the launch takes the next offering), and refuses TerminateInstances
  (UnauthorizedOperation: revoked credentials) from just after the both-down restart until a termination has said
  so in a CloudUnauthorized Event (tests/chaos/chaos_cloud.py);
- moto_server is restarted once before instances exist (moto keeps EC2 state in memory: restarting it later
  would make every instance vanish, which is not an outage EC2 can have, it is a different world).

End state checked: each node terminated or untouched as intended, 0 leaked instances, 0 stuck finalizers,
0 duplicate replacement launches (instances per NodeClaim tag and per ClientToken), each doomed instance's
TerminateInstances accepted exactly once (proxy), exactly one TerminationWorkflow per machine, no two
PlannerWorkflow runs overlapping in time, no workflow failed or timed out, 0 PDB violations outside the
grace-deadline path and every hold pod removal on it, no workflow left running, 0 pods left Pending longer than a
node's launch and readiness plus the scheduler's delay (PENDING_BOUND).

The simulator's kube-scheduler is the slow one a real control plane showed: a pod that found no node is retried only
SCHEDULER_RETRY simulated seconds later (10 s of wall time), longer than the pools' consolidateAfter.

The suite runs one seed, 7: the one whose replica kills slow the drifts most. It ran 20261122 beside it until
2026-11-30; on a 2-core machine the suite is CPU-bound, and the second seed cost it about 120 CPU-s (a minute of
the run) for one more random order of the same scripted faults, each of which every seed meets
(docs/benchmarks.md, Test suite). NODEFLOW_CHAOS_SEED picks another seed (NODEFLOW_CHAOS_SEEDS=7,20261122 runs one
test per seed, each an xdist group of its own, side by side on four workers);
NODEFLOW_CHAOS_LONG=1 makes each run longer (four Temporal kills, a 120 s outage, replica b killed until the
cluster has converged).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from chaos.chaos_cloud import ICE_TIMES, THROTTLE_RATE, CloudChaos
from chaos.chaos_cluster import (
    DRIFTED,
    EMPTY,
    GRACE,
    HOLD_GRACE,
    KEEP,
    LATE_DRIFT,
    MANUAL,
    NODE_GRACE_SECONDS,
    audit,
    cluster_objects,
    instances,
    node_claims,
    nodes,
    retry,
    running_pods,
    settled,
)
from chaos.chaos_processes import Ec2CountingProxy, Replicas
from kubernetes import client as k8s
from support.moto_fixtures import AWS_TEST_ENV
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.contrib.pydantic import pydantic_data_converter

from api import labels
from client.planner_schedule import planner_schedule_id, set_planner_paused
from contracts.termination import TerminationInput
from devstack.audit import termination_runs_per_machine
from devstack.processes import MotoServer, TemporalDevServer
from runtime.cloud_clients import ec2_client
from simulator.scheduler_timing import SchedulerTiming
from simulator.server import Simulator

# each seed is an xdist group of its own, so four workers run several seeds side by side (one after the other two
# were the whole suite's last four minutes); tests/support/xdist_groups.py starts every group first
pytestmark = [pytest.mark.chaos]
SEEDS = [int(s) for s in (os.environ.get("NODEFLOW_CHAOS_SEEDS") or os.environ.get("NODEFLOW_CHAOS_SEED")
                          or "7").split(",") if s.strip()]
LONG = os.environ.get("NODEFLOW_CHAOS_LONG", "").lower() not in ("", "0", "false", "no")
TEMPORAL_KILLS = 4 if LONG else 2
# 30 s (was 60; LONG keeps 120): twice the ~15 s after which cluster reads used to give up (READ_RETRY in
# workflows/retries.py now holds them until the outage ends); it breaks every open watch, and the drains and the
# readiness wait in flight retry across it.
OUTAGE_SECONDS = 120.0 if LONG else 30.0
# How long the outage waits for its moment. A loaded 2-core machine (the soak beside the suite) once took over
# 60 s to have the deleted nodes' terminations running while replica b was being killed.
OUTAGE_WAIT_SECONDS = 150
FAULT_RATE, FAULT_LATENCY = 0.05, 0.01
PLANNER_SECONDS = 2.0
TIME_SCALE = 0.01
READY_DELAY = 500.0  # simulated seconds, x TIME_SCALE: 5 s to register, 5 s more (+-25% jitter) to turn Ready
# The slow-scheduler world: a pod that found no node is retried only this many simulated seconds later
# (10 s of wall time), never earlier: longer than the general pool's consolidateAfter (0s; drift's is Never), than
# five planner passes and than the nomination window's floor (10 s), so capacity launched for pending pods sits
# empty through several passes before its pods bind, as in the trial.
SCHEDULER_RETRY = 1000.0
# No pod may wait unbound longer than this (wall seconds; the ledger counts every pod past it): a node's launch and
# readiness (READY_DELAY to boot, up to 1.25 x READY_DELAY more for its kubelet: 11.25 s), one scheduler retry
# (10 s), a provisioning batch (closed 1 s after its last pod, at most 10 s after it opened), the API outage
# (nothing launches through it) and 15 s for the worker kills (both replicas down for up to 3 s at a time, a killed
# replica's work taken up again). Before the slow scheduler every pod bound at its first attempt (longest wait
# 0.016 s, 2026-11-28).
PENDING_BOUND = READY_DELAY * TIME_SCALE * 2.25 + SCHEDULER_RETRY * TIME_SCALE + 11.0 + OUTAGE_SECONDS + 15.0
B_KILL_GAP = (4.0, 8.0)
IN_FLIGHT = ("TerminationWorkflow", "DisruptionWorkflow", "PlannerWorkflow")
DOOMED = DRIFTED + EMPTY + MANUAL + GRACE


def _epoch(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


async def _with_retries(fn: Callable[[], Awaitable[Any]], what: str, timeout: float = 120) -> Any:
    """Client calls go through a Temporal server restart: retry until it answers again."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await fn()
        except Exception as exc:
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} kept failing: {exc!r}") from exc
            await asyncio.sleep(0.5)


async def _running(client: Client) -> Counter[str]:
    return Counter([w.workflow_type async for w in client.list_workflows('ExecutionStatus="Running"')])


class Chaos:
    """The scripted faults of one run, each step logged with its time since the start."""

    def __init__(self, rng: random.Random, sim: Simulator, api: Any, client: Client, temporal: TemporalDevServer,
                 replicas: Replicas, initial_claims: set[str], cloud: CloudChaos) -> None:
        self.rng, self.sim, self.api, self.client, self.cloud = rng, sim, api, client, cloud
        self.temporal, self.replicas, self.initial_claims = temporal, replicas, initial_claims
        self.t0 = time.monotonic()
        self.events: list[str] = []
        self.temporal_kills: list[dict[str, int]] = []  # what was running at each kill
        self.deadlines: dict[str, float] = {}  # grace node -> deadline (epoch seconds)
        self.deadline_kills: list[float] = []  # kill time - instant, seconds
        self.outage: dict[str, Any] = {}
        self.done_at: float | None = None
        self._b_loop = True
        self._b_task: asyncio.Task | None = None

    def log(self, what: str) -> None:
        self.events.append(f"{time.monotonic() - self.t0:6.1f}s {what}")

    # ---- single faults -----------------------------------------------------------------------------------
    async def kill_temporal(self, n: int, wait: float = 60.0) -> None:
        """SIGKILL the dev server once terminations, disruptions and a planner pass run (or after `wait`)."""
        seen: Counter[str] = Counter()
        until = time.monotonic() + wait
        while time.monotonic() < until:
            try:
                seen = await _running(self.client)
            except Exception:
                seen = Counter()
            if all(seen[t] for t in IN_FLIGHT):
                break
            await asyncio.sleep(0.05)
        await asyncio.to_thread(self.temporal.kill)
        self.temporal_kills.append({t: seen[t] for t in IN_FLIGHT})
        self.log(f"temporal SIGKILL {n} (running: {dict(seen)})")
        await asyncio.sleep(self.rng.uniform(1.0, 3.0))
        await asyncio.to_thread(self.temporal.start)
        self.log(f"temporal restarted {n}")

    async def b_kills(self) -> None:
        """Replica b: SIGKILL, restart, again, until stopped (the scripted chaos ends; LONG: converged)."""
        while self._b_loop:
            await asyncio.sleep(self.rng.uniform(*B_KILL_GAP))
            if not self._b_loop:
                break
            async with self.replicas.lock:
                killed = self.replicas["b"].kill()
                self.log("kill b" if killed else "b had exited")
                await asyncio.sleep(self.rng.uniform(0.2, 1.0))
                self.replicas["b"].start()

    async def kill_both_at(self, instant: float, what: str) -> None:
        """SIGKILL both replicas within a second of `instant` (epoch seconds), restart them shortly after."""
        at = instant + self.rng.uniform(-1.0, 1.0)
        await asyncio.sleep(max(at - time.time(), 0.0))
        async with self.replicas.lock:
            n = self.replicas.kill_all()
            self.deadline_kills.append(time.time() - instant)
            self.log(f"kill both ({n}) {time.time() - instant:+.1f}s from {what}")
            await asyncio.sleep(self.rng.uniform(0.5, 2.0))
            self.replicas.start_all()

    def delete(self, kind: str, name: str) -> float:
        """A user's `kubectl delete`; returns the deletionTimestamp (epoch seconds; finalizers keep it)."""
        if kind == "node":
            core = k8s.CoreV1Api(self.api)
            retry(core.delete_node, name)
            stamp = retry(core.read_node, name).metadata.deletion_timestamp.timestamp()
        else:
            crd = k8s.CustomObjectsApi(self.api)
            retry(crd.delete_cluster_custom_object, "karpenter.sh", "v1", "nodeclaims", name)
            stamp = _epoch(retry(crd.get_cluster_custom_object, "karpenter.sh", "v1", "nodeclaims",
                                 name)["metadata"]["deletionTimestamp"])
        self.log(f"delete {kind} {name}")
        return stamp

    def release_late_drift(self) -> None:
        """Lift the do-not-disrupt that held LATE_DRIFT (the Node's value overrides its NodeClaim's), so the next
        planner pass starts its drift and a replacement is launching when the outage begins. A drift replacement
        that failed earlier under the faults (a rollback) holds the pool's drift for a minute or more
        (planning/policies/drift_backoff.py): the scenario lifts that hold as an operator would, by removing the
        NodePool's annotation, and says so, since the outage needs this drift in flight."""
        crd = k8s.CustomObjectsApi(self.api)
        pool = retry(crd.get_cluster_custom_object, "karpenter.sh", "v1", "nodepools", "drift")
        held = ((pool.get("metadata") or {}).get("annotations") or {}).get(labels.DRIFT_BACKOFF_ANNOTATION)
        if held:
            retry(crd.patch_cluster_custom_object, "karpenter.sh", "v1", "nodepools", "drift",
                  {"metadata": {"annotations": {labels.DRIFT_BACKOFF_ANNOTATION: None}}})
            self.log(f"lifted the drift pool's back-off {held}")
        retry(k8s.CoreV1Api(self.api).patch_node, LATE_DRIFT,
              {"metadata": {"annotations": {labels.DO_NOT_DISRUPT_ANNOTATION: "false"}}})
        self.log(f"released {LATE_DRIFT}'s drift")

    def late_drift_state(self) -> dict[str, Any]:
        """What a scenario bug report needs when LATE_DRIFT's drift never started: its node's annotations and
        taints, and the drift pool's annotations (a back-off)."""
        pool = retry(k8s.CustomObjectsApi(self.api).get_cluster_custom_object, "karpenter.sh", "v1", "nodepools",
                     "drift")
        drift = sorted(n["metadata"]["name"] for n in nodes(self.api)
                       if n["metadata"]["labels"].get(labels.NODEPOOL_LABEL) == "drift")
        state: dict[str, Any] = {"pool": (pool.get("metadata") or {}).get("annotations"), "drift nodes": drift}
        try:
            node = k8s.CoreV1Api(self.api).read_node(LATE_DRIFT)
        except k8s.ApiException as exc:
            return {**state, "node": f"gone ({exc.status})"}
        return {**state, "node": node.metadata.annotations, "taints": [t.key for t in node.spec.taints or []]}

    def readiness_waits(self) -> int:
        """Replacement NodeClaims launched but not Ready: a disruption waits for them."""
        return sum(1 for c in node_claims(self.api) if c["metadata"]["name"] not in self.initial_claims
                   and not c["metadata"].get("deletionTimestamp")
                   and not any(x.get("type") == "Ready" and x.get("status") == "True"
                               for x in (c.get("status") or {}).get("conditions") or []))

    async def api_outage(self) -> None:
        """Every API request 503 for OUTAGE_SECONDS, once a readiness wait and a drain are both in flight (or after
        OUTAGE_WAIT_SECONDS): the outage must meet both, so wait for the moment rather than hope for it. A readiness
        wait lasts about 10 s (READY_DELAY: the replacement boots, then turns Ready), a drain of grace-2 its grace
        period (its hold pods never evict), and LATE_DRIFT's drift starts only when a planner pass and the pool's
        budget let it. So the drift is released first and a replacement (its, or an earlier drift's) seen booting;
        grace-2 (and manual-0) are deleted only then, and the outage starts once a drain (theirs, or a drift's) runs
        beside a readiness wait. Deleting grace-2 first let its drain end before the drift, queued behind drifts a
        killed replica had slowed, launched anything (seed 7, twice on 2026-11-29)."""
        until = time.monotonic() + OUTAGE_WAIT_SECONDS
        await asyncio.to_thread(self.release_late_drift)
        waits = await self._until(until, lambda: asyncio.to_thread(self.readiness_waits))
        if not waits:
            self.log(f"no readiness wait in {OUTAGE_WAIT_SECONDS}s: {await asyncio.to_thread(self.late_drift_state)}")
        await asyncio.to_thread(self.delete, "node", "manual-0")
        t2 = await asyncio.to_thread(self.delete, "node", "grace-2")
        self.deadlines["grace-2"] = t2 + NODE_GRACE_SECONDS

        async def both() -> int:  # the drain lasts; the readiness wait may have ended (a later drift brings another)
            nonlocal running, waits
            running = await _with_retries(lambda: _running(self.client), "list running workflows")
            waits = await asyncio.to_thread(self.readiness_waits) if running["TerminationWorkflow"] else 0
            return waits
        running: Counter[str] = Counter()
        await self._until(until, both)
        self.sim.outage()
        start = time.monotonic()
        self.outage = {"readinessWaits": waits, "terminations": running["TerminationWorkflow"],
                       "disruptions": running["DisruptionWorkflow"]}
        self.log(f"API outage starts ({self.outage})")
        await asyncio.sleep(OUTAGE_SECONDS - 1.0)
        self.sim.gone_on_next_resume(4)  # the watches resuming after the outage meet 410 Gone
        await asyncio.sleep(1.0)
        self.sim.end_outage()
        self.outage["seconds"] = round(time.monotonic() - start, 1)
        self.log("API outage ends")

    @staticmethod
    async def _until(until: float, count: Callable[[], Awaitable[int]]) -> int:
        """Poll `count` until it is non-zero or `until` (monotonic seconds) passes; returns its last value."""
        while True:
            value = await count()
            if value or time.monotonic() >= until:
                return value
            await asyncio.sleep(0.2)

    # ---- the run -----------------------------------------------------------------------------------------
    async def run(self) -> None:
        rng = self.rng
        self._b_task = asyncio.create_task(self.b_kills())
        later: list[asyncio.Task] = []
        try:
            t0 = await asyncio.to_thread(self.delete, "node", "grace-0")
            self.deadlines["grace-0"] = t0 + NODE_GRACE_SECONDS
            await asyncio.sleep(rng.uniform(1.0, 3.0))
            self.sim.gone_on_next_resume(2)
            self.log(f"watches cut ({self.sim.cut_watches()} streams), next 2 resumes 410")
            await self.kill_temporal(1)

            await asyncio.sleep(rng.uniform(0.5, 2.0))
            async with self.replicas.lock:  # nothing runs: deletions must wait for the watcher's resync
                self.log(f"kill both ({self.replicas.kill_all()}): deletions while no worker runs")
                await asyncio.to_thread(self.delete, "node", "manual-1")
                await asyncio.to_thread(self.delete, "nodeclaim", "manual-2-claim")
                t1 = await asyncio.to_thread(self.delete, "nodeclaim", "grace-1-claim")
                self.deadlines["grace-1"] = t1 + NODE_GRACE_SECONDS
                await asyncio.sleep(rng.uniform(2.0, 3.0))
                self.replicas.start_all()
                self.log("both restarted")

            async def second_temporal_kill() -> None:
                await asyncio.sleep(rng.uniform(3.0, 8.0))
                await self.kill_temporal(2)
            later.append(asyncio.create_task(second_temporal_kill()))
            # the restarted drains meet revoked credentials
            later.append(asyncio.create_task(self.cloud.credential_window(self.api, self.log)))

            instants = sorted((d - g, f"{node}'s deadline - {app} grace")
                              for node, d in self.deadlines.items() for app, g in HOLD_GRACE.items())
            for instant, what in instants:
                await self.kill_both_at(instant, what)
            await asyncio.gather(*later)
            later.clear()
            self.sim.cut_watches()
            self.log("watches cut")

            outage = asyncio.create_task(self.api_outage())
            if LONG:
                async def more_temporal_kills() -> None:
                    for n in range(3, TEMPORAL_KILLS + 1):
                        await asyncio.sleep(rng.uniform(20.0, 40.0))
                        await self.kill_temporal(n, wait=10.0)
                later.append(asyncio.create_task(more_temporal_kills()))
            await outage
            await asyncio.gather(*later)
        finally:
            for t in later:
                t.cancel()
            self.done_at = time.monotonic()
            if not LONG:
                await self.stop()

    async def stop(self) -> None:
        """End the replica kills; every replica runs again."""
        self._b_loop = False
        if self._b_task is not None:
            await self._b_task
            self._b_task = None
        async with self.replicas.lock:
            for w in self.replicas.all.values():
                if not w.running():
                    w.start()


async def _disruption_outcomes(client: Client) -> Counter[str]:
    """DisruptionWorkflow results by outcome (Succeeded, RolledBack, ...): a rollback is allowed (the next pass
    plans again), and reported."""
    out: Counter[str] = Counter()
    async for w in client.list_workflows("WorkflowType='DisruptionWorkflow'"):
        last = (await client.get_workflow_handle(w.id, run_id=w.run_id).fetch_history()).events[-1]
        done = last.workflow_execution_completed_event_attributes
        result = json.loads(done.result.payloads[0].data) if done.result.payloads else {}
        outcome = result.get("outcome") or (w.status.name if w.status else "?")
        cause = result.get("rollback_cause") or result.get("rollbackCause")
        out[f"{outcome}/{cause}" if cause else outcome] += 1
        if cause:
            print(f"disruption {w.id} {outcome}/{cause}: {result.get('message')}")
    return out


async def _visibility(client: Client) -> dict[str, Any]:
    """Every execution's type, status and times: failures, planner overlaps, counts per type."""
    runs = [w async for w in client.list_workflows()]
    by_status = Counter((w.workflow_type, w.status.name if w.status else "?") for w in runs)
    bad = sorted(f"{w.workflow_type} {w.id} {w.status.name}" for w in runs if w.status in (
        WorkflowExecutionStatus.FAILED, WorkflowExecutionStatus.TIMED_OUT, WorkflowExecutionStatus.TERMINATED))
    passes = sorted((w.start_time, w.close_time, w.id) for w in runs if w.workflow_type == "PlannerWorkflow")
    overlaps = [(a[2], b[2]) for a, b in pairwise(passes)
                if a[1] is None or b[0] < a[1]]
    return {"byStatus": by_status, "bad": bad, "passes": len(passes), "overlaps": overlaps}


@pytest.mark.timeout(900 if LONG else 420)
@pytest.mark.parametrize("seed", [pytest.param(seed, marks=pytest.mark.xdist_group(f"chaos-{seed}")) for seed in SEEDS])
async def test_chaos_ends_in_the_intended_state(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    os.environ.update(AWS_TEST_ENV)
    started = time.monotonic()
    temporal = TemporalDevServer(db_path=tmp_path / "temporal.db", headless=True, log_path=tmp_path / "temporal.log")
    moto = MotoServer(log_path=tmp_path / "moto.log")
    temporal.start()
    moto.start()
    proxy = Ec2CountingProxy(moto.endpoint)
    proxy.start()
    sim = Simulator(time_scale=TIME_SCALE, ready_delay=READY_DELAY, ec2_endpoint=moto.endpoint,
                    scheduler_timing=SchedulerTiming.slow(SCHEDULER_RETRY))
    sim.world.ledger.pending_bound_seconds = PENDING_BOUND
    sim.start()
    tq = f"chaos-{uuid.uuid4()}"
    replicas = Replicas(["a", "b"], temporal.address, sim.kubeconfig_path, proxy.endpoint, tq,
                        sim.world.ec2.image_id(), tmp_path, PLANNER_SECONDS)
    api = sim.api_client()
    ec2 = ec2_client("us-east-1", moto.endpoint)
    chaos: Chaos | None = None
    supervisor: asyncio.Task | None = None
    try:
        client = await Client.connect(temporal.address, data_converter=pydantic_data_converter)
        replicas.start_all()
        supervisor = asyncio.create_task(replicas.supervise())
        await asyncio.sleep(1.0)
        moto.restart()  # see the module docstring: before any instance exists
        sim.load_objects(cluster_objects())
        machine = {n["metadata"]["name"]: n["spec"]["providerID"].rsplit("/", 1)[-1] for n in nodes(api)}
        claims = {c["metadata"]["name"]: c["status"]["nodeName"] for c in node_claims(api)}
        deadline = time.monotonic() + 30
        while not all(running_pods(api, app) == n for app, n in (("web", len(DRIFTED)), ("api", 6), ("hold-long", 3))):
            assert time.monotonic() < deadline, "pods never ran"
            await asyncio.sleep(0.2)
        while sim.stats()["faultKnobs"]["watchesOpen"] < 6:  # both replicas' deletion watchers are up
            assert time.monotonic() < deadline + 30, f"the replicas never watched: {sim.stats()['faultKnobs']}"
            await asyncio.sleep(0.2)
        sim.inject_faults(rate=FAULT_RATE, codes=(429, 500, 409), latency=FAULT_LATENCY)
        cloud = CloudChaos(moto.endpoint, seed)  # after the cluster's own instances were launched
        cloud.throttle()

        chaos = Chaos(rng, sim, api, client, temporal, replicas, set(claims), cloud)
        try:
            await chaos.run()
        except BaseException:
            print("\n".join(chaos.events))  # the scenario's log so far: what a failed precondition needs
            raise
        assert chaos.done_at is not None
        # The bound and why: docs/reliability.md (what may be owed after the last fault, about 110 s, twice over for
        # a shared 2-core machine). Twenty runs in a row over ten seeds converged 11-34 s after it (2026-11-29).
        deadline = time.monotonic() + 240
        while not await asyncio.to_thread(settled, api):
            assert time.monotonic() < deadline, f"not settled in time; events: {chaos.events}"
            await asyncio.sleep(0.5)
        converged = time.monotonic() - chaos.done_at
        await chaos.stop()

        # the replicas' queue is not `nodeflow`, so their Schedule's id carries it (docs/fleet.md §1)
        await _with_retries(lambda: set_planner_paused(client, True, note="chaos: end of run",
                                                       schedule_id=planner_schedule_id(tq)), "pause planner")

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
        report = await asyncio.to_thread(audit, api, ec2, sim.world.ledger)
        states = {i["InstanceId"]: i["State"]["Name"] for i in instances(ec2)}
        doomed = {n: machine[n] for n in DOOMED}
        terminated = sorted(n for n, iid in doomed.items()
                            if n not in report["nodes"] and states.get(iid) in ("shutting-down", "terminated"))

        def machine_of(inp: TerminationInput) -> str:
            if inp.provider_id:
                return inp.provider_id.rsplit("/", 1)[-1]
            node = inp.node_name or claims.get(inp.node_claim_name or "", "")
            return machine.get(node, f"unknown node {inp.node_name!r} claim {inp.node_claim_name!r}")

        per_machine = await termination_runs_per_machine(client, machine_of)
        vis = await _visibility(client)
        outcomes = await _disruption_outcomes(client)
        stats = sim.stats()
        ledger = sim.ledger()
        cloud_faults = cloud.totals()
    finally:
        if chaos is not None and chaos._b_task is not None:
            chaos._b_task.cancel()
        if supervisor is not None:
            supervisor.cancel()
        replicas.stop()
        api.close()
        sim.stop()
        proxy.stop()
        moto.stop()
        temporal.stop()

    knobs = stats["faultKnobs"]
    violations = {c: n for c, n in stats["pdbViolations"].items() if c != "grace-deadline" and n}
    held = [e for e in ledger if e["node"] in GRACE and e["pod"].split("/")[1].rsplit("-", 1)[0] in HOLD_GRACE]
    early = [(e["pod"], e["node"], e["at"]) for e in held if _epoch(e["at"]) < chaos.deadlines[e["node"]]
             - HOLD_GRACE[e["pod"].split("/")[1].rsplit("-", 1)[0]]]
    late = max((_epoch(e["at"]) - chaos.deadlines[e["node"]] + HOLD_GRACE[e["pod"].split("/")[1].rsplit("-", 1)[0]]
                for e in held), default=0.0)
    on_deadline_path = [e for e in ledger if e["cause"] == "grace-deadline"]
    workflows_per_machine = Counter(per_machine[machine[n]] for n in DOOMED)
    extra_machines = {m: k for m, k in per_machine.items() if m not in doomed.values()}
    double_terminate = {i: k for i, k in proxy.terminations.items() if k > 1}
    never_terminated = sorted(n for n in DOOMED if proxy.terminations[machine[n]] != 1)
    print(f"\nchaos seed={seed}{' LONG' if LONG else ''}: {replicas.kills()} worker SIGKILLs "
          f"({replicas['b'].kills} of b), {replicas.kills() - replicas['b'].kills} of a, "
          f"{len(replicas.crashes())} worker crashes, {len(chaos.temporal_kills)} Temporal SIGKILLs "
          f"(running at each: {chaos.temporal_kills}), 1 moto restart, "
          f"{sum(stats['faultsInjected'].values())} API faults injected, "
          f"{chaos.outage.get('seconds')}s API outage ({knobs['outageRejected']} requests 503; in flight at its "
          f"start: {chaos.outage.get('terminations')} terminations, {chaos.outage.get('disruptions')} disruptions, "
          f"{chaos.outage.get('readinessWaits')} readiness waits), {knobs['watchCuts']} watch cuts "
          f"({knobs['watchStreamsCut']} streams), {knobs['goneServed']} resumes answered 410, "
          f"{vis['passes']} planner passes ({len(vis['overlaps'])} overlapping), disruptions {dict(outcomes)}, "
          f"{len(terminated)} nodes terminated, "
          f"{report['replacementLaunches']} replacements launched, {len(report['leakedInstances'])} leaked "
          f"instances, {len(report['stuckFinalizers'])} stuck finalizers, {len(report['duplicateLaunches'])} "
          f"duplicate launches, {len(double_terminate)} double terminates, {len(vis['bad'])} workflows failed or "
          f"timed out {vis['bad']}, workflows per machine {dict(workflows_per_machine)} over {len(DOOMED)} machines, "
          f"{sum(violations.values())} PDB violations "
          f"({stats['pdbViolations'].get('grace-deadline', 0)} on the grace-deadline path: {len(held)} hold pods, "
          f"{len(early)} early, latest {late:.0f}s after its instant; kills at instants "
          f"{[round(k, 1) for k in chaos.deadline_kills]}), converged {converged:.0f}s after the last fault, "
          f"{report['podsPendingPastBound']} pods Pending past {PENDING_BOUND:.0f}s (longest wait "
          f"{report['podPendingLongestSeconds']}s), EC2 faults {dict(cloud_faults)} (throttling {THROTTLE_RATE:.0%}, "
          f"the first {ICE_TIMES} launches refused; "
          f"credentials revoked {chaos.cloud.window.get('seconds')}s, said in {chaos.cloud.window.get('events')}), "
          f"{time.monotonic() - started:.0f}s")
    print("\n".join(chaos.events))
    if replicas.crashes():
        print("worker crashes:", replicas.crashes())
    assert len(chaos.temporal_kills) == TEMPORAL_KILLS, chaos.events
    assert all(k["TerminationWorkflow"] and k["DisruptionWorkflow"] and k["PlannerWorkflow"]
               for k in chaos.temporal_kills[:2]), chaos.temporal_kills
    # the scenario's steps but the replica kills, on the one line a CI summary keeps
    steps = [e.strip() for e in chaos.events if "kill" not in e]
    assert chaos.outage["seconds"] >= OUTAGE_SECONDS and chaos.outage["terminations"] >= 1, (chaos.outage, steps)
    assert chaos.outage["readinessWaits"] >= 1, (chaos.outage, steps)
    # goneServed is reported, not asserted: 410 answers only a watch that resumes from a resourceVersion (the
    # planner's cluster cache, where the worker runs it); the deletion watcher re-watches from scratch each time.
    assert knobs["watchCuts"] >= 3 and knobs["watchStreamsCut"] >= 3, knobs
    # the cloud's own faults: throttling and refused offerings met, the revoked credentials met by a termination and
    # said in an Event (the doomed instances are still terminated exactly once, the replacements launched once each,
    # below)
    assert all(cloud_faults[c] >= 1 for c in ("RequestLimitExceeded", "UnauthorizedOperation",
                                               "InsufficientInstanceCapacity")), cloud_faults
    assert chaos.cloud.window.get("events"), chaos.cloud.window
    assert replicas["b"].kills >= 10 and len(chaos.deadline_kills) == 4, chaos.events
    assert terminated == sorted(doomed), (terminated, doomed)
    assert report["keptTouched"] == []
    assert sorted(n for n in report["nodes"] if n.startswith("keep-")) == sorted(KEEP)
    assert len(report["nodes"]) == len(KEEP) + len(DRIFTED) == report["nodeClaims"], report
    assert report["leakedInstances"] == [] and report["nodesWithoutInstance"] == [], report
    assert report["stuckFinalizers"] == [], report
    assert report["duplicateLaunches"] == [], report
    assert report["podsPendingPastBound"] == 0, report["podsPendingPast"]
    # one replacement per drifted node, plus at most one per disruption the faults rolled back: a rollback after the
    # launch deletes its replacement (leakedInstances above shows none is left) and the node is disrupted again
    # with a new one; a rollback before it (a taint or launch activity failing under the API faults) launched none
    rolled_back = outcomes.get("RolledBack", 0)
    assert len(DRIFTED) <= report["replacementLaunches"] <= len(DRIFTED) + rolled_back, (report, outcomes)
    assert double_terminate == {} and never_terminated == [], (dict(proxy.terminations), never_terminated)
    assert vis["bad"] == [], vis["bad"]
    assert vis["overlaps"] == [], vis["overlaps"]
    assert workflows_per_machine == Counter({1: len(DOOMED)}), {n: per_machine[machine[n]] for n in DOOMED}
    # a TerminationWorkflow for any other machine only for a replacement a rollback deleted after its launch (the
    # NodeClaim's finalizer goes through the termination, as in Karpenter): never an original node, one run each
    assert not set(extra_machines) & set(machine.values()), extra_machines
    assert len(extra_machines) <= rolled_back and set(extra_machines.values()) <= {1}, (extra_machines, outcomes)
    assert violations == {}, [e for e in ledger if e["violated"] and e["cause"] != "grace-deadline"]
    assert len({e["pod"] for e in held}) >= 2 * len(GRACE), held
    assert all(e["cause"] == "grace-deadline" for e in held), held
    assert early == [], (early, chaos.deadlines)
    assert sorted(map(str, on_deadline_path)) == sorted(map(str, held)), on_deadline_path
    assert stats["pdbViolations"]["grace-deadline"] == sum(1 for e in held if e["violated"]), held
    assert all(e["violated"] == ["default/hold"] for e in held if e["healthy"]), held
