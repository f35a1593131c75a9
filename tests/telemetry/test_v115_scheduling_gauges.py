"""nodeflow's gauges of v1.15's scheduling inputs, set once per planner pass from `PlanResult.scheduling_counts`
(activities/planning_runner.py scheduling_gauges; docs/configuration.md metrics; Karpenter has none for them)."""

from __future__ import annotations

from datetime import UTC, datetime

from activities.planning_runner import scheduling_gauges
from planning.disruption.commands import FinalState, PlanResult
from telemetry.metrics import REGISTRY

NAMES = ("nodeflow_scheduling_default_spread_pods", "nodeflow_scheduling_pods_resizing",
         "nodeflow_scheduling_volume_limited_pods")


def _result(**counts: int) -> PlanResult:
    return PlanResult(at=datetime(2026, 11, 29, tzinfo=UTC), final=FinalState(nodes=0, cost_per_hour=0, passes=1),
                      scheduling_counts=counts)


def _values() -> tuple[float | None, ...]:
    return tuple(REGISTRY.get_sample_value(n) for n in NAMES)


def test_each_pass_sets_the_three_gauges_to_its_counts() -> None:
    scheduling_gauges(_result(defaultSpreadPods=7, podsResizing=2, volumeLimitedPods=3))
    assert _values() == (7.0, 2.0, 3.0)
    scheduling_gauges(_result(defaultSpreadPods=0, podsResizing=1, volumeLimitedPods=0))
    assert _values() == (0.0, 1.0, 0.0)  # a gauge, not a counter: the last pass's figure


def test_a_result_without_counts_leaves_them_as_they_were() -> None:
    scheduling_gauges(_result(defaultSpreadPods=4, podsResizing=5, volumeLimitedPods=6))
    scheduling_gauges(_result())  # e.g. a skipped pass
    assert _values() == (4.0, 5.0, 6.0)
