"""The planner pass's DisruptionPolicy metrics: held pools (a gauge reset each pass) and skipped consolidation moves."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from activities.planning_runner import policy_metrics
from api.snapshot import load_snapshot
from planning.planner.plan import plan
from telemetry.metrics import REGISTRY

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
AT = datetime(2026, 11, 22, 20, tzinfo=UTC)


def _held(pool: str, hold: str) -> float | None:
    return REGISTRY.get_sample_value("nodeflow_disruption_policy_held", {"nodepool": pool, "hold": hold})


def test_held_pools_and_skipped_moves_are_counted() -> None:
    policy_metrics(plan(load_snapshot(EXAMPLES / "plan-calendar.yaml"), AT))
    assert _held("default", "Exclusion") == 1.0
    before = REGISTRY.get_sample_value("nodeflow_consolidation_skipped_total", {"nodepool": "default"}) or 0.0
    policy_metrics(plan(load_snapshot(EXAMPLES / "plan-savings-threshold.yaml"), AT))
    assert _held("default", "Exclusion") is None  # reset: that pass held nothing
    after = REGISTRY.get_sample_value("nodeflow_consolidation_skipped_total", {"nodepool": "default"})
    assert after == before + 3
