"""What a Prometheus scrape of the worker costs: Karpenter's state gauges (runtime/karpenter_state.py) over a
synthetic cluster held as the watch cache holds it (trimmed, never modified), written as `/metrics` writes them.

Partial: the collector and the writer in this process, no HTTP and no worker around them. `--writer
generate_latest` writes with prometheus_client's own writer instead of telemetry/exposition.py (the A/B of the
writer; the scrape memo is in the collector either way). Prints JSON: lines, the first scrape's CPU, the median of
the others.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest

from bench.termination_cluster import PodSpec, cluster_objects
from runtime.cluster_trim import trim
from runtime.karpenter_state import KarpenterStateCollector
from telemetry.exposition import render


def cluster(nodes: int, pods_per_node: int) -> list[dict[str, Any]]:
    """Ready registered nodes with Running pods, trimmed as the cache keeps them."""
    objs = cluster_objects({f"bench-{i:05d}": f"i-{i:017x}" for i in range(nodes)},
                           [PodSpec(f"app-{i:05d}", f"bench-{i:05d}", count=pods_per_node) for i in range(nodes)],
                           registered=True)
    for o in objs:
        if o["kind"] == "Node":
            o["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
        elif o["kind"] == "Pod":
            o.setdefault("status", {})["phase"] = "Running"
    return [trim(o["kind"], o) for o in objs]


def run(args: argparse.Namespace) -> dict[str, Any]:
    objs = cluster(args.nodes, args.pods_per_node)
    registry = CollectorRegistry()
    state = KarpenterStateCollector()
    state.attach(lambda: (objs, True))
    registry.register(state)
    write = generate_latest if args.writer == "generate_latest" else render
    cpu, body = [], b""
    for _ in range(args.scrapes):
        began = time.process_time()
        body = write(registry)
        cpu.append(time.process_time() - began)
    return {"nodes": args.nodes, "pods": args.nodes * args.pods_per_node, "writer": args.writer,
            "lines": body.count(b"\n"), "bytes": len(body), "firstScrapeCpuSeconds": round(cpu[0], 3),
            "scrapeCpuSecondsMedian": round(statistics.median(cpu[1:]), 3) if len(cpu) > 1 else None,
            "partial": True}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.scrape", description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--pods-per-node", type=int, default=14)
    p.add_argument("--scrapes", type=int, default=5, help="the first, then the steady ones (>= 2)")
    p.add_argument("--writer", choices=("render", "generate_latest"), default="render")
    args = p.parse_args(argv)
    if args.scrapes < 2:
        p.error("--scrapes must be at least 2: the first scrape fills the memo")
    print(json.dumps(run(args), indent=2))


if __name__ == "__main__":
    main()
