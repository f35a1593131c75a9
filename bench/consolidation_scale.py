"""Consolidation at scale: N nodes in steady state, every Deployment scaled in by 30%, until the node count is within
10% of the packing lower bound; beside Karpenter's published figures.

    .venv/bin/python -m bench.consolidation_scale --nodes 1000 [--limit 900] [--time-scale 1] [--json]
    .venv/bin/python -m bench.consolidation_scale --decision-only --sizes 1000,2000,5000

Live: the stack of Karpenter's suite (bench/karpenter_world.py: Temporal dev server, moto_server, the simulator over
HTTP, the worker as a `python worker.py` process with its 10 s planner Schedule) holding the steady-state cluster of
bench/consolidation_scale_cluster.py, every Node backed by a moto instance the simulator launched for it. The
Deployments are scaled in through the API; the lower bound is computed from the requests of the pods they keep.
The cluster is read from the simulator's store every TICK; the processes' CPU is sampled from /proc every second.
It stops when the pool's node count is within 10% of the bound, when nothing changed for --quiet seconds, or at
--limit. Decision only: the same cluster, scaled in the way kube-controller-manager scales a ReplicaSet down,
as a snapshot; one planner pass as the worker runs it (`run_pass`), p50 of --runs.

Clocks: the worker's timers (planner every 10 s, consolidateAfter, validation) run in real time; the simulator's
delays (pod grace periods, pod start) run --time-scale as fast. "Wall" is the wall time; "simulated" stretches the
ticks spent waiting on a scaled delay back by 1/time-scale (bench/karpenter_verdict.py: an upper bound). CPU
figures are CPU seconds per wall second.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from kubernetes import client as k8s

from api import labels as L
from api.snapshot import Snapshot
from bench import worker_metrics
from bench.consolidation_scale_cluster import (
    INSTANCE_TYPE,
    Bound,
    lower_bound,
    scale_in_snapshot,
    scaled_in,
    steady_state,
)
from bench.karpenter_phases import TICK, PhaseWatch, say
from bench.karpenter_probe import NODES, PODS, ProcessSampler, look
from bench.karpenter_scenarios import Phase
from bench.karpenter_verdict import Thresholds, simulated_seconds
from bench.karpenter_world import POOL, SuiteWorld
from bench.soak_world import WorldOptions
from planning.planner.plan import run_pass
from simulator.deployments import DEPLOYMENTS

GOAL = Thresholds(totalMinutes=10.0, memoryMB=float("inf"), cpuCores=0.5)
# Karpenter's most reported consolidation figures of 2026 (docs/benchmarks.md, Consolidation at scale)
KARPENTER = {
    "simulation per candidate": "~900 ms (kubernetes-sigs/karpenter#3271)",
    "single-node scan of 1,000 nodes": "~18 min, cut by the 3 min timeout (kubernetes-sigs/karpenter#3271)",
    "controller CPU at 500 nodes": "~3 vCPU mean (kubernetes-sigs/karpenter#2972, kubernetes-sigs/karpenter#3204)",
}


class ScaleWorld(SuiteWorld):
    """The suite's stack holding the steady-state cluster; moto is polled every 5 s (its DescribeInstanceStatus
    costs ~0.7 ms an instance: at 2,000 instances a 1 s poll would keep a core busy)."""

    ec2_poll_seconds: ClassVar[float] = 5.0
    nodes: ClassVar[int] = 0

    def cluster_objects(self) -> list[dict[str, Any]]:
        return steady_state(self.nodes)


def _loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _live_pods(world: ScaleWorld) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The pods in the store now (deleting ones left out) and one of the pool's nodes."""
    assert world.sim is not None
    with world.sim.store.lock:
        pods = [p for p in world.sim.store.list(PODS) if not p["metadata"].get("deletionTimestamp")]
        node = next(n for n in world.sim.store.list(NODES) if n["metadata"]["labels"].get(L.NODEPOOL_LABEL) == POOL)
    return pods, node


async def _until(cond: Any, timeout: float, what: str) -> float:
    t0 = time.monotonic()
    while not await asyncio.to_thread(cond):
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"{what}: not after {timeout:.0f}s")
        await asyncio.sleep(1.0)
    return time.monotonic() - t0


def _scale(world: ScaleWorld, replicas: dict[str, int]) -> None:
    assert world.sim is not None
    api = world.sim.api_client()
    apps = k8s.AppsV1Api(api)
    for name, count in replicas.items():
        apps.patch_namespaced_deployment_scale(name, "default", {"spec": {"replicas": count}})
    api.close()


def peak_cores(rows: list[tuple[float, float, float]], t0: float, t1: float, window: float = 5.0) -> float:
    """The most CPU seconds per wall second over any `window` seconds of samples (t, rss, cpu) in [t0, t1]."""
    rows = [r for r in rows if t0 <= r[0] <= t1]
    best, j = 0.0, 0
    for i in range(len(rows)):
        while rows[i][0] - rows[j][0] > window:
            j += 1
        if rows[i][0] - rows[j][0] >= window / 2:
            best = max(best, (rows[i][2] - rows[j][2]) / (rows[i][0] - rows[j][0]))
    return round(best, 3)


async def _steady(world: ScaleWorld, expected: int) -> float:
    """Until every pod runs and is Ready and the worker is ready; returns the seconds waited."""
    assert world.sim is not None
    sim = world.sim
    return await _until(lambda: look(sim).healthy == expected, 600.0, "steady state")


async def _watch(world: ScaleWorld, w: PhaseWatch, bound: Bound, args: argparse.Namespace
                 ) -> tuple[float, float | None, str]:
    """Until the node count is within 10% of the bound, or quiet, or the limit; returns the end (monotonic),
    when the count first was within 10% (None: never) and why it stopped."""
    assert world.sim is not None
    prev, progress = w.t0, w.t0 + 30.0
    while True:
        await asyncio.sleep(TICK)
        now = time.monotonic()
        view = await asyncio.to_thread(look, world.sim)
        w.observe(view, now, now - prev)
        prev = now
        if len(view.nodes) <= bound.near:
            return now, now, "within 10%"
        if w.done(view, now):
            return now, None, "quiet"
        if now - w.t0 > args.limit:
            return now, None, "limit"
        if now >= progress:
            progress += 30.0
            say(f"  t={now - w.t0:.0f}s nodes={len(view.nodes)} (bound {bound.nodes}, near {bound.near}) "
                f"draining={view.draining} pods healthy {view.healthy}/{view.pods}")


def _counters(port: int) -> dict[str, Any] | None:
    """What the worker counted so far, from one /metrics reading: decisions by method/decision, validations and
    outcomes by result, and the planner passes' evaluation time (sum, count); None when the worker did not answer."""
    text = worker_metrics.read(port)
    if text is None:
        return None
    return {"decisions": worker_metrics.totals(text, worker_metrics.DECISIONS, ("method", "decision")),
            "validations": worker_metrics.totals(text, worker_metrics.VALIDATIONS, ("result",)),
            "outcomes": worker_metrics.totals(text, worker_metrics.OUTCOMES, ("outcome",)),
            "evaluation": worker_metrics.histogram_sum_count(text, worker_metrics.EVALUATION)}


def _commands(before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, Any]:
    if before is None or after is None:
        return {"unavailable": "the worker's /metrics did not answer"}
    passes = after["evaluation"][1] - before["evaluation"][1]
    seconds = after["evaluation"][0] - before["evaluation"][0]
    return {key: worker_metrics.since(before[key], after[key]) for key in ("decisions", "validations", "outcomes")} | {
        "plannerPasses": int(passes), "passSecondsMean": round(seconds / passes, 3) if passes else None}


async def _scale_in(world: ScaleWorld, replicas: dict[str, int]) -> tuple[Bound, int]:
    """Scale every Deployment in, wait until their ReplicaSets removed the pods, and compute the bound from the
    pods kept."""
    keep = scaled_in(replicas)
    await asyncio.to_thread(_scale, world, keep)
    assert world.sim is not None
    sim, expected = world.sim, sum(keep.values())
    await _until(lambda: look(sim).pods == expected, 120.0, "the scale-in")
    pods, node = await asyncio.to_thread(_live_pods, world)
    return lower_bound(pods, node), expected


async def _measure(world: ScaleWorld, args: argparse.Namespace, replicas: dict[str, int]) -> dict[str, Any]:
    assert world.sim is not None and world.worker is not None and world.temporal.proc is not None
    sampler = ProcessSampler({"worker": world.worker.pid, "temporal": world.temporal.proc.pid,
                              "moto": world.moto.proc.pid if world.moto.proc else 0, "simulator+bench": os.getpid()})
    sampler.start()
    counted, stats0 = _counters(world.metrics_port), world.sim.stats()
    before = look(world.sim)
    t0 = time.monotonic()
    bound, expected = await _scale_in(world, replicas)
    scaled = round(time.monotonic() - t0, 3)  # a 4-node scale-in can take under 50 ms: 0.1 s would print 0.0
    say(f"scaled in: {sum(replicas.values())} -> {expected} replicas; bound {bound.nodes} nodes {bound.by_resource}, "
        f"within 10%: <= {bound.near}")
    w = PhaseWatch(Phase("consolidation", "consolidation", expected, GOAL), t0, args.quiet)
    end, reached, why = await _watch(world, w, bound, args)
    sampler.sample()
    sampler.stop_event.set()
    after = look(world.sim)
    procs = sampler.figures(t0 - 1.5, end)
    procs["worker"]["peakCpuCores"] = peak_cores(sampler.rows["worker"], t0 - 1.5, end)
    return {"nodesBefore": len(before.nodes), "nodesAfter": len(after.nodes), "bound": bound.nodes,
            "boundByResource": bound.by_resource, "near": bound.near, "stopped": why,
            "replicasBefore": sum(replicas.values()), "replicasAfter": expected, "podsHealthy": after.healthy,
            "scaleInSeconds": scaled,
            **_time(w, reached, end, args.time_scale), "processes": procs,
            "commands": _commands(counted, _counters(world.metrics_port)), **_pdb(stats0, world.sim.stats())}


def _time(w: PhaseWatch, reached: float | None, end: float, time_scale: float) -> dict[str, Any]:
    """Seconds from the scale-in until the count was within 10% (or the run stopped), wall and simulated."""
    until = reached if reached is not None else end
    return {"reached": reached is not None, "wallSeconds": round(until - w.t0, 1),
            "simulatedSeconds": round(simulated_seconds(until - w.t0, w.scaled_seconds(until), time_scale), 1)}


def _pdb(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """PDB violations the simulator's ledger counted during the run, by cause ("delete" is the ReplicaSets' own
    scale-down, which PDBs do not govern in Kubernetes either), and the evictions answered."""
    by_cause = {k: v - before["pdbViolations"].get(k, 0) for k, v in after["pdbViolations"].items()}
    return {"pdbViolations": after["pdbViolationsTotal"] - before["pdbViolationsTotal"],
            "pdbViolationsByCause": by_cause, "evictions": worker_metrics.since(
                {k: float(v) for k, v in before.get("evictions", {}).items()},
                {k: float(v) for k, v in after.get("evictions", {}).items()})}


async def run_live(args: argparse.Namespace) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="nodeflow-cscale-"))
    ScaleWorld.nodes = args.nodes
    world = ScaleWorld(WorldOptions(workdir=workdir, time_scale=args.time_scale, ready_delay=args.launch_seconds / 2,
                                    planner_seconds=10.0, resync_seconds=30.0))
    load = {"start": _loadavg()}
    say(f"{args.nodes} nodes: starting the stack (logs in {workdir}) ...")
    t = time.monotonic()
    try:
        await world.start()
        if worker_metrics.discovers_instance_types():
            await worker_metrics.wait_for_discovery(world.metrics_port, 180.0)
        replicas = _replicas(world)
        steady = await _steady(world, sum(replicas.values()))
        up = round(time.monotonic() - t, 1)
        say(f"steady state: {args.nodes} nodes, {sum(replicas.values())} pods ({up}s to bring up)")
        out = await _measure(world, args, replicas)
    finally:
        world.stop()
    load["end"] = _loadavg()
    return {"nodes": args.nodes, "timeScale": args.time_scale, "bringUpSeconds": up, "steadyWaitSeconds": round(
        steady, 1), "loadAverage": load, "workdir": str(workdir), **out}


def _replicas(world: ScaleWorld) -> dict[str, int]:
    """Deployment -> replicas as the simulator holds them."""
    assert world.sim is not None
    with world.sim.store.lock:
        return {d["metadata"]["name"]: d["spec"]["replicas"] for d in world.sim.store.list(DEPLOYMENTS)}


def decision_only(sizes: list[int], runs: int, seed: int = 1) -> list[dict[str, Any]]:
    """Planner passes on the scaled-in snapshot at each size, p50 of `runs`: one as the worker runs it (the first
    method with commands wins) and one with every method computed (single-node consolidation too, which stops at its
    first valid command as Karpenter's does; bench/planner.py --packed is the case where no candidate has one)."""
    rows = []
    for size in sizes:
        snapshot = Snapshot.from_objects(scale_in_snapshot(steady_state(size, seed)))
        at = datetime.now(UTC)
        worker, commands = _timed(snapshot, at, runs, compute_all=False)
        every, _ = _timed(snapshot, at, runs, compute_all=True)
        rows.append({"nodes": size, "pods": len(snapshot.pods), "passSecondsP50": worker[0],
                     "passCpuSecondsP50": worker[1], "allMethodsSecondsP50": every[0],
                     "allMethodsCpuSecondsP50": every[1], "commands": commands, "loadAverage": _loadavg()})
    return rows


def _timed(snapshot: Any, at: datetime, runs: int, compute_all: bool) -> tuple[tuple[float, float], list[str]]:
    """(wall p50, CPU p50) of `runs` passes, and the last pass's commands as method:nodes."""
    walls, cpus, outcome = [], [], None
    for _ in range(runs):
        t, c = time.perf_counter(), time.process_time()
        outcome = run_pass(snapshot, at, compute_all=compute_all)
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    assert outcome is not None
    medians = (round(statistics.median(walls), 3), round(statistics.median(cpus), 3))
    return medians, [f"{c.method}:{len(c.nodes)}" for c in outcome.commands]


def render_live(r: dict[str, Any]) -> str:
    procs, c = r["processes"], r["commands"]
    reached = "yes" if r["reached"] else f"no (stopped: {r['stopped']}, {r['nodesAfter']} nodes)"
    rows = [
        ("nodes: before -> after (bound, within 10%)",
         f"{r['nodesBefore']} -> {r['nodesAfter']} ({r['bound']} {r['boundByResource']}, <= {r['near']})"),
        ("replicas: before -> after the 30% scale-in", f"{r['replicasBefore']} -> {r['replicasAfter']}"),
        ("reached within 10% of the bound", reached),
        ("scale-in: patches sent and the pods gone, wall s (counted in the time below)", str(r["scaleInSeconds"])),
        ("time to within 10%: simulated (wall) s; goal <= 600 simulated",
         f"{r['simulatedSeconds']} ({r['wallSeconds']})"),
        ("worker CPU cores: average / peak (5 s); goal <= 0.5 average",
         f"{procs['worker']['avgCpuCores']} / {procs['worker']['peakCpuCores']}"),
        ("Temporal / moto / simulator+bench CPU cores (average)",
         " / ".join(str(procs[k]["avgCpuCores"]) for k in ("temporal", "moto", "simulator+bench"))),
        ("worker memory MB: p95 / max", f"{procs['worker']['p95MemoryMB']} / {procs['worker']['maxMemoryMB']}"),
        ("commands by method/decision", json.dumps(c.get("decisions", c.get("unavailable")))),
        ("validations by result / outcomes", f"{json.dumps(c.get('validations'))} / {json.dumps(c.get('outcomes'))}"),
        ("planner passes, mean evaluation s (worker clock)", f"{c.get('plannerPasses')}, {c.get('passSecondsMean')}"),
        ("PDB violations (by cause)", f"{r['pdbViolations']} {json.dumps(r['pdbViolationsByCause'])}"),
        ("time scale; load average start / end", f"{r['timeScale']}; {r['loadAverage']['start']} / "
                                                  f"{r['loadAverage']['end']}"),
    ]
    return "\n".join([f"consolidation at scale, {r['nodes']} nodes of {INSTANCE_TYPE}", "| figure | nodeflow |",
                      "|---|---|", *(f"| {k} | {v} |" for k, v in rows)])


def render_decisions(rows: list[dict[str, Any]]) -> str:
    lines = ["decision only: planner passes on the scaled-in snapshot (p50)", "| nodes | pods | pass s (CPU s) | "
             "every method computed s (CPU s) | commands | load |", "|---:|---:|---|---|---|---|"]
    lines += [f"| {r['nodes']} | {r['pods']} | {r['passSecondsP50']} ({r['passCpuSecondsP50']}) | "
              f"{r['allMethodsSecondsP50']} ({r['allMethodsCpuSecondsP50']}) | "
              f"{', '.join(r['commands']) or '-'} | {r['loadAverage'][0]} |" for r in rows]
    lines += ["Karpenter (published):", *(f"- {k}: {v}" for k, v in KARPENTER.items())]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.consolidation_scale", description=(__doc__ or "").splitlines()[0])
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--time-scale", type=float, default=1.0,
                   help="simulator delays x this (below 1 the simulated time is an upper bound)")
    p.add_argument("--launch-seconds", type=float, default=45.0, help="simulated launch-to-Ready latency")
    p.add_argument("--limit", type=float, default=900.0, help="wall seconds after the scale-in before giving up")
    p.add_argument("--quiet", type=float, default=120.0, help="wall seconds without change that end the run")
    p.add_argument("--decision-only", action="store_true", help="only the planner pass on snapshots of --sizes")
    p.add_argument("--sizes", default="1000,2000,5000")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if args.decision_only:
        rows = decision_only([int(s) for s in args.sizes.split(",")], args.runs)
        print(json.dumps(rows, indent=2) if args.json else render_decisions(rows))
        return 0
    report = asyncio.run(run_live(args))
    print(json.dumps(report, indent=2) if args.json else render_live(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
