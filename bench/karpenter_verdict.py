"""The arithmetic of bench/karpenter_suite.py, kept pure so it can be unit-tested: reserved utilization as
Karpenter's suite computes it, p95, simulated time from a time-scaled run, and the verdict of a phase's figures
against Karpenter's thresholds.

Karpenter's utilization (test/pkg/environment/common/monitor.go, AvgUtilization) is the mean over the nodes of
its NodePools of (sum of the requests of the pods bound there) / (node allocatable), per resource.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# figure -> (threshold field, direction): "<" means the figure must be below the threshold, ">" above it
CHECKS: dict[str, tuple[str, str]] = {
    "totalMinutes": ("totalMinutes", "<"),
    "cpuUtil": ("cpuUtil", ">"),
    "memoryUtil": ("memoryUtil", ">"),
    "workerP95MemoryMB": ("memoryMB", "<"),
    "workerAvgCpuCores": ("cpuCores", "<"),
}


@dataclass(frozen=True)
class Thresholds:
    """One phase's limits from Karpenter's suite (None: the suite asserts nothing for it)."""

    totalMinutes: float
    memoryMB: float
    cpuCores: float
    cpuUtil: float | None = None
    memoryUtil: float | None = None


def reserved_utilization(nodes: list[tuple[float, float, float, float]]) -> tuple[float, float]:
    """Mean CPU and memory utilization over nodes given as (cpu requested, cpu allocatable, memory requested,
    memory allocatable); a node with zero allocatable is skipped, as Karpenter does."""
    cpu = [req / alloc for req, alloc, _, _ in nodes if alloc > 0]
    mem = [req / alloc for _, _, req, alloc in nodes if alloc > 0]
    return (sum(cpu) / len(cpu) if cpu else 0.0, sum(mem) / len(mem) if mem else 0.0)


def p95(values: list[float]) -> float:
    """Nearest-rank 95th percentile (0 for no samples)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def simulated_seconds(wall: float, scaled_wall: float, time_scale: float) -> float:
    """Wall seconds of a phase as they would be unscaled: the `scaled_wall` seconds during which the phase waited
    on a time-scaled delay of the simulator (an instance launching, a pod in its grace period, a pod starting)
    are stretched by 1 / time_scale, the rest (the worker's own work and timers) count as they are. It is an upper
    bound: a second in which the worker computed while something else launched is stretched too."""
    scaled_wall = min(max(scaled_wall, 0.0), wall)
    return wall - scaled_wall + scaled_wall / time_scale


def verdict(figures: dict[str, Any], limits: Thresholds) -> dict[str, bool]:
    """figure -> whether it meets Karpenter's threshold (only the figures the suite asserts for the phase)."""
    out: dict[str, bool] = {}
    for figure, (field, direction) in CHECKS.items():
        limit = getattr(limits, field)
        value = figures.get(figure)
        if limit is None or value is None:
            continue
        out[figure] = value < limit if direction == "<" else value > limit
    return out


def within_half(total_minutes: float, limits: Thresholds) -> bool:
    """The issue's own bar for consolidation and drift: at most half of Karpenter's total-time threshold."""
    return total_minutes <= limits.totalMinutes / 2
