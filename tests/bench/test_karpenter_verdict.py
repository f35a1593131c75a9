"""The arithmetic behind bench/karpenter_suite.py: utilization, p95, simulated time, verdicts."""

from __future__ import annotations

import pytest

from bench.karpenter_scenarios import SCENARIOS
from bench.karpenter_verdict import Thresholds, p95, reserved_utilization, simulated_seconds, verdict, within_half

BASIC_SCALE_OUT = Thresholds(totalMinutes=2, memoryMB=260, cpuCores=0.50, cpuUtil=0.53, memoryUtil=0.65)


def test_utilization_is_the_mean_of_per_node_ratios() -> None:
    # one full node and one half-empty node: 75%, not requests / allocatable summed over the cluster
    cpu, mem = reserved_utilization([(4.0, 4.0, 8.0, 8.0), (1.0, 4.0, 16.0, 32.0)])
    assert cpu == pytest.approx((1.0 + 0.25) / 2)
    assert mem == pytest.approx((1.0 + 0.5) / 2)


def test_utilization_skips_nodes_without_allocatable_and_is_zero_without_nodes() -> None:
    assert reserved_utilization([(1.0, 0.0, 1.0, 0.0), (1.0, 2.0, 1.0, 4.0)]) == (0.5, 0.25)
    assert reserved_utilization([]) == (0.0, 0.0)


def test_p95_nearest_rank() -> None:
    assert p95([]) == 0.0
    assert p95([7.0]) == 7.0
    assert p95([float(i) for i in range(1, 101)]) == 95.0
    assert p95([float(i) for i in range(1, 21)]) == 19.0


def test_simulated_time_stretches_only_the_scaled_waits() -> None:
    assert simulated_seconds(100.0, 0.0, 0.1) == 100.0
    assert simulated_seconds(100.0, 10.0, 0.1) == pytest.approx(90.0 + 100.0)
    assert simulated_seconds(100.0, 500.0, 0.1) == pytest.approx(1000.0)  # scaled time is capped at the wall
    assert simulated_seconds(100.0, 40.0, 1.0) == 100.0


def test_verdict_checks_each_asserted_figure_in_its_direction() -> None:
    figures = {"totalMinutes": 1.5, "cpuUtil": 0.6, "memoryUtil": 0.6, "workerP95MemoryMB": 300.0,
               "workerAvgCpuCores": 0.2}
    assert verdict(figures, BASIC_SCALE_OUT) == {"totalMinutes": True, "cpuUtil": True, "memoryUtil": False,
                                                 "workerP95MemoryMB": False, "workerAvgCpuCores": True}


def test_verdict_leaves_out_what_the_phase_does_not_assert() -> None:
    consolidation = Thresholds(totalMinutes=20, memoryMB=260, cpuCores=0.25)
    figures = {"totalMinutes": 20.0, "cpuUtil": 0.1, "memoryUtil": 0.1, "workerP95MemoryMB": 100.0,
               "workerAvgCpuCores": 0.25}
    assert verdict(figures, consolidation) == {"totalMinutes": False, "workerP95MemoryMB": True,
                                               "workerAvgCpuCores": False}  # strict, as Karpenter's BeNumerically


def test_within_half() -> None:
    assert within_half(10.0, Thresholds(20, 1, 1))
    assert not within_half(10.1, Thresholds(20, 1, 1))


def test_scenarios_match_karpenters_pod_counts() -> None:
    pods = {name: s.pods for name, s in SCENARIOS.items()}
    assert pods == {"basic": 1000, "drift": 600, "do-not-disrupt": 1100, "wide": 1000, "hostname-spreading-xl": 2000}
    for s in SCENARIOS.values():
        for phase in s.phases:
            if phase.kind == "consolidation":
                kept = {w.name: phase.scale_to.get(w.name, w.replicas) for w in s.workloads}
                assert sum(kept.values()) == phase.pods
