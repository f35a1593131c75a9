"""Planner pass end to end through the API: a LIST every pass versus the worker's watch cache, side by side.

The simulator (this process, over HTTP) holds a generated cluster (`simulator.generate`, 15 pods per node) while
1% of its pods change every 10 s (labels rewritten in the simulator's store, so the churn itself sends no HTTP).
The worker's planner activity (`PlanningActivities.plan_pass`, the Temporal visibility query included, against a
Temporal dev server) runs in its own process, first LISTing every pass, then in a second process on a
`ClusterView` over a `ClusterCache`, as `runtime/wiring.py` builds it. Each pass is one request to that process;
the simulator's `/sim/stats` byVerb is read before and after it, so the LISTs and bytes are the API server's own
count. Passes start every 10 s (the planner schedule), steady figures are medians.

    .venv/bin/python -m bench.planner_live --nodes 5000 [--list-passes 3] [--cache-passes 6] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from devstack.processes import TemporalDevServer
from simulator.generate import generate_cluster
from simulator.resources import BY_KIND
from simulator.server import Simulator

PASS_EVERY = 10.0
CHURN_SHARE = 0.01  # of all pods per PASS_EVERY seconds
CHURN_TICK = 1.0
TRACE_ENV = "NODEFLOW_BENCH_TRACEMALLOC"  # a path: the cache worker dumps what holds its memory there (worker side)


def _loadavg() -> float:
    return round(float(Path("/proc/loadavg").read_text().split()[0]), 2)


class Churn(threading.Thread):
    """Rewrite a label on CHURN_SHARE of the pods every PASS_EVERY seconds, spread over one-second ticks."""

    def __init__(self, sim: Simulator, seed: int = 1) -> None:
        super().__init__(name="churn", daemon=True)
        self.sim, self.rng, self.stop_event, self.changed = sim, random.Random(seed), threading.Event(), 0
        self.rt = BY_KIND["Pod"]

    def run(self) -> None:
        keys = [k for k in self.sim.store.objects[self.rt.plural] if k[0] != "kube-system"]
        per_tick = max(1, round(len(keys) * CHURN_SHARE * CHURN_TICK / PASS_EVERY))
        while not self.stop_event.wait(CHURN_TICK):
            for key in self.rng.sample(keys, per_tick):
                old = self.sim.store.get(self.rt, *key)
                if old is None:
                    continue
                meta = old["metadata"]
                labels = {**(meta.get("labels") or {}), "bench.nodeflow.dev/churn": str(self.changed)}
                self.sim.store.replace(self.rt, {**old, "metadata": {**meta, "labels": labels}})
                self.changed += 1


def _traffic(sim: Simulator) -> dict[str, dict[str, int]]:
    return sim.server.traffic.stats()


def _delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, dict[str, int]]:
    return {v: {k: after[v][k] - before.get(v, {}).get(k, 0) for k in ("requests", "bytes")} for v in after}


class WorkerProcess:
    """The planner activity in its own process (`--serve`), one pass per request line."""

    def __init__(self, mode: str, kubeconfig: str, temporal: str, extra: tuple[str, ...] = (),
                 env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.planner_live", "--serve", mode, "--kubeconfig", kubeconfig,
             "--temporal", temporal, *extra], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            cwd=Path(__file__).resolve().parent.parent, env={**(env or {}), **os.environ, "PYTHONUNBUFFERED": "1"})
        self.hello = self._read()

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the worker process ended (exit {self.proc.wait()})")
        return json.loads(line)

    def run_pass(self, sim: Simulator) -> dict[str, Any]:
        assert self.proc.stdin is not None
        before = _traffic(sim)
        self.proc.stdin.write("pass\n")
        self.proc.stdin.flush()
        out = self._read()
        out["traffic"] = _delta(before, _traffic(sim))
        return out

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(30)


def _passes(worker: WorkerProcess, sim: Simulator, count: int, every: float) -> list[dict[str, Any]]:
    """`count` passes, one starting every `every` seconds (a pass longer than that starts the next at once)."""
    out = []
    for i in range(count):
        started = time.monotonic()
        out.append(worker.run_pass(sim))
        if i < count - 1:
            time.sleep(max(0.0, every - (time.monotonic() - started)))
    return out


def _median(rows: list[dict[str, Any]], fn: Any) -> float:
    return round(statistics.median(fn(r) for r in rows), 3)


def _not_watch(r: dict[str, Any]) -> int:
    return sum(v["bytes"] for verb, v in r["traffic"].items() if verb != "watch")


def _list_figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"passSeconds": _median(rows, lambda r: r["seconds"]),
            "passCpuSeconds": _median(rows, lambda r: r["cpuSeconds"]), "passes": [r["seconds"] for r in rows],
            "listSeconds": _median(rows, lambda r: r["listSeconds"]),
            "listRequests": _median(rows, lambda r: r["traffic"].get("list", {}).get("requests", 0)),
            "bytesReceived": _median(rows, _not_watch), "workerRssMiB": max(r["rssMiB"] for r in rows),
            "commands": rows[-1]["commands"]}


def _cache_figures(hello: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    steady = rows[1:]
    watch = [r["traffic"].get("watch", {}).get("bytes", 0) for r in steady]
    return {"syncSeconds": hello["syncSeconds"], "syncRssMiB": hello["rssMiB"], "firstPassSeconds": rows[0]["seconds"],
            "steadyPassSeconds": _median(steady, lambda r: r["seconds"]),
            "steadyPassCpuSeconds": _median(steady, lambda r: r["cpuSeconds"]),
            "steadyPasses": [r["seconds"] for r in steady],
            "listRequestsPerPass": _median(steady, lambda r: r["traffic"].get("list", {}).get("requests", 0)),
            "bytesPerPass": _median(steady, _not_watch), "watchBytesDuringPass": round(statistics.median(watch)),
            "reparsedPodsPerPass": _median(steady, lambda r: r["reparsed"]),
            "workerRssMiB": max(r["rssMiB"] for r in rows), "commands": rows[-1]["commands"],
            "rssMiBPerPass": [r["rssMiB"] for r in rows],
            "rssBeforeTrimMiBPerPass": [r.get("rssBeforeTrimMiB") for r in rows],
            "skipped": [r["skipped"] for r in rows if r["skipped"]]}


def run(nodes: int, list_passes: int, cache_passes: int, seed: int = 1, every: float = PASS_EVERY) -> dict[str, Any]:
    objects = generate_cluster(nodes, 15, seed)
    pods = sum(1 for o in objects if o["kind"] == "Pod")
    load = {"start": _loadavg()}
    with TemporalDevServer(headless=True) as temporal, Simulator(objects=objects) as sim:
        churn = Churn(sim, seed)
        churn.start()
        watch_before, t0 = _traffic(sim), time.monotonic()
        try:
            lister = WorkerProcess("list", sim.kubeconfig_path, temporal.address)
            listed = _passes(lister, sim, list_passes, every)
            lister.close()
            cached = WorkerProcess("cache", sim.kubeconfig_path, temporal.address)
            rows = _passes(cached, sim, cache_passes, every)
            cached.close()
        finally:
            churn.stop_event.set()
        elapsed, total = time.monotonic() - t0, _delta(watch_before, _traffic(sim))
    load["end"] = _loadavg()
    cache = _cache_figures(cached.hello, rows)
    cache["watchBytesPer10s"] = round(total.get("watch", {}).get("bytes", 0) * PASS_EVERY / elapsed)
    return {"nodes": nodes, "pods": pods, "loadAverage": load, "churnedPods": churn.changed,
            "listEveryPass": _list_figures(listed), "cache": cache}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--list-passes", type=int, default=3)
    p.add_argument("--cache-passes", type=int, default=6, help="the first pass, then the steady ones (>= 5)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", action="store_true", help="print one JSON document instead of a report")
    p.add_argument("--serve", choices=("list", "cache"), help=argparse.SUPPRESS)
    p.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    p.add_argument("--temporal", help=argparse.SUPPRESS)
    p.add_argument("--discover-endpoint", help=argparse.SUPPRESS)  # bench/planner_catalogs.py
    p.add_argument("--region", default="us-east-1", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve:
        if os.environ.get(TRACE_ENV):  # before the worker's modules load, so their imports are traced too
            import tracemalloc

            tracemalloc.start(int(os.environ.get("NODEFLOW_BENCH_TRACE_FRAMES", "1")))
        from runtime.lean_kubernetes import install

        install()  # as worker.py does, before the worker side imports the kubernetes client
        from bench.planner_live_worker import serve  # only the serving subprocess loads the worker side

        return serve(args.serve, args.kubeconfig, args.temporal, args.discover_endpoint, args.region)
    report = run(args.nodes, args.list_passes, max(args.cache_passes, 2), args.seed)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    lp, c = report["listEveryPass"], report["cache"]
    print(f"{report['nodes']} nodes, {report['pods']} pods, load average {report['loadAverage']}")
    print(f"LIST every pass: {lp['passSeconds']} s (CPU {lp['passCpuSeconds']} s), {lp['listRequests']} LISTs, "
          f" {lp['bytesReceived'] / 1e6:.1f} MB, "
          f"worker {lp['workerRssMiB']} MiB")
    print(f"cache: sync {c['syncSeconds']} s, first pass {c['firstPassSeconds']} s, steady {c['steadyPassSeconds']} s "
          f"(CPU {c['steadyPassCpuSeconds']} s), "
          f"{c['listRequestsPerPass']} LISTs and {c['bytesPerPass']} B per pass, worker {c['workerRssMiB']} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
