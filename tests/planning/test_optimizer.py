"""Optimizing consolidation: better moves, never past a safety rule (budgets, PDBs, do-not-disrupt)."""

from __future__ import annotations

import sys
from datetime import UTC, datetime

import pytest

from api import labels as L
from api.snapshot import Snapshot
from bench.clusters import node_objects, node_pool, pdb, pod, random_cluster
from planning.cluster import Cluster
from planning.disruption.commands import PlanResult
from planning.disruption.method import PassContext
from planning.disruption.optimizer import (
    CONSOLIDATION_MODE_ANNOTATION,
    OptimizerSettings,
    SolverMissingError,
    import_cp_model,
    optimizer_method,
    optimizer_settings,
)
from planning.planner.plan import plan
from planning.scheduling.simulation import Scheduler

AT = datetime(2026, 1, 1, 1, 0, tzinfo=UTC)  # an hour after the builders' creation time: nothing expires


def _cluster(budget: str = "10", pool_annotations: dict[str, str] | None = None, extra: list[dict] | None = None,
             node_annotations: dict[str, dict[str, str]] | None = None) -> list[dict]:
    """Six half-empty m5.xlarge nodes (one 1-cpu pod each): consolidating them saves most of the bill."""
    objs: list[dict] = [node_pool(budgets=[{"nodes": budget}], annotations=pool_annotations)]
    for i in range(6):
        name = f"n{i}"
        objs += node_objects(name, "m5.xlarge", zone="us-east-1a",
                             annotations=(node_annotations or {}).get(name))
        objs.append(pod(f"app{i}-0", name, 1, 2, labels={"app": f"app{i}"}))
    return objs + (extra or [])


def _optimized(objs: list[dict]) -> PlanResult:
    # a deterministic work budget: the same moves whatever else the machine runs (CI runs tests in parallel)
    with optimizer_settings(OptimizerSettings(time_limit=20.0, deterministic_time=1.0)):
        return plan(Snapshot.from_objects(objs), AT, until_stable=True, optimize=True)


def test_optimizing_mode_consolidates_and_every_command_saves() -> None:
    result = _optimized(_cluster())
    assert result.commands, "six half-empty nodes must be consolidated"
    assert all(c.method == "MultiNodeConsolidation" and c.reason == "Underutilized" for c in result.commands)
    assert all(c.savings_per_hour > 0 for c in result.commands)
    start = Cluster.from_snapshot(Snapshot.from_objects(_cluster())).cost_per_hour()
    assert result.final.cost_per_hour < start / 2


def test_never_beyond_the_underutilized_budget() -> None:
    result = _optimized(_cluster(budget="1"))
    assert result.commands
    assert all(len(c.nodes) == 1 for c in result.commands)
    result = _optimized(_cluster(budget="0"))
    assert result.commands == []


def test_never_picks_a_do_not_disrupt_node_or_pod() -> None:
    objs = _cluster(node_annotations={"n0": {L.DO_NOT_DISRUPT_ANNOTATION: "true"}})
    pinned = pod("pinned", "n1", 0.5, 1, annotations={L.DO_NOT_DISRUPT_ANNOTATION: "true"})
    result = _optimized([*objs, pinned])
    touched = {n for c in result.commands for n in c.nodes}
    assert result.commands
    assert "n0" not in touched and "n1" not in touched


def test_never_picks_a_pdb_blocked_node_and_can_keep_pdb_headroom() -> None:
    objs = _cluster(extra=[
        pdb("frozen", {"app": "app2"}, 0),  # n2's pod may not be evicted at all
        pod("app9-0", "n3", 0.5, 1, labels={"app": "shared"}),
        pod("app9-1", "n4", 0.5, 1, labels={"app": "shared"}),
        pdb("one-at-a-time", {"app": "shared"}, 1),
    ])
    snap = Snapshot.from_objects(objs)
    with optimizer_settings(OptimizerSettings(time_limit=20.0, deterministic_time=1.0)):
        default = plan(snap, AT, optimize=True)
    assert default.commands and all("n2" not in c.nodes for c in default.commands)
    assert any(b.node == "n2" and "pdb" in b.reason for b in default.blocked)
    # Karpenter semantics: drains wait on the PDB, so one command may hold both "shared" pods' nodes
    assert {"n3", "n4"} <= set(default.commands[0].nodes)
    with optimizer_settings(OptimizerSettings(time_limit=20.0, deterministic_time=1.0, pdb_headroom=True)):
        careful = plan(snap, AT, optimize=True)
    assert careful.commands
    for cmd in careful.commands:
        assert "n2" not in cmd.nodes
        assert not {"n3", "n4"} <= set(cmd.nodes), "one command would evict two pods of a PDB allowing one"


def test_pods_land_within_capacity_and_match_the_command() -> None:
    objs = random_cluster(8, seed=7)
    result = _optimized(objs)
    assert result.commands
    for cmd in result.commands:
        assert all(m.to not in cmd.nodes for m in cmd.pods)
        new = {m.to for m in cmd.pods if m.to.startswith("new-")}
        assert new <= {f"new-{i}" for i in range(len(cmd.replacements))}
    karpenter = plan(Snapshot.from_objects(objs), AT, until_stable=True)
    assert result.final.cost_per_hour <= karpenter.final.cost_per_hour * 1.05


def test_nodepool_annotation_turns_it_on_and_off() -> None:
    def method_for(objs: list[dict]):
        cluster = Cluster.from_snapshot(Snapshot.from_objects(objs))
        return optimizer_method(PassContext(cluster, Scheduler(cluster), AT), settings=OptimizerSettings())

    assert method_for(_cluster()) is None
    on = method_for(_cluster(pool_annotations={CONSOLIDATION_MODE_ANNOTATION: "optimize"}))
    assert on is not None and on.pools == {"default"}
    result = plan(Snapshot.from_objects(_cluster(pool_annotations={CONSOLIDATION_MODE_ANNOTATION: "optimize"})), AT)
    assert result.commands and result.commands[0].method == "MultiNodeConsolidation"


def test_missing_ortools_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ortools.sat.python", None)
    monkeypatch.setitem(sys.modules, "ortools.sat.python.cp_model", None)
    with pytest.raises(SolverMissingError, match=r"nodeflow\[solver\]"):
        import_cp_model()
