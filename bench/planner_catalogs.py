"""Planner pass on the bundled catalog versus the catalog discovered from EC2, side by side in one run.

The cluster and the worker are bench/planner_live.py's: the simulator (this process, over HTTP) holds a generated
cluster (`simulator.generate`, 15 pods per node) while 1% of its pods change every 10 s, and the planner activity
(`PlanningActivities.plan_pass`, Temporal's visibility query included) runs on the worker's watch cache in a
process of its own. Two such processes run at once: one on the bundled catalog, one on a `LiveCatalog` over the
`InstanceTypeProvider` the worker builds (runtime/settings.py `catalog_source`), discovered from the devstack's EC2
stand-in (`devstack.moto_indexed`: DescribeInstanceTypes/Offerings with AWS's data, spot history, Pricing API),
started as the demo starts it. With `--consolidating` the cluster has no empty or drifted node, so every pass goes
on to consolidation, where new nodes are priced on the catalog. After one first pass each, passes alternate
A B A B ... (one round per 10 s, the planner schedule), so the machine's noise falls on both; each catalog gets the
median and p90 of its pass seconds (wall, and the process's CPU) and its worker's resident memory. A run cut short
(`--budget`, a worker that died) says `"partial": true` and how many rounds it has. docs/benchmarks.md.

    .venv/bin/python -m bench.planner_catalogs --nodes 5000 [--rounds 6] [--consolidating] [--region R] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.planner_live import PASS_EVERY, Churn, WorkerProcess
from devstack.processes import MotoServer, TemporalDevServer
from simulator.generate import generate_cluster
from simulator.server import Simulator

CATALOGS = ("bundled", "discovered")
STAND_IN_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}  # unless set


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _commit() -> str:
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def quantile(values: list[float], q: float) -> float:
    """The q-quantile (linear between order statistics, as numpy's default); a single value is itself."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    pos = q * (len(ordered) - 1)
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def figures(hello: dict[str, Any], first: dict[str, Any] | None, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One catalog's figures: what it holds, its worker's start, then the alternated (steady) passes."""
    out = {k: hello[k] for k in ("instanceTypes", "instanceTypesAvailable", "offerings", "discoverySeconds",
                                 "onDemandPrices", "region") if k in hello}
    out |= {"syncSeconds": hello["syncSeconds"], "rssAfterCatalogMiB": hello["catalogRssMiB"],
            "firstPassSeconds": first["seconds"] if first else None, "passes": [r["seconds"] for r in rows]}
    if rows:
        secs, cpu = [r["seconds"] for r in rows], [r["cpuSeconds"] for r in rows]
        out |= {"passSecondsMedian": round(statistics.median(secs), 3), "passSecondsP90": round(quantile(secs, 0.9), 3),
                "passCpuSecondsMedian": round(statistics.median(cpu), 3),
                "passCpuSecondsP90": round(quantile(cpu, 0.9), 3), "commands": rows[-1]["commands"],
                "plannedOnTypes": rows[-1]["catalogTypes"],
                "methods": sorted({m for r in rows for m in r["methods"]}),
                "skipped": [r["skipped"] for r in rows if r["skipped"]]}
    seen = [hello["rssMiB"], *(r["rssMiB"] for r in ([first] if first else []) + rows)]
    out["workerRssMiB"] = max(seen)
    return out


def _rounds(workers: dict[str, WorkerProcess], sim: Simulator, rounds: int, every: float,
            deadline: float) -> tuple[dict[str, list[dict[str, Any]]], str | None]:
    """Up to `rounds` rounds of one pass per catalog in CATALOGS order, a round starting every `every` seconds; stops
    early (with the reason) at the deadline or when a worker fails."""
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in workers}
    for i in range(rounds):
        if time.monotonic() >= deadline:
            return rows, f"budget reached after {i} of {rounds} rounds"
        started = time.monotonic()
        for name, worker in workers.items():
            try:
                rows[name].append(worker.run_pass(sim))
            except (RuntimeError, ValueError, OSError) as exc:
                return rows, f"{name} worker failed in round {i + 1}: {exc}"
        if i < rounds - 1:
            time.sleep(max(0.0, every - (time.monotonic() - started)))
    return rows, None


def _start_workers(sim: Simulator, temporal: str, endpoint: str, region: str) -> dict[str, WorkerProcess]:
    extra = {"bundled": (), "discovered": ("--discover-endpoint", endpoint, "--region", region)}
    workers: dict[str, WorkerProcess] = {}
    try:
        for name in CATALOGS:
            workers[name] = WorkerProcess("cache", sim.kubeconfig_path, temporal, extra[name], env=STAND_IN_CREDENTIALS)
    except BaseException:
        for worker in workers.values():
            worker.close()
        raise
    return workers


def run(nodes: int, rounds: int, seed: int = 1, every: float = PASS_EVERY, region: str = "us-east-1",
        budget: float = 1800.0, consolidating: bool = False, endpoint: str | None = None) -> dict[str, Any]:
    """The side-by-side run; `budget` seconds bound the alternated rounds (the figures then say partial).
    `consolidating`: no empty and no drifted node, so that every pass reaches consolidation, the methods that
    price new nodes on the catalog (a pass stops at the first method with commands, and emptiness or drift
    usually has some in the default cluster). `endpoint`: an EC2 stand-in already running (else one is started)."""
    shape = {"empty_fraction": 0.0, "drift_fraction": 0.0} if consolidating else {}
    objects = generate_cluster(nodes, 15, seed, **shape)  # type: ignore[arg-type]
    pods = sum(1 for o in objects if o["kind"] == "Pod")
    report: dict[str, Any] = {"nodes": nodes, "pods": pods, "consolidating": consolidating, "commit": _commit(),
                              "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ"), "loadAverage": {"start": _load()},
                              "roundsRequested": rounds}
    with contextlib.ExitStack() as stack:
        if endpoint is None:
            work = stack.enter_context(tempfile.TemporaryDirectory(prefix="nodeflow-bench-"))
            endpoint = stack.enter_context(MotoServer(log_path=Path(work) / "moto.log")).endpoint
        temporal = stack.enter_context(TemporalDevServer(headless=True))
        sim = stack.enter_context(Simulator(objects=objects))
        churn = Churn(sim, seed)
        churn.start()
        workers = _start_workers(sim, temporal.address, endpoint, region)
        try:
            deadline = time.monotonic() + budget
            first = {name: w.run_pass(sim) for name, w in workers.items()}
            rows, stopped = _rounds(workers, sim, rounds, every, deadline)
        finally:
            churn.stop_event.set()
            for worker in workers.values():
                worker.close()
    report["loadAverage"]["end"] = _load()
    report |= {"churnedPods": churn.changed, "rounds": min(len(r) for r in rows.values()),
               "partial": stopped is not None}
    if stopped:
        report["stopped"] = stopped
    report["catalogs"] = {name: figures(workers[name].hello, first[name], rows[name]) for name in CATALOGS}
    return report


def _print(report: dict[str, Any]) -> None:
    partial = " PARTIAL: " + report["stopped"] if report["partial"] else ""
    print(f"{report['nodes']} nodes, {report['pods']} pods, commit {report['commit']}, {report['rounds']} rounds "
          f"alternated, load average {report['loadAverage']}{partial}")
    for name, c in report["catalogs"].items():
        found = f", discovered in {c['discoverySeconds']} s" if "discoverySeconds" in c else ""
        print(f"{name:>10} {c['instanceTypes']:>5} types ({c['instanceTypesAvailable']} priced){found}: "
              f"pass median {c.get('passSecondsMedian')} s "
              f"p90 {c.get('passSecondsP90')} s (CPU median {c.get('passCpuSecondsMedian')} s), first pass "
              f"{c['firstPassSeconds']} s, commands {c.get('commands')} {c.get('methods')}, "
              f"worker RSS {c['workerRssMiB']} MiB "
              f"({c['rssAfterCatalogMiB']} MiB with only the catalog)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--rounds", type=int, default=6, help="alternated rounds after the first pass of each (>= 1)")
    p.add_argument("--region", default="us-east-1", help="the region the stand-in is asked for")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--budget", type=float, default=1800.0, help="seconds for the rounds; past it, partial figures")
    p.add_argument("--consolidating", action="store_true",
                   help="a cluster without empty or drifted nodes: every pass computes consolidation")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of a report")
    args = p.parse_args(argv)
    report = run(args.nodes, max(args.rounds, 1), args.seed, region=args.region, budget=args.budget,
                 consolidating=args.consolidating)
    report["command"] = " ".join(["python -m bench.planner_catalogs", *(argv if argv is not None else sys.argv[1:])])
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
