"""The soak's figures and verdict from its samples and end counts (pure: unit-tested in tests/bench/)."""

from __future__ import annotations

import statistics
from typing import Any

from simulator.ledger import Ledger

SAFETY_KEYS = ("pdbViolations", "leakedInstances", "stuckFinalizers", "duplicateLaunches",
               "duplicateTerminations", "failedWorkflows", "workerExits", "podsPendingPastBound")


def warmup_seconds(duration: float) -> float:
    """Warm-up excluded from the growth figure: a quarter of the run, at most five minutes."""
    return min(300.0, duration / 4)


def rss_figures(samples: list[dict[str, Any]], warmup: float) -> dict[str, Any]:
    """RSS at the end of warm-up and at the end, the peak, and the growth per hour after warm-up (least squares)."""
    rows = [(s["t"], s["workerRssMiB"]) for s in samples if s.get("workerRssMiB")]
    if not rows:
        return {}
    after = [r for r in rows if r[0] >= warmup] or rows[-1:]
    slope = statistics.linear_regression(*zip(*after, strict=True)).slope if len(after) >= 3 else 0.0
    return {"warmupSeconds": warmup, "atWarmupMiB": after[0][1], "endMiB": rows[-1][1],
            "peakMiB": max(r[1] for r in rows), "growthMiBPerHour": round(slope * 3600, 1),
            "samplesAfterWarmup": len(after)}


def history_figures(samples: list[dict[str, Any]], names: tuple[str, ...]) -> dict[str, Any]:
    """Per long-running workflow: its longest and largest run history seen, and how many runs were seen."""
    out: dict[str, Any] = {}
    for name in names:
        seen = [s[name] for s in samples if s.get(name)]
        if seen:
            out[name] = {"maxEvents": max(h["events"] for h in seen), "maxBytes": max(h["bytes"] for h in seen),
                         "lastEvents": seen[-1]["events"], "runsSeen": len({h["runId"] for h in seen})}
    return out


def safety_counts(found: dict[str, Any]) -> dict[str, int]:
    """Each safety finding (a list or a dict of offenders, or a number) as a count."""
    return {k: (v if isinstance(v, int) else len(v)) for k, v in found.items() if k in SAFETY_KEYS}


def verdict(safety: dict[str, int], pods_pending_end: int, converged: bool, unfinished: int = 0) -> list[str]:
    """Why the soak failed (empty: it passed): any safety count above 0, pods left pending, workflows still
    running once the planner was paused and the rest had time to finish, no convergence."""
    problems = [f"{k}={v}" for k, v in safety.items() if v]
    if pods_pending_end:
        problems.append(f"podsPendingAtEnd={pods_pending_end}")
    if unfinished:
        problems.append(f"unfinishedWorkflows={unfinished}")
    if not converged:
        problems.append("did not converge in time")
    return problems


def late_pods(ledger: Ledger, now: float | None = None) -> list[str]:
    """The pods the simulator's ledger saw wait unbound longer than its bound, longest first, as
    `namespace/name 12.3s` (`(still pending)` when unbound at `now`). The soak and the chaos suite set the bound
    before their run; a bound never set is an error here, not a silent 0."""
    bound = ledger.pending_bound_seconds
    if bound is None:
        raise ValueError("the ledger's pending_bound_seconds is not set: pods left Pending were not counted")
    return [f"{w.pod} {w.seconds:.1f}s{'' if w.bound else ' (still pending)'}"
            for w in ledger.pods_pending_past(bound, now)]


def rss_growth_by_life(samples: list[dict[str, Any]], warmup: float, min_span: float = 600.0) -> dict[str, float]:
    """RSS growth per hour (least squares) of each worker life (`a#2`: replica a's second start) seen for at
    least `min_span` seconds after warm-up: a replica killed and started again begins a new series, so its restart
    is not read as a fall and its warm-up not as growth."""
    series: dict[str, list[tuple[float, float]]] = {}
    for s in samples:
        for life, rss in (s.get("rssByLife") or {}).items():
            if rss:
                series.setdefault(life, []).append((s["t"], rss))
    out = {}
    for life, rows in series.items():
        start = rows[0][0] + warmup
        after = [r for r in rows if r[0] >= start]
        if len(after) >= 3 and after[-1][0] - after[0][0] >= min_span:
            out[life] = round(statistics.linear_regression(*zip(*after, strict=True)).slope * 3600, 1)
    return out
