"""The soak's slow-scheduler world and its count of pods left Pending, without the stack: the soak's own
simulator (bench/soak_world.py) on a hand-driven clock, and the report bench/soak.py builds from its ledger. A pod
the slow scheduler binds in time leaves the count at 0; a pod still pending past the bound makes it 1 and fails the
soak, so the soak's "0" means no pod waited that long."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from support.sim_objects import node, pod

from bench.soak import parse_args, render, report
from bench.soak_replicas import LeaderLog
from bench.soak_summary import late_pods
from bench.soak_world import World, WorldOptions
from simulator.resources import BY_KIND
from simulator.scheduler_timing import SchedulerTiming

PODS, NODES = BY_KIND["Pod"], BY_KIND["Node"]
T0 = 1000.0


def test_the_flag_is_wall_seconds_and_the_bound_adds_launch_retry_and_batch() -> None:
    real, slow = WorldOptions(workdir=Path(".")), WorldOptions(workdir=Path("."), scheduler_retry_seconds=30.0)
    assert real.scheduler_timing() == SchedulerTiming()
    assert slow.scheduler_timing() == SchedulerTiming.slow(300.0)  # simulated seconds at time_scale 0.1
    # launch and Ready: 300 s to boot + up to 375 s to Ready (x 0.1), the retry, a batch (11 s), a margin (30 s)
    assert real.pending_bound_seconds() == round(67.5 + 1.0 + 0.01 + 41.0, 1)
    assert slow.pending_bound_seconds() == round(67.5 + 30.0 + 0.01 + 41.0, 1)


def _report(sim: Any, now: float) -> dict[str, Any]:
    """What bench/soak.py reports at the end of a run over this simulator (its safety counts as soak.safety takes
    them from the simulator; the stack's other counts 0)."""
    args = parse_args(["--minutes", "0.1", "--slow-scheduler", "30"])
    safety = {"pdbViolations": 0, "leakedInstances": [], "podsPendingPastBound": late_pods(sim.world.ledger, now)}
    end = {"converged": True, "convergeSeconds": 1.0, "unfinishedWorkflows": 0, "unfinished": [],
           "podsPendingAtEnd": 0, "nodesAtEnd": 2, "safety": safety,
           "workflows": {"maxHistoryEventsByType": {}, "terminationsByReason": {}}}
    extra = {**LeaderLog().figures(), "cloudRetries": 0.0, "replicaStarts": {"a": 1}}
    return report(args, [], SimpleNamespace(counts=Counter()), end, sim.stats(), Path("."), extra)


def test_the_soak_counts_a_pod_left_pending_past_the_bound_and_not_one_bound_in_time(tmp_path: Path) -> None:
    sim = World(WorldOptions(workdir=tmp_path, scheduler_retry_seconds=30.0)).simulator(None)
    world, clock = sim.world, [T0]
    world.clock = lambda: clock[0]
    world.ready_jitter = 0.0
    world.store.create(NODES, node("small", cpu="1"))
    world.store.create(PODS, pod("web", cpu="2"))
    for t in (T0, T0 + 10.0, T0 + 10.02):
        clock[0] = t
        world.tick()
        if t == T0:  # web found no node; one fits 10 s later, and the slow scheduler retries it only at T0 + 30
            world.store.create(NODES, node("big", cpu="4"))
    assert world.store.must_get(PODS, "default", "web")["spec"].get("nodeName") is None
    for t in (T0 + 30.0, T0 + 30.02):
        clock[0] = t
        world.tick()
    assert world.store.must_get(PODS, "default", "web")["spec"]["nodeName"] == "big"
    r = _report(sim, clock[0])
    assert r["passed"] and r["safety"]["podsPendingPastBound"] == 0
    assert r["podPendingLongestSeconds"] == pytest.approx(30.01, abs=0.02)
    assert (r["pendingBoundSeconds"], r["slowSchedulerSeconds"]) == (138.5, 30.0)
    assert f"pending: 0 pods waited unbound past 138.5 s, the longest {r['podPendingLongestSeconds']} s (scheduler: " \
           "slow, retries after 30.0 s)" in render(r)

    world.store.create(PODS, pod("huge", cpu="64"))  # fits nowhere: still pending when the run ends
    clock[0] += 1.0
    world.tick()
    r = _report(sim, clock[0] + 140.0)
    assert r["safety"]["podsPendingPastBound"] == 1 and not r["passed"]
    assert r["problems"] == ["podsPendingPastBound=1"]
    assert r["safetyDetail"]["podsPendingPastBound"] == ["default/huge 141.0s (still pending)"]
