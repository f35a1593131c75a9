"""How long a worker takes to start, as a restart or a failover meets it: `python worker.py` until `/readyz` answers
200 (Temporal answers and the cluster cache has synced), its CPU then, one tree after another.

    .venv/bin/python -m bench.worker_start [--starts 8] [--root DIR ...] [--json]

One Temporal dev server, EC2 stand-in and simulator (an empty cluster) serve every start; each --root's worker.py
(default: this tree) starts in turn, A B A B ..., so two trees compare side by side on the same machine, on the
bundled catalog (no discovery) as the chaos test's replicas start. A tree given with --root should have its
bytecode compiled as the set-up does (`python -m compileall -q DIR`): the workers run with PYTHONDONTWRITEBYTECODE
as the image does, and a tree without bytecode compiles every module at each start. Figures per tree: wall
seconds to ready and CPU seconds (user + system of the worker process, from /proc) at ready, median, min and max.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import worker_metrics
from bench.karpenter_probe import cpu_seconds
from devstack.processes import MotoServer, TemporalDevServer, free_port
from simulator.ec2 import DEFAULT_AMI
from simulator.server import Simulator

ROOT = Path(__file__).resolve().parents[1]
READY_TIMEOUT = 60.0


def one_start(root: Path, args: list[str], queue: str) -> dict[str, float]:
    """Start `root`'s worker, wait for /readyz 200, read its CPU, stop it (SIGTERM, as a rollout does)."""
    port = free_port()
    cmd = [sys.executable, str(root / "worker.py"), *args, "--task-queue", queue, "--metrics-address",
           f"127.0.0.1:{port}"]
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",  # the stand-in's, unless set
           **os.environ, "PYTHONPATH": str(root), "NODEFLOW_DISABLE_LEADER_ELECTION": "1"}
    began = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not worker_metrics.ready(port):
            if proc.poll() is not None or time.monotonic() - began > READY_TIMEOUT:
                raise RuntimeError(f"{root}: the worker {'exited' if proc.poll() is not None else 'never got ready'}"
                                   f" (rc={proc.returncode}); run it by hand: {' '.join(cmd)}")
            time.sleep(0.02)
        return {"readySeconds": time.monotonic() - began, "cpuSeconds": cpu_seconds(proc.pid)}
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def summary(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3),
            "max": round(max(values), 3)}


def run(roots: list[Path], starts: int) -> dict[str, Any]:
    """`starts` starts of each root's worker, alternating, against one stack."""
    runs: dict[str, list[dict[str, float]]] = {str(r): [] for r in roots}
    with TemporalDevServer() as temporal, MotoServer() as moto, Simulator(time_scale=0.01) as sim:
        args = ["--address", temporal.address, "--kubeconfig", sim.kubeconfig_path, "--ec2-endpoint", moto.endpoint,
                "--region", "us-east-1", "--ami-id", DEFAULT_AMI, "--log-level", "WARNING",
                "--no-instance-type-discovery"]
        for i in range(starts):
            for n, root in enumerate(roots):
                runs[str(root)].append(one_start(root, args, f"bench-start-{n}-{i}"))
                print(f"start {i + 1}/{starts} {root}: {runs[str(root)][-1]}", file=sys.stderr, flush=True)
    return {root: {"starts": len(r), "readySeconds": summary([x["readySeconds"] for x in r]),
                   "cpuSeconds": summary([x["cpuSeconds"] for x in r])} for root, r in runs.items()}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--starts", type=int, default=8, help="starts per tree (default 8)")
    p.add_argument("--root", action="append", type=Path, help="a tree whose worker.py to start (repeatable)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    a = p.parse_args(argv)
    if a.starts < 1:
        p.error("--starts must be at least 1")
    roots = [r.resolve() for r in (a.root or [ROOT])]
    missing = [str(r) for r in roots if not (r / "worker.py").is_file()]
    if missing:
        p.error(f"no worker.py in {', '.join(missing)}")
    result = run(roots, a.starts)
    if a.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{'tree':<40} {'starts':>6} {'ready s (median, min-max)':>28} {'CPU s (median, min-max)':>26}")
    for root, r in result.items():
        ready, cpu = r["readySeconds"], r["cpuSeconds"]
        print(f"{root:<40} {r['starts']:>6} {ready['median']:>12.2f} ({ready['min']:.2f}-{ready['max']:.2f})"
              f"{cpu['median']:>14.2f} ({cpu['min']:.2f}-{cpu['max']:.2f})")


if __name__ == "__main__":
    main()
