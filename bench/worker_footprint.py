"""The worker's memory and CPU on a small Karpenter basic scenario, one worker tree after another: a partial probe.

    .venv/bin/python -m bench.worker_footprint [--scale 0.2] [--root DIR ...] [--json]

Karpenter's basic scenario (bench/karpenter_scenarios.py) with its replicas scaled by --scale runs through
bench.karpenter_suite's phases once per --root (default: this tree). The stack (Temporal, moto, the simulator)
is always this tree's; only the `python worker.py` process comes from DIR, so two checkouts (e.g. one made with
`git archive <commit> | tar -x -C /tmp/before`) are compared on the same machine within one run. Figures per
phase are the suite's (worker p95 and max RSS, average cores) and are partial: the full suite (1,000 pods, 13 min,
a quiet machine) is `bench.karpenter_suite`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from bench.karpenter_phases import say
from bench.karpenter_scenarios import SCENARIOS, Phase, Scenario
from bench.karpenter_suite import run_scenario
from bench.karpenter_world import SuiteWorld
from devstack.processes import free_port

ROOT = Path(__file__).resolve().parents[1]


def scaled(scenario: Scenario, scale: float) -> Scenario:
    """The scenario with every replica count (and the pods each phase expects) times `scale`, at least 1."""
    def n(count: int) -> int:
        return max(1, round(count * scale))

    def phase(p: Phase) -> Phase:
        return replace(p, pods=n(p.pods), scale_to={k: n(v) for k, v in p.scale_to.items()})

    return replace(scenario, workloads=tuple(replace(w, replicas=n(w.replicas)) for w in scenario.workloads),
                   phases=tuple(phase(p) for p in scenario.phases))


def world_for(root: Path) -> type[SuiteWorld]:
    """A SuiteWorld whose worker process runs `root`'s worker.py (cwd and PYTHONPATH there)."""

    class RootWorld(SuiteWorld):
        worker_root: ClassVar[Path] = root

        def worker_command(self) -> list[str]:
            return [sys.executable, str(self.worker_root / "worker.py"), *super().worker_command()[2:]]

        def start_worker(self) -> None:
            self.metrics_port = free_port()
            env = dict(os.environ, PYTHONPATH=str(self.worker_root),
                       NODEFLOW_PLANNER_SECONDS=str(self.o.planner_seconds))
            with (self.o.workdir / "worker.log").open("ab") as log:
                self.worker = subprocess.Popen(self.worker_command(), cwd=self.worker_root, env=env,
                                               stdout=subprocess.DEVNULL, stderr=log)

    return RootWorld


def row(root: Path, phase: dict[str, Any]) -> str:
    w = phase["processes"]["worker"]
    return (f"| {root} | {phase['phase']}{'' if phase['finished'] else ' (timed out)'} | {w['p95MemoryMB']} | "
            f"{w['maxMemoryMB']} | {w['avgCpuCores']} | {phase['figures']['wallMinutes']} | "
            f"{phase['nodesBefore']} -> {phase['nodesAfter']} | {phase['loadAverage'][0]} |")


async def run(args: argparse.Namespace) -> list[tuple[Path, dict[str, Any]]]:
    scenario = scaled(SCENARIOS[args.scenario], args.scale)
    out = []
    for root in args.root or [ROOT]:
        say(f"worker from {root}: {scenario.name} x{args.scale} ({scenario.pods} pods)")
        out.append((root, await run_scenario(scenario, args, world_for(root.resolve()))))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.worker_footprint", description=(__doc__ or "").splitlines()[0])
    p.add_argument("--scenario", choices=sorted(SCENARIOS), default="basic")
    p.add_argument("--scale", type=float, default=0.2, help="replicas x this (0.2: 200 of basic's 1,000 pods)")
    p.add_argument("--root", type=Path, action="append", help="a tree whose worker.py to run (repeatable)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--time-scale", type=float, default=1.0)
    p.add_argument("--launch-seconds", type=float, default=45.0)
    p.add_argument("--quiet", type=float, default=60.0, help="wall seconds without change that end consolidation")
    p.add_argument("--phase-timeout", type=float, default=600.0)
    p.add_argument("--phases", type=int, default=0)
    args = p.parse_args(argv)
    results = asyncio.run(run(args))
    if args.json:
        print(json.dumps([{"root": str(r), **res} for r, res in results], indent=2))
        return 0
    print("partial probe: | worker tree | phase | p95 RSS MB | max RSS MB | avg cores | wall min | nodes | load |")
    print("|---|---|---|---|---|---|---|---|")
    for root, res in results:
        for phase in res["phases"]:
            print(row(root, phase))
    return 0


if __name__ == "__main__":
    sys.exit(main())
