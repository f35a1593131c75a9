"""CapacityBuffer cost benchmark: what one tick of the buffer controller (runtime/capacity_buffers.py) and one
planner pass cost with a buffer, on generated clusters (docs/semantics.md §20, docs/benchmarks.md).

Per size: the controller's work (resolve every buffer, plan its virtual pods with the provisioner's decision) and
one planner pass (`run_pass`), each without and with one buffer of `--chunks` 2-vCPU chunks; p50 of `--runs`,
wall and CPU seconds, pods already parsed as the worker's watch cache holds them. Prints the load average at
start and end, since the machine is shared.

    .venv/bin/python bench/capacity_buffer.py [--sizes 500,2000] [--runs 3] [--chunks 10] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from api import capacity_buffer as cb
from api.snapshot import Snapshot
from planning.capacity_buffers import resolve_all, virtual_pods
from planning.cluster import Parsed, parse_claim, parse_pod
from planning.planner.plan import run_pass
from planning.provisioning.provisioner import decide
from simulator.generate import generate_cluster

CHUNK = {"containers": [{"name": "pause", "resources": {"requests": {"cpu": "2", "memory": "4Gi"}}}]}


def buffer_objects(chunks: int) -> list[dict[str, Any]]:
    return [{"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "chunk", "namespace": "default"},
             "template": {"spec": CHUNK}},
            {"apiVersion": cb.API_VERSION, "kind": cb.KIND,
             "metadata": {"name": "bench", "namespace": "default", "uid": "uid-bench"},
             "spec": {"podTemplateRef": {"name": "chunk"}, "replicas": chunks}}]


def controller_tick(snap: Snapshot, parsed: Parsed) -> dict[str, Any]:
    """What the controller computes each tick (its status writes and workflow start aside)."""
    resolutions = resolve_all(snap.others)
    uids = [p["metadata"]["uid"] for res in resolutions for p in virtual_pods(res)]
    if not uids:
        return {}
    return {k: v.to_public() for k, v in decide(snap, pods=uids, parsed=parsed).headroom.items()}


def timed(fn: Callable[[], Any], runs: int) -> tuple[float, float, Any]:
    walls, cpus, out = [], [], None
    for _ in range(runs):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus), out


def measure(nodes: int, runs: int, chunks: int) -> list[dict[str, Any]]:
    objs = generate_cluster(nodes, 15, seed=1)
    rows = []
    for label, extra in (("without", []), ("with", buffer_objects(chunks))):
        snap = Snapshot.from_objects(objs + extra)
        parsed = Parsed([parse_pod(p) for p in snap.pods], [parse_claim(c) for c in snap.node_claims])
        tick_wall, tick_cpu, headroom = timed(lambda s=snap, p=parsed: controller_tick(s, p), runs)
        at = datetime.now(UTC)
        pass_wall, pass_cpu, _ = timed(lambda s=snap, p=parsed, t=at: run_pass(s, t, parsed=p), runs)
        rows.append({"nodes": nodes, "buffer": label, "tickWall": round(tick_wall, 3), "tickCpu": round(tick_cpu, 3),
                     "passWall": round(pass_wall, 3), "passCpu": round(pass_cpu, 3), "headroom": headroom})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="500,2000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--chunks", type=int, default=10)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    load_start = os.getloadavg()
    rows = [r for n in (int(s) for s in args.sizes.split(",")) for r in measure(n, args.runs, args.chunks)]
    out = {"loadStart": [round(x, 2) for x in load_start], "loadEnd": [round(x, 2) for x in os.getloadavg()],
           "rows": rows}
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"load at start {out['loadStart']}, at end {out['loadEnd']}")
    for r in rows:
        print(f"{r['nodes']:>6} nodes, {r['buffer']:>7} buffer: controller tick {r['tickWall']:.2f}s wall "
              f"{r['tickCpu']:.2f}s CPU; planner pass {r['passWall']:.2f}s wall {r['passCpu']:.2f}s CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
