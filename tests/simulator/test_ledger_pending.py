"""The ledger's count of pods left Pending longer than a bound: the cases that must count and the
ones that must not, on the ledger alone and through the world's scheduler on a hand-driven clock."""

from __future__ import annotations

from support.sim_objects import node, pod

from simulator.ledger import Ledger, PendingWait
from simulator.patch import deep_copy
from simulator.resources import BY_KIND
from simulator.scheduler_timing import SchedulerTiming
from simulator.store import Store
from simulator.world import World

PODS, NODES = BY_KIND["Pod"], BY_KIND["Node"]


def test_a_pod_bound_after_the_bound_counts_and_one_bound_in_time_does_not() -> None:
    ledger = Ledger()
    ledger.pod_pending("u1", "default/slow", 0.0)
    ledger.pod_pending("u2", "default/quick", 0.0)
    ledger.pod_pending("u1", "default/slow", 3.0)  # a later update of a waiting pod does not restart its clock
    ledger.pod_bound("u2", 4.0)
    ledger.pod_bound("u1", 12.5)
    assert ledger.pods_pending_past(10.0, now=100.0) == [PendingWait("default/slow", 12.5, True)]
    assert [w.pod for w in ledger.pods_pending_past(3.0, now=100.0)] == ["default/slow", "default/quick"]
    assert ledger.pods_pending_past(12.5, now=100.0) == []


def test_a_pod_still_pending_past_the_bound_counts_and_a_deleted_one_does_not() -> None:
    ledger = Ledger()
    ledger.pod_pending("u1", "default/stuck", 0.0)
    ledger.pod_pending("u2", "default/deleted", 0.0)
    ledger.pod_dropped("u2")
    ledger.pod_bound("u2", 50.0)  # nothing left to bind: not counted either
    assert ledger.pods_pending_past(10.0, now=9.0) == []
    assert ledger.pods_pending_past(10.0, now=11.0) == [PendingWait("default/stuck", 11.0, False)]
    assert ledger.longest_wait(now=11.0) == 11.0


def test_only_the_longest_waits_are_kept_and_the_summary_counts_past_the_callers_bound() -> None:
    ledger = Ledger(keep=2)
    for i, wait in enumerate((1.0, 30.0, 2.0, 40.0)):
        ledger.pod_pending(str(i), f"default/p{i}", 0.0)
        ledger.pod_bound(str(i), wait)
    assert [w.seconds for w in ledger.pods_pending_past(0.0, now=50.0)] == [40.0, 30.0]
    assert ledger.summary(now=50.0)["podsPendingPastBound"] is None
    ledger.pending_bound_seconds = 35.0
    summary = ledger.summary(now=50.0)
    assert (summary["podsPendingPastBound"], summary["podPendingLongestSeconds"]) == (1, 40.0)


def _slow_world() -> tuple[World, list[float]]:
    world = World(Store(), time_scale=1.0, scheduler_timing=SchedulerTiming.slow(30.0), ready_jitter=0.0,
                  pod_start_delay=0.0)
    clock = [900.0]
    world.clock = lambda: clock[0]
    return world, clock


def test_through_the_world_a_slow_schedulers_wait_counts_and_daemonset_gated_and_deleted_pods_do_not() -> None:
    world, clock = _slow_world()
    store = world.store
    store.create(NODES, node("small", cpu="1"))
    daemon = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "ds-1", "controller": True}
    for obj in (pod("web", cpu="2"), pod("agent-x", cpu="2", owner=daemon), pod("doomed", cpu="2"),
                pod("gated", cpu="2", schedulingGates=[{"name": "example.com/quota"}])):
        store.create(PODS, obj)
    world.tick()
    store.create(NODES, node("big", cpu="16"))
    clock[0] = 910.0
    world.delete(PODS, "default", "doomed")
    world.tick()
    clock[0] = 925.0
    ungated = deep_copy(store.must_get(PODS, "default", "gated"))
    del ungated["spec"]["schedulingGates"]
    store.replace(PODS, ungated)  # its clock starts now, not at its creation
    world.tick()
    assert [(w.pod, w.bound) for w in world.ledger.pods_pending_past(20.0, now=925.0)] == [("default/web", False)]
    for t in (930.0, 930.1):  # web is retried 30 s after its first attempt, and bound 0.1 s later
        clock[0] = t
        world.tick()
    assert store.must_get(PODS, "default", "web")["spec"]["nodeName"] == "big"
    assert store.must_get(PODS, "default", "gated")["spec"]["nodeName"] == "big"  # never attempted while gated
    past = world.ledger.pods_pending_past(20.0, now=1000.0)
    assert [(w.pod, round(w.seconds, 3), w.bound) for w in past] == [("default/web", 30.1, True)]
    world.ledger.pending_bound_seconds = 20.0
    assert world.stats()["podsPendingPastBound"] == 1


def test_an_evicted_pods_replacement_waits_from_its_own_creation() -> None:
    world, clock = _slow_world()
    store = world.store
    store.create(NODES, node("a", cpu="4"))
    store.create(PODS, pod("old", "a", cpu="2"))
    world.tick()
    clock[0] = 1000.0
    world.delete(PODS, "default", "old", grace=0)
    store.create(PODS, pod("new", cpu="2"))  # what its ReplicaSet would create
    world.tick()
    clock[0] = 1000.1
    world.tick()
    assert store.must_get(PODS, "default", "new")["spec"]["nodeName"] == "a"
    past = world.ledger.pods_pending_past(0.05, now=2000.0)
    assert [(w.pod, round(w.seconds, 3), w.bound) for w in past] == [("default/new", 0.1, True)]
    assert world.ledger.pods_pending_past(0.2, now=2000.0) == []
