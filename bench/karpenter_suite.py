"""Karpenter's performance suite, side by side: its scenarios run against nodeflow in the simulator.

    .venv/bin/python -m bench.karpenter_suite [--scenario NAME] [--json] [--time-scale 1.0] [--launch-seconds 45]

Scenarios (bench/karpenter_scenarios.py, from test/suites/performance in kubernetes-sigs/karpenter): drift,
basic, do-not-disrupt, wide, hostname-spreading-xl (default: all, in that order). Each runs on a fresh stack
(bench/karpenter_world.py): Temporal dev server, moto_server, the simulator with a launch-to-Ready latency of
--launch-seconds (time-scaled by --time-scale, as are pod grace periods and start-up), and the real worker as
a `python worker.py` process with its pending-pod intake, provisioner and 10 s planner schedule (real time).

For each phase it prints what Karpenter's suite asserts beside Karpenter's threshold: total time, the worker's
p95 memory and average CPU cores (the Temporal server, moto_server and the simulator reported separately), and
the reserved CPU and memory utilization after the phase. The thresholds are compared with the simulated time.
At the default --time-scale 1 it is the wall time: the simulator's delays run in real time, as the worker's own
timers (planner every 10 s, consolidateAfter, batching windows) always do, and those set the pace, so scaling the
simulator saves little. With --time-scale below 1 both are given: wall, and simulated (every tick spent waiting
on a time-scaled delay, such as a launch or a grace period, stretched back by 1/time-scale: an upper bound). The
CPU average is CPU seconds per wall second. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from api.price_table import region_prices
from bench import worker_metrics
from bench.karpenter_phases import PhaseWatch, say, watch
from bench.karpenter_probe import ProcessSampler, look, pool_price
from bench.karpenter_scenarios import SCENARIOS, Phase, Scenario
from bench.karpenter_verdict import simulated_seconds, verdict, within_half
from bench.karpenter_world import DRIFT_ANNOTATION, POOL, SuiteWorld, deployment
from bench.soak_world import AWS_ENV, WorldOptions

DRIFT_SETTLE = 30.0  # Karpenter's suite lets the cluster settle this long before it changes the template

REGION = AWS_ENV["AWS_DEFAULT_REGION"]  # the stand-in EC2 the worker launches in, priced by its Pricing stand-in


def _loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _act(world: SuiteWorld, scenario: Scenario, phase: Phase) -> None:
    """What starts the phase: create the workloads, scale them down, or change the NodePool template."""
    assert world.sim is not None
    api = world.sim.api_client()
    apps, custom = k8s.AppsV1Api(api), k8s.CustomObjectsApi(api)
    if phase.kind == "scaleOut":
        for w in scenario.workloads:
            apps.create_namespaced_deployment("default", deployment(w))
    elif phase.kind == "consolidation":
        for name, replicas in phase.scale_to.items():
            apps.patch_namespaced_deployment_scale(name, "default", {"spec": {"replicas": replicas}})
    else:
        body = {"spec": {"template": {"metadata": {"annotations": {DRIFT_ANNOTATION: f"drift-{int(time.time())}"}}}}}
        custom.patch_cluster_custom_object("karpenter.sh", "v1", "nodepools", POOL, body)
    api.close()


async def run_phase(world: SuiteWorld, sampler: ProcessSampler, scenario: Scenario, phase: Phase,
                    args: argparse.Namespace) -> dict[str, Any]:
    assert world.sim is not None
    before = look(world.sim)
    say(f"{scenario.name}/{phase.name}: {phase.kind}, {phase.pods} pods expected, {len(before.nodes)} nodes now")
    sampler.sample()
    counted = worker_metrics.validations(world.metrics_port)
    created = worker_metrics.launches(world.metrics_port)
    t0 = time.monotonic()
    w = PhaseWatch(phase, t0, args.quiet, old_nodes=before.nodes if phase.kind == "drift" else frozenset())
    await asyncio.to_thread(_act, world, scenario, phase)
    end, finished = await watch(world.sim, w, phase_timeout(phase, args))
    after = look(world.sim)
    price, unpriced = pool_price(world.sim, region_prices(REGION))
    wall = end - t0
    sim_s = simulated_seconds(wall, w.scaled_seconds(end), args.time_scale)
    sampler.sample()
    procs = sampler.figures(t0 - 1.5, max(end, t0 + 2.0))  # from the sample just before the phase to its end
    figures = {"totalMinutes": round(sim_s / 60, 2), "wallMinutes": round(wall / 60, 2),
               "cpuUtil": after.cpu_util, "memoryUtil": after.memory_util,
               "workerP95MemoryMB": procs["worker"]["p95MemoryMB"],
               "workerAvgCpuCores": procs["worker"]["avgCpuCores"]}
    checks = verdict(figures, phase.limits)
    if phase.kind in ("consolidation", "drift"):
        checks["totalAtMostHalf"] = within_half(figures["totalMinutes"], phase.limits)
    checks["finished"] = finished
    if phase.kind != "scaleOut" and before.protected:  # Karpenter's suite: every do-not-disrupt pod survives
        checks["doNotDisruptSurvived"] = before.protected <= after.protected
    say(f"{scenario.name}/{phase.name}: {'done' if finished else 'TIMED OUT'} in {wall:.0f}s wall, "
        f"{sim_s:.0f}s simulated; nodes {len(before.nodes)} -> {len(after.nodes)}; utilization CPU {after.cpu_util} "
        f"memory {after.memory_util}; checks {checks}; {procs}")
    return {"phase": phase.name, "kind": phase.kind, "finished": finished, "figures": figures,
            "thresholds": phase.limits.__dict__, "checks": checks, "passed": all(checks.values()),
            "processes": procs, "nodesBefore": len(before.nodes), "nodesAfter": len(after.nodes),
            "maxNodes": w.max_nodes, "pricePerHour": price, "nodesUnpriced": unpriced,
            "podsHealthy": after.healthy, "loadAverage": _loadavg(),
            "validations": worker_metrics.since(counted, worker_metrics.validations(world.metrics_port)),
            "nodeClaimsCreated": worker_metrics.since(created, worker_metrics.launches(world.metrics_port))}


def phase_timeout(phase: Phase, args: argparse.Namespace) -> float:
    """Wall seconds before a phase gives up: `--phase-timeout`, else the phase's own time threshold (Karpenter's
    limit) plus a minute, so a phase stopped is one that failed Karpenter's limit, never a shorter bench limit
    (wide's consolidation is allowed 40 min). The simulated time is never less than the wall time, whatever the
    time scale (bench/karpenter_verdict.py `simulated_seconds`)."""
    if args.phase_timeout is not None:
        return float(args.phase_timeout)
    return phase.limits.totalMinutes * 60.0 + 60.0


def _options(args: argparse.Namespace, workdir: Path) -> WorldOptions:
    # the simulator takes its ready delay twice: instance running -> Node registered, registered -> Ready
    return WorldOptions(workdir=workdir, time_scale=args.time_scale, ready_delay=args.launch_seconds / 2,
                        planner_seconds=10.0, resync_seconds=30.0)


async def run_scenario(scenario: Scenario, args: argparse.Namespace,
                       world_type: type[SuiteWorld] = SuiteWorld) -> dict[str, Any]:
    """One scenario on a fresh stack; `world_type` may run the worker from another tree (bench/worker_footprint)."""
    workdir = Path(tempfile.mkdtemp(prefix=f"nodeflow-perf-{scenario.name}-"))
    world = world_type(_options(args, workdir))
    say(f"{scenario.name}: starting the stack (logs in {workdir}) ...")
    phases: list[dict[str, Any]] = []
    sampler = ProcessSampler({})
    try:
        await world.start()
        if worker_metrics.discovers_instance_types():
            waited = await worker_metrics.wait_for_discovery(world.metrics_port, 180.0)
            say(f"{scenario.name}: the worker plans on its discovered instance types ({waited:.1f}s after ready)")
        assert world.worker is not None and world.temporal.proc is not None and world.moto.proc is not None
        sampler.pids.update(worker=world.worker.pid, temporal=world.temporal.proc.pid, moto=world.moto.proc.pid)
        sampler.pids["simulator+bench"] = os.getpid()
        sampler.start()
        for phase in scenario.phases[:args.phases or None]:
            if phase.kind == "drift":
                await asyncio.sleep(DRIFT_SETTLE)
            phases.append(await run_phase(world, sampler, scenario, phase, args))
            if not phases[-1]["finished"]:
                break
    finally:
        sampler.stop_event.set()
        stats = world.sim.stats() if world.sim is not None else {}
        world.stop()
    return {"scenario": scenario.name, "pods": scenario.pods, "phases": phases,
            "passed": bool(phases) and all(p["passed"] for p in phases)
            and len(phases) == len(scenario.phases[:args.phases or None]),
            "pdbViolations": stats.get("pdbViolationsTotal"), "evictions": stats.get("evictions"),
            "workdir": str(workdir)}


def _cell(figures: dict[str, Any], checks: dict[str, bool], figure: str, limit: float | None, op: str) -> str:
    value = figures[figure]
    if limit is None:
        return f"{value}"
    ok = checks.get(figure)
    return f"{value} ({op} {limit}){'' if ok is None else (' ok' if ok else ' FAIL')}"


def _price_cell(p: dict[str, Any]) -> str:
    """The pool's $/h at the phase's end; nodes without a known price named, never counted as free."""
    unpriced = p.get("nodesUnpriced", 0)
    return f"{p['pricePerHour']:.2f}" + (f" (+{unpriced} unpriced)" if unpriced else "")


def _row(scenario: str, p: dict[str, Any]) -> str:
    f, t, c, procs = p["figures"], p["thresholds"], p["checks"], p["processes"]
    total = _cell(f, c, "totalMinutes", t["totalMinutes"], "<")
    if "totalAtMostHalf" in c and not c["totalAtMostHalf"]:
        total += ", > half"
    others = " / ".join(str(procs[k]["avgCpuCores"]) for k in ("temporal", "moto", "simulator+bench"))
    cells = [f"{scenario}/{p['phase']}{'' if p['finished'] else ' TIMED OUT'}", f"{total} ({f['wallMinutes']})",
             _cell(f, c, "cpuUtil", t["cpuUtil"], ">"), _cell(f, c, "memoryUtil", t["memoryUtil"], ">"),
             _cell(f, c, "workerP95MemoryMB", t["memoryMB"], "<"),
             _cell(f, c, "workerAvgCpuCores", t["cpuCores"], "<"), others,
             f"{p['nodesBefore']} -> {p['nodesAfter']} (max {p['maxNodes']})", _price_cell(p),
             str(p["loadAverage"][0])]
    return "| " + " | ".join(cells) + " |"


def render(results: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [f"time scale {args.time_scale}, launch-to-Ready {args.launch_seconds} s simulated; "
             "figure (Karpenter's threshold)",
             "| scenario/phase | total min, simulated (wall) | CPU util | memory util | worker p95 MB | "
             "worker avg cores | temporal / moto / simulator cores | nodes | $/h at the end | load avg |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    lines += [_row(r["scenario"], p) for r in results for p in r["phases"]]
    lines += [f"{r['scenario']}/{p['phase']}: disruption validations by result {p['validations']}"
              for r in results for p in r["phases"] if p.get("validations")]
    lines += [f"{r['scenario']}/{p['phase']}: NodeClaims created by reason {p['nodeClaimsCreated']}"
              for r in results for p in r["phases"] if p.get("nodeClaimsCreated")]
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    names = [args.scenario] if args.scenario else list(SCENARIOS)
    results = []
    for name in names:
        results.append(await run_scenario(SCENARIOS[name], args))
        say(render(results[-1:], args))
    return results


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.karpenter_suite", description=(__doc__ or "").splitlines()[0])
    p.add_argument("--scenario", choices=sorted(SCENARIOS))
    p.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    p.add_argument("--time-scale", type=float, default=1.0,
                   help="simulator delays x this (0.1: 10x faster; the simulated time is then an upper bound)")
    p.add_argument("--launch-seconds", type=float, default=45.0, help="simulated launch-to-Ready latency")
    p.add_argument("--quiet", type=float, default=120.0, help="wall seconds without change that end consolidation")
    p.add_argument("--phase-timeout", type=float, default=None,
                   help="wall seconds before a phase gives up (default: the phase's Karpenter time limit + 1 min)")
    p.add_argument("--phases", type=int, default=0, help="run only each scenario's first N phases (0: all)")
    args = p.parse_args(argv)
    results = asyncio.run(run(args))
    print(json.dumps(results, indent=2) if args.json else render(results, args))
    return 0 if all(r["passed"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
