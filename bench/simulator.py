"""Simulator benchmark: load time, list latency, and requests per second for get / patch / eviction.

    .venv/bin/python bench/simulator.py                      # 5,000 nodes x 15 pods (about 75,000 pods)
    .venv/bin/python bench/simulator.py --nodes 500 --json   # smaller, machine-readable

The simulator runs in this process (its own thread and event loop); the load generator runs in a separate
process with a keep-alive aiohttp client, so client and server do not share one interpreter lock.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulator.generate import generate_cluster
from simulator.server import Simulator


def _timed_get(url: str, repeat: int = 3) -> tuple[float, int]:
    """Median seconds of a GET (full body read) and the body size."""
    import urllib.request

    times, size = [], 0
    for _ in range(repeat):
        started = time.perf_counter()
        with urllib.request.urlopen(url, timeout=600) as resp:
            size = len(resp.read())
        times.append(time.perf_counter() - started)
    return statistics.median(times), size


async def _hammer(base: str, kind: str, targets: list[Any], seconds: float, concurrency: int) -> dict[str, Any]:
    import aiohttp

    codes: dict[int, int] = {}
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds
    rng = random.Random(1)
    queue = list(targets)

    async def worker(session: aiohttp.ClientSession) -> None:
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            if kind == "get":
                ns, name = rng.choice(targets)
                resp = await session.get(f"{base}/api/v1/namespaces/{ns}/pods/{name}")
            elif kind == "patch":
                name = rng.choice(targets)
                resp = await session.patch(f"{base}/api/v1/nodes/{name}",
                                           data=json.dumps({"metadata": {"labels": {"bench": str(rng.random())}}}),
                                           headers={"Content-Type": "application/merge-patch+json"})
            else:
                if not queue:
                    return
                ns, name = queue.pop()
                body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": ns}}
                resp = await session.post(f"{base}/api/v1/namespaces/{ns}/pods/{name}/eviction", json=body)
            await resp.read()
            latencies.append(time.perf_counter() - started)
            codes[resp.status] = codes.get(resp.status, 0) + 1

    started = time.perf_counter()
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    latencies.sort()
    return {"requests": len(latencies), "seconds": round(elapsed, 3),
            "reqPerSec": round(len(latencies) / elapsed, 1) if elapsed else 0.0,
            "p50ms": round(latencies[len(latencies) // 2] * 1000, 2) if latencies else None,
            "p99ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 2) if latencies else None,
            "codes": {str(k): v for k, v in sorted(codes.items())}}


def _client_process(base: str, kind: str, targets: list[Any], seconds: float, concurrency: int, out: Any) -> None:
    out.put(asyncio.run(_hammer(base, kind, targets, seconds, concurrency)))


def _load_in_client(base: str, kind: str, targets: list[Any], seconds: float, concurrency: int) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    proc = ctx.Process(target=_client_process, args=(base, kind, targets, seconds, concurrency, out))
    proc.start()
    result = out.get(timeout=seconds + 300)
    proc.join(30)
    return result


def _loadavg() -> float | None:
    try:
        return round(float(Path("/proc/loadavg").read_text().split()[0]), 2)
    except (OSError, ValueError, IndexError):
        return None


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods-per-node", type=int, default=15)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=5.0, help="duration of each request-rate run")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of a report")
    return parser.parse_args(argv)


def _loaded_simulator(objects: list[dict[str, Any]]) -> tuple[Simulator, float, float]:
    """A simulator holding `objects`, with the wall and CPU seconds of loading them: what a big cluster costs
    before the first request, measured apart from serving."""
    sim = Simulator(time_scale=0.01)
    started, cpu_started = time.perf_counter(), time.process_time()
    sim.load_objects(objects, initial=True, copy=False)  # the bench hands its objects over
    sim.world.tick()  # the first PDB status pass belongs to loading
    return sim, time.perf_counter() - started, time.process_time() - cpu_started


def _list_latencies(base: str, some_node: str) -> dict[str, dict[str, Any]]:
    """Latency and body size of the LISTs controllers make: everything, by field and label selector, paged.
    The full pod list is timed once (it is the slowest); the others take the median of 3."""
    lists = {}
    for label, path in (("allPods", "/api/v1/pods"),
                        ("podsOnOneNode", f"/api/v1/pods?fieldSelector=spec.nodeName%3D{some_node}"),
                        ("podsByLabel", "/api/v1/pods?labelSelector=app%3Dkube-proxy"),
                        ("nodes", "/api/v1/nodes"),
                        ("pdbs", "/apis/policy/v1/poddisruptionbudgets"),
                        ("podsPage500", "/api/v1/pods?limit=500")):
        seconds, size = _timed_get(base + path, repeat=1 if label == "allPods" else 3)
        lists[label] = {"ms": round(seconds * 1000, 1), "bytes": size}
    return lists


def _request_rates(base: str, pods: list[tuple[str, str]], nodes: list[str], seconds: float,
                   concurrency: int) -> dict[str, dict[str, Any]]:
    """Requests per second for pod GETs, node PATCHes and evictions, each from a separate client process.
    Evictions go to a shuffled sample of at most 20,000 pods outside kube-system, each evicted once."""
    rates = {
        "get": _load_in_client(base, "get", pods, seconds, concurrency),
        "patch": _load_in_client(base, "patch", nodes, seconds, concurrency),
    }
    rng = random.Random(2)
    victims = [p for p in pods if p[0] != "kube-system"]
    rng.shuffle(victims)
    rates["eviction"] = _load_in_client(base, "eviction", victims[:20000], seconds, concurrency)
    return rates


def _print_report(report: dict[str, Any], generate_s: float, load_s: float, load_cpu: float) -> None:
    """The human-readable form of `report` (the load average is read again at printing time)."""
    cluster, stats = report["cluster"], report["ledger"]
    print(f"cluster: {cluster['nodes']} nodes, {cluster['pods']} pods, {cluster['objects']} objects "
          f"(generated in {generate_s:.1f} s)")
    print(f"load: {load_s:.2f} s wall, {load_cpu:.2f} s cpu (machine load average {_loadavg()})")
    for label, row in report["listLatency"].items():
        print(f"list {label:<14} {row['ms']:>9.1f} ms  {row['bytes'] / 1e6:8.2f} MB")
    for kind, row in report["requestRates"].items():
        print(f"{kind:<9} {row['reqPerSec']:>8.1f} req/s  p50 {row['p50ms']} ms  p99 {row['p99ms']} ms  "
              f"codes {row['codes']}")
    print(f"ledger: evictions {stats['evictions']}, PDB violations {stats['pdbViolations']}")


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    started = time.perf_counter()
    objects = generate_cluster(args.nodes, args.pods_per_node, args.seed)
    generate_s = time.perf_counter() - started
    pods = [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects if o["kind"] == "Pod"]
    nodes = [o["metadata"]["name"] for o in objects if o["kind"] == "Node"]
    protected = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects
                 if o["kind"] == "PodDisruptionBudget"}

    sim, load_s, load_cpu = _loaded_simulator(objects)
    sim.start()
    try:
        lists = _list_latencies(sim.base_url, nodes[len(nodes) // 2])
        rates = _request_rates(sim.base_url, pods, nodes, args.seconds, args.concurrency)
        stats = sim.stats()
    finally:
        sim.stop()

    report = {
        "cluster": {"nodes": len(nodes), "pods": len(pods), "objects": len(objects), "pdbs": len(protected)},
        "generateSeconds": round(generate_s, 2),
        "loadSeconds": round(load_s, 2),
        "loadCpuSeconds": round(load_cpu, 2),
        "machineLoadAverage": _loadavg(),
        "listLatency": lists,
        "requestRates": rates,
        "ledger": {"evictions": stats["evictions"], "pdbViolations": stats["pdbViolationsTotal"]},
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print_report(report, generate_s, load_s, load_cpu)
    return 0


if __name__ == "__main__":
    sys.exit(main())
