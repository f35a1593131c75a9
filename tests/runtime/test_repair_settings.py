"""The worker's node repair flags reach the planner's policies (runtime/wiring.py repair_policies), and the pass's
zone-outage hold and veto reach the metrics (activities/planning_runner.py); docs/semantics.md §13."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

import worker
from activities.planning_runner import PlanningActivities, _take_repairs
from contracts.disruption import PlanPassResult
from planning.disruption.repair import DEFAULT_POLICIES, Repair, RepairBlocked, RepairBlockReason, is_legacy
from runtime.settings import Settings
from runtime.wiring import repair_policies
from telemetry import metrics

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def test_the_method_is_the_default_and_the_legacy_flag_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NODEFLOW_LEGACY_NODE_REPAIR", raising=False)
    monkeypatch.delenv("NODEFLOW_NODE_REPAIR_ZONE_OUTAGE_PERCENT", raising=False)
    args = worker.parse_args([])
    assert args.legacy_node_repair is False and args.node_repair_zone_outage_percent == 50
    assert worker.parse_args(["--legacy-node-repair"]).legacy_node_repair is True
    monkeypatch.setenv("NODEFLOW_LEGACY_NODE_REPAIR", "true")
    monkeypatch.setenv("NODEFLOW_NODE_REPAIR_ZONE_OUTAGE_PERCENT", "70")
    args = worker.parse_args([])
    assert args.legacy_node_repair is True and args.node_repair_zone_outage_percent == 70


def test_settings_make_the_policies() -> None:
    assert not is_legacy(repair_policies(Settings()))
    legacy = repair_policies(Settings(legacy_node_repair=True, node_repair_zone_outage_percent=70))
    assert is_legacy(legacy) and legacy.zone_outage_percent == 70 and len(legacy) == 2
    assert repair_policies(Settings(node_repair=False)) == ()


def test_the_planning_activities_keep_the_mode() -> None:
    """PlanningActivities copies its policies; the copy must keep `legacy` and the zone share (a tuple() would not)."""
    legacy = repair_policies(Settings(legacy_node_repair=True, node_repair_zone_outage_percent=70))
    kept = PlanningActivities(None, repair=legacy)._repair  # type: ignore[arg-type]
    assert is_legacy(kept) and kept.zone_outage_percent == 70
    assert not is_legacy(PlanningActivities(None, repair=DEFAULT_POLICIES)._repair)  # type: ignore[arg-type]


def _sample(name: str, **labels: str) -> float:
    return metrics.REGISTRY.get_sample_value(name, labels) or 0.0


def test_a_zone_outage_and_a_veto_are_counted() -> None:
    held = RepairBlocked("zp", RepairBlockReason.ZONE_OUTAGE, 2, 3, 0, ("n-0",), "z-a", 50)
    vetoed = Repair("n-1", "zp", DEFAULT_POLICIES[0], NOW - timedelta(hours=1))

    class Result:
        repairs: list[Repair] = []
        repairs_blocked = [held]
        repairs_vetoed = [vetoed]

    zone = _sample("nodeflow_node_repairs_zone_outage_total", nodepool="zp", zone="z-a")
    pool = _sample("nodeflow_node_repairs_blocked_total", nodepool="zp")
    veto = _sample("nodeflow_node_repairs_vetoed_total", nodepool="zp")
    out = PlanPassResult()
    _take_repairs(Result(), {}, set(), out)
    assert out.repairs_blocked == ["zp"]
    assert _sample("nodeflow_node_repairs_zone_outage_total", nodepool="zp", zone="z-a") == zone + 1
    assert _sample("nodeflow_node_repairs_blocked_total", nodepool="zp") == pool  # the 20% valve did not hold
    assert _sample("nodeflow_node_repairs_vetoed_total", nodepool="zp") == veto + 1


def test_a_pool_whose_policy_disables_repair_is_counted_apart() -> None:
    held = RepairBlocked("off", RepairBlockReason.DISABLED, 1, 6, 0, ("n-2",), policy="gpu-repair")

    class Result:
        repairs: list[Repair] = []
        repairs_blocked = [held]
        repairs_vetoed: list[Repair] = []

    disabled = _sample("nodeflow_node_repairs_disabled_total", nodepool="off")
    pool = _sample("nodeflow_node_repairs_blocked_total", nodepool="off")
    out = PlanPassResult()
    _take_repairs(Result(), {}, set(), out)
    assert out.repairs_blocked == ["off"]
    assert _sample("nodeflow_node_repairs_disabled_total", nodepool="off") == disabled + 1
    assert _sample("nodeflow_node_repairs_blocked_total", nodepool="off") == pool  # not the 20% valve
