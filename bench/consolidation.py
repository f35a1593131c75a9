"""Consolidation quality: how close `plan --until-stable` gets to the cheapest possible cluster.

For generated clusters (20 to 60 nodes, varied pod sizes, several instance types, spot and on-demand,
amd64 and arm64 pools) this runs the planner until nothing changes, once in Karpenter's mode and once in
the optimizing mode (planning/disruption/optimizer.py), and divides each final cost per hour by the exact optimum
for the same pods, NodePools and catalog (bench/optimum.py, OR-Tools CP-SAT). Ratios are given against
the best solution the solver found and against its proven lower bound (equal when it proved optimality).

    python -m bench.consolidation            # default: 6 clusters, a few minutes
    python -m bench.consolidation --quick    # one small cluster, seconds
    python -m bench.consolidation --json     # machine-readable

The clusters have no do-not-disrupt pods, no zero-disruption PDBs and no drift, so that every node is a
consolidation candidate and the gap to the optimum measures the method, not the safety rules; and their
NodePools have `consolidateAfter: 0s`, because `--until-stable` holds the clock, so that with a positive
value a replacement launched during the run could never be consolidated again, as it would be later on.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from api.labels import DO_NOT_DISRUPT_ANNOTATION
from api.snapshot import Snapshot
from bench.optimum import optimum_for_objects
from planning.cluster import Cluster
from planning.disruption.optimizer import OptimizerSettings, optimizer_settings
from planning.planner.plan import plan
from simulator.generate import generate_cluster
from starter.output import render_table

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
DEFAULT_CASES = ((20, 1), (20, 2), (40, 1), (40, 2), (60, 1), (60, 2))
QUICK_CASES = ((20, 1),)
PODS_PER_NODE = 12


class ModeResult(BaseModel):
    """One planner mode on one cluster."""

    model_config = ConfigDict(populate_by_name=True)

    cost_per_hour: float = Field(alias="costPerHour")
    nodes: int
    passes: int
    commands: int
    seconds: float
    ratio: float  # final cost / best known packing: a lower estimate of the true ratio
    ratio_to_bound: float = Field(alias="ratioToBound")  # final cost / proven lower bound: an upper estimate


class CaseResult(BaseModel):
    """One generated cluster: its start, both modes, and the optimum."""

    model_config = ConfigDict(populate_by_name=True)

    nodes: int
    seed: int
    pods: int
    start_cost_per_hour: float = Field(alias="startCostPerHour")
    karpenter: ModeResult
    optimize: ModeResult | None = None
    optimum_cost_per_hour: float = Field(alias="optimumCostPerHour")  # the solver's best solution
    best_known_cost_per_hour: float = Field(alias="bestKnownCostPerHour")  # min(solver, planner final states)
    optimum_bound: float = Field(alias="optimumBound")
    optimum_status: str = Field(alias="optimumStatus")
    optimum_nodes: int = Field(alias="optimumNodes")
    optimum_seconds: float = Field(alias="optimumSeconds")


def make_cluster(nodes: int, seed: int) -> list[dict[str, Any]]:
    """The simulator's generator with the consolidation blockers turned off."""
    objects = generate_cluster(nodes, PODS_PER_NODE, seed, empty_fraction=0.0, drift_fraction=0.0,
                               do_not_disrupt_fraction=0.0, blocking_pdb_fraction=0.0,
                               now=NOW - timedelta(days=2))
    for obj in objects:
        if obj.get("kind") == "Pod":  # the generator also marks whole workloads do-not-disrupt
            (obj.get("metadata") or {}).get("annotations", {}).pop(DO_NOT_DISRUPT_ANNOTATION, None)
        if obj.get("kind") == "NodePool":  # the dry run holds the clock: let replacements be consolidated too
            obj["spec"]["disruption"]["consolidateAfter"] = "0s"
    return objects


def _mode(snapshot: Any, optimize: bool) -> ModeResult:

    started = time.monotonic()
    result = plan(snapshot, NOW, until_stable=True, optimize=optimize)
    return ModeResult(costPerHour=result.final.cost_per_hour, nodes=result.final.nodes, passes=result.final.passes,
                      commands=len(result.commands), seconds=round(time.monotonic() - started, 2),
                      ratio=0.0, ratioToBound=0.0)


def _rate(mode: ModeResult | None, best: float, bound: float) -> None:
    if mode is not None:
        mode.ratio = round(mode.cost_per_hour / best, 4) if best else 1.0
        mode.ratio_to_bound = round(mode.cost_per_hour / bound, 4) if bound else 1.0


def run_case(nodes: int, seed: int, optimum_seconds: float, optimize: bool) -> CaseResult:

    objects = make_cluster(nodes, seed)
    snapshot = Snapshot.from_objects(objects)
    start = Cluster.from_snapshot(snapshot)
    optimum = optimum_for_objects(objects, time_limit=optimum_seconds)
    karpenter = _mode(snapshot, False)
    optimizing = _mode(snapshot, True) if optimize else None
    # Each final state is itself a packing of the same pods, so the optimum lies in [bound, best known].
    finals = [m.cost_per_hour for m in (karpenter, optimizing) if m is not None]
    best = min([optimum.cost_per_hour or math.inf, *finals])
    for m in (karpenter, optimizing):
        _rate(m, best, optimum.lower_bound)
    return CaseResult(
        nodes=nodes, seed=seed, pods=optimum.pods, startCostPerHour=start.cost_per_hour(),
        karpenter=karpenter, optimize=optimizing, optimumCostPerHour=optimum.cost_per_hour or 0.0,
        bestKnownCostPerHour=best, optimumBound=optimum.lower_bound, optimumStatus=optimum.status,
        optimumNodes=optimum.node_count, optimumSeconds=optimum.seconds,
    )


def summarize(cases: list[CaseResult]) -> dict[str, Any]:
    """Mean and worst ratio per mode, against the best optimum found and against the proven bound."""
    out: dict[str, Any] = {}
    for mode in ("karpenter", "optimize"):
        rows = [getattr(c, mode) for c in cases if getattr(c, mode) is not None]
        if not rows:
            continue
        out[mode] = {
            "meanRatio": round(statistics.fmean(r.ratio for r in rows), 4),
            "worstRatio": round(max(r.ratio for r in rows), 4),
            "meanRatioToBound": round(statistics.fmean(r.ratio_to_bound for r in rows), 4),
            "worstRatioToBound": round(max(r.ratio_to_bound for r in rows), 4),
            "seconds": round(sum(r.seconds for r in rows), 1),
        }
    return out


def render(cases: list[CaseResult], summary: dict[str, Any]) -> str:
    def mode(m: ModeResult | None) -> list[Any]:
        if m is None:
            return ["-", "-", "-"]
        return [f"{m.cost_per_hour:.4f}", f"{m.ratio:.3f}", f"{m.seconds:.1f}s"]

    rows = [[c.nodes, c.seed, c.pods, f"{c.start_cost_per_hour:.4f}", *mode(c.karpenter), *mode(c.optimize),
             f"{c.optimum_cost_per_hour:.4f}", f"{c.best_known_cost_per_hour:.4f}", f"{c.optimum_bound:.4f}",
             c.optimum_status] for c in cases]
    text = render_table(["NODES", "SEED", "PODS", "START$/H", "KARPENTER$/H", "RATIO", "TIME", "OPTIMIZE$/H",
                         "RATIO", "TIME", "SOLVER$/H", "BEST$/H", "BOUND$/H", "STATUS"], rows)
    lines = [text.rstrip("\n"), ""]
    for name, s in summary.items():
        lines.append(f"{name:9s}  mean ratio {s['meanRatio']:.3f}  worst {s['worstRatio']:.3f}   "
                     f"(to proven bound: mean {s['meanRatioToBound']:.3f}, worst {s['worstRatioToBound']:.3f})  "
                     f"planner time {s['seconds']:.1f}s")
    lines.append("ratio = final $/h / best known packing (solver or planner); the true ratio to the optimum lies "
                 "between it and the ratio to the proven bound.")
    return "\n".join(lines) + "\n"


def parse_cases(text: str) -> list[tuple[int, int]]:
    """"20:1,40:2" -> [(20, 1), (40, 2)]."""
    out = []
    for part in text.split(","):
        nodes, _, seed = part.strip().partition(":")
        out.append((int(nodes), int(seed or 1)))
    return out


def main(argv: list[str] | None = None) -> int:

    parser = argparse.ArgumentParser(prog="python -m bench.consolidation", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one 20-node cluster with short solver limits")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--cases", type=parse_cases, help="NODES:SEED list, e.g. 20:1,40:3 (default: 6 clusters)")
    parser.add_argument("--optimum-seconds", type=float, help="CP-SAT time limit for the optimum (default 12, quick 3)")
    parser.add_argument("--optimizer-seconds", type=float,
                        help="CP-SAT time limit per optimizing pass (default 1.5, quick 0.5)")
    parser.add_argument("--no-optimize", action="store_true", help="only Karpenter's mode")
    args = parser.parse_args(argv)
    cases = args.cases or list(QUICK_CASES if args.quick else DEFAULT_CASES)
    optimum_seconds = args.optimum_seconds or (3.0 if args.quick else 12.0)
    settings = OptimizerSettings(time_limit=args.optimizer_seconds or (0.5 if args.quick else 1.5), retry_factor=3.0)
    results = []
    with optimizer_settings(settings):
        for nodes, seed in cases:
            results.append(run_case(nodes, seed, optimum_seconds, optimize=not args.no_optimize))
            if not args.json:
                print(f"... {nodes} nodes seed {seed} done", file=sys.stderr, flush=True)
    summary = summarize(results)
    if args.json:
        print(json.dumps({"cases": [c.model_dump(by_alias=True) for c in results], "summary": summary}, indent=2))
    else:
        sys.stdout.write(render(results, summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
