"""The chaos audit's count of pods left Pending in the chaos world's own timing, on a hand-driven clock:
a pod the slow scheduler binds in time is not counted, a pod bound late or still pending past the bound is, and a
pod deleted while pending is not, so the chaos run's "0" means no pod waited that long."""

from __future__ import annotations

import pytest
from chaos.chaos_cluster import pending_audit
from chaos.test_chaos import PENDING_BOUND, SCHEDULER_RETRY, TIME_SCALE
from support.sim_objects import node, pod

from simulator.ledger import Ledger
from simulator.resources import BY_KIND
from simulator.scheduler_timing import SchedulerTiming
from simulator.store import Store
from simulator.world import World

PODS, NODES = BY_KIND["Pod"], BY_KIND["Node"]
T0 = 1000.0


def _chaos_world() -> tuple[World, list[float]]:
    """The chaos run's scheduler and ledger bound, without its processes (no jitter, pods start at once)."""
    world = World(Store(), time_scale=TIME_SCALE, scheduler_timing=SchedulerTiming.slow(SCHEDULER_RETRY),
                  ready_jitter=0.0, pod_start_delay=0.0)
    world.ledger.pending_bound_seconds = PENDING_BOUND
    clock = [T0]
    world.clock = lambda: clock[0]
    return world, clock


def _tick(world: World, clock: list[float], at: float) -> None:
    """A pass at `at` and one just after it, when a planned pod's bind (bind_delay) has landed."""
    for t in (at, at + 0.01):
        clock[0] = t
        world.tick()


def _node_of(world: World, name: str) -> str | None:
    return world.store.must_get(PODS, "default", name)["spec"].get("nodeName")


def test_the_audit_counts_pods_bound_late_or_still_pending_and_not_those_bound_in_time_or_deleted() -> None:
    world, clock = _chaos_world()
    retry = SCHEDULER_RETRY * TIME_SCALE  # wall seconds
    world.store.create(NODES, node("small", cpu="1"))
    for name, cpu in (("web", "2"), ("late", "6"), ("stuck", "64"), ("doomed", "64")):
        world.store.create(PODS, pod(name, cpu=cpu))
    _tick(world, clock, T0)  # every pod fails its first attempt
    world.store.create(NODES, node("big", cpu="4"))
    _tick(world, clock, T0 + retry / 2)
    assert _node_of(world, "web") is None  # a node fits it, but the slow scheduler has not retried yet
    _tick(world, clock, T0 + retry)
    assert _node_of(world, "web") == "big"
    assert pending_audit(world.ledger, now=clock[0])["podsPendingPastBound"] == 0

    past = T0 + PENDING_BOUND + 1.0
    clock[0] = past
    world.delete(PODS, "default", "doomed")  # waited past the bound, then deleted: not a pod left Pending
    world.store.create(NODES, node("wide", cpu="8"))  # `late` fits at its next retry, after the bound
    _tick(world, clock, past + retry)
    assert _node_of(world, "late") == "wide"
    audit = pending_audit(world.ledger, now=clock[0])
    assert audit["podsPendingPastBound"] == 2, audit
    waited = PENDING_BOUND + 1.0 + retry + 0.01
    assert sorted(audit["podsPendingPast"]) == [f"default/late {waited:.1f}s",
                                                f"default/stuck {waited:.1f}s (still pending)"]
    assert audit["podPendingLongestSeconds"] == pytest.approx(waited)
    assert audit["pendingBoundSeconds"] == PENDING_BOUND


def test_the_bound_covers_launch_retry_batch_and_outage_and_must_be_set() -> None:
    assert SCHEDULER_RETRY * TIME_SCALE == 10.0  # wall seconds, past the pools' consolidateAfter (0s, Never)
    assert 60.0 < PENDING_BOUND < 137.0  # the trial saw pods Pending for 2 min 17 s
    with pytest.raises(ValueError, match="pending_bound_seconds"):
        pending_audit(Ledger())
