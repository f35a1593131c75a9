"""The emulated kube-scheduler's timing: backoff, the unschedulable queue and its requeue by cluster
events and by the flush, the trial's retry-after scheduler, the bind delay, and the instant timing tests ask for.

The world runs on a hand-driven clock (time_scale 1: simulated seconds are the clock's seconds), so every
assertion names an exact simulated time and each test takes milliseconds."""

from __future__ import annotations

from support.sim_objects import node, pod

from simulator.patch import deep_copy
from simulator.resources import BY_KIND
from simulator.scheduler_queues import SchedulingQueue, Where
from simulator.scheduler_timing import SchedulerTiming
from simulator.store import Store
from simulator.world import World

PODS, NODES = BY_KIND["Pod"], BY_KIND["Node"]
KEY = ("default", "web")


class Clock:
    def __init__(self) -> None:
        self.t = 900.0  # a multiple of the 30 s flush period

    def __call__(self) -> float:
        return self.t


def _world(timing: SchedulerTiming) -> tuple[World, Clock]:
    world = World(Store(), time_scale=1.0, scheduler_timing=timing, ready_jitter=0.0, pod_start_delay=0.0)
    clock = Clock()
    world.clock = clock
    return world, clock


def _at(world: World, clock: Clock, t: float) -> None:
    """Advance to 900 + t simulated seconds and run one world tick."""
    clock.t = 900.0 + t
    world.tick()


def _bound_to(world: World, name: str = "web") -> str | None:
    got = world.store.get(PODS, "default", name)
    return ((got or {}).get("spec") or {}).get("nodeName")


def _touch(world: World, name: str, **labels: str) -> None:
    """A node labels change: a cluster event that requeues unschedulable pods."""
    new = deep_copy(world.store.must_get(NODES, "", name))
    new["metadata"]["labels"].update(labels)
    world.store.replace(NODES, new)


def _big_pod(world: World, cpu: str = "8") -> None:
    world.store.create(PODS, pod("web", cpu=cpu))


# ---- the queue alone -----------------------------------------------------------------------------------------

def test_the_backoff_doubles_from_one_second_to_ten() -> None:
    timing = SchedulerTiming()
    assert [timing.backoff(n) for n in range(1, 8)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0]
    queue = SchedulingQueue(timing)
    queue.add(KEY)
    now, retries = 0.0, []
    assert queue.pop_active(now) == [KEY]
    for _ in range(6):
        queue.failed(KEY, now)
        queue.cluster_event()  # every parked pod moves at once: only its backoff holds it
        step = 0.0
        while not queue.pop_active(now + step):
            step = round(step + 0.5, 1)
        retries.append(step)
        now += step
    assert retries == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_a_parked_pod_waits_for_an_event_and_a_gated_one_for_its_spec() -> None:
    queue = SchedulingQueue(SchedulerTiming())
    queue.add(KEY)
    queue.pop_active(0.0)
    queue.failed(KEY, 0.0)
    assert queue.pop_active(100.0) == [] and queue.where[KEY][0] is Where.UNSCHEDULABLE
    queue.cluster_event()
    assert queue.pop_active(100.0) == [KEY]
    queue.gated(KEY)
    queue.cluster_event()
    assert queue.pop_active(500.0) == []  # neither events nor the flush release a gated pod
    queue.updated(KEY, 500.0)
    assert queue.pop_active(500.0) == [KEY]


# ---- the world -----------------------------------------------------------------------------------------------

def test_an_unschedulable_pod_is_retried_when_a_node_is_added_and_bound_after_the_bind_delay() -> None:
    world, clock = _world(SchedulerTiming(bind_delay=0.2))
    world.store.create(NODES, node("small", cpu="2"))
    _big_pod(world)
    _at(world, clock, 0.0)
    assert world.scheduler.queue.attempts[KEY] == 1
    _at(world, clock, 20.0)  # long past its backoff, but nothing happened in the cluster
    assert world.scheduler.queue.attempts[KEY] == 1 and _bound_to(world) is None
    world.store.create(NODES, node("big", cpu="16"))
    _at(world, clock, 20.0)
    assert world.scheduler.queue.where[KEY][0] is Where.BINDING and _bound_to(world) is None
    assert world.scheduler.usage["big"]["cpu"] > 0  # assumed on its node while the bind is in flight
    _at(world, clock, 20.1)
    assert _bound_to(world) is None
    _at(world, clock, 20.2)
    assert _bound_to(world) == "big" and KEY not in world.scheduler.queue.where


def test_an_event_inside_the_backoff_retries_the_pod_when_the_backoff_ends() -> None:
    world, clock = _world(SchedulerTiming(bind_delay=0.0))
    world.store.create(NODES, node("small", cpu="2"))
    _big_pod(world)
    _at(world, clock, 0.0)
    world.store.create(NODES, node("big", cpu="16"))
    _at(world, clock, 0.5)
    assert _bound_to(world) is None and world.scheduler.queue.where[KEY][0] is Where.BACKOFF
    _at(world, clock, 0.99)
    assert _bound_to(world) is None
    _at(world, clock, 1.0)
    assert _bound_to(world) == "big"


def test_the_slow_scheduler_retries_only_after_its_interval() -> None:
    world, clock = _world(SchedulerTiming.slow(30.0))
    world.store.create(NODES, node("small", cpu="2"))
    _big_pod(world)
    _at(world, clock, 0.0)
    world.store.create(NODES, node("big", cpu="16"))
    for t in (0.1, 1.0, 10.0, 29.9):
        _at(world, clock, t)
        assert _bound_to(world) is None, t
        assert world.scheduler.queue.attempts[KEY] == 1
    _at(world, clock, 30.0)
    _at(world, clock, 30.05)
    assert _bound_to(world) is None  # the default bind delay, 0.1 s
    _at(world, clock, 30.1)
    assert _bound_to(world) == "big"


def test_without_events_the_flush_moves_a_parked_pod_on_its_next_tick_after_the_interval() -> None:
    world, clock = _world(SchedulerTiming(requeue_on_events=False, bind_delay=0.0))
    world.store.create(NODES, node("small", cpu="2"))
    _at(world, clock, 0.0)
    _big_pod(world)
    _at(world, clock, 10.0)  # parked at 910: 300 s later is 1210, and the flush runs on multiples of 30 s
    world.store.create(NODES, node("big", cpu="16"))
    for t in (11.0, 200.0, 310.0, 329.9):
        _at(world, clock, t)
        assert _bound_to(world) is None, t
    _at(world, clock, 330.0)
    assert _bound_to(world) == "big"


def test_an_assumed_pod_holds_its_capacity_until_bound() -> None:
    world, clock = _world(SchedulerTiming(bind_delay=0.5))
    world.store.create(NODES, node("a", cpu="4"))
    world.store.create(NODES, node("b", cpu="4"))
    world.store.create(PODS, pod("web", cpu="3"))
    world.store.create(PODS, pod("api", cpu="3"))
    _at(world, clock, 0.0)
    _at(world, clock, 0.49)
    assert _bound_to(world, "web") is None and _bound_to(world, "api") is None
    _at(world, clock, 0.5)
    assert {_bound_to(world, "web"), _bound_to(world, "api")} == {"a", "b"}  # never both on one node


def test_a_bind_to_a_node_that_went_meanwhile_fails_and_the_pod_goes_elsewhere() -> None:
    world, clock = _world(SchedulerTiming(bind_delay=0.5))
    world.store.create(NODES, node("a", cpu="16"))
    _big_pod(world)
    _at(world, clock, 0.0)
    world.store.create(NODES, node("b", cpu="4"))
    world.store.remove(NODES, "", "a")
    _at(world, clock, 0.2)
    assert world.scheduler.usage.get("a") is None
    _at(world, clock, 2.0)  # the failed bind counted as an attempt: retried after 1 s, and 8 cpu fit nowhere now
    assert _bound_to(world) is None and world.scheduler.queue.attempts[KEY] == 2
    world.store.create(NODES, node("c", cpu="16"))
    _at(world, clock, 3.9)
    assert world.scheduler.queue.where[KEY][0] is Where.BACKOFF  # 2 s after its second attempt
    _at(world, clock, 4.0)
    _at(world, clock, 4.5)
    assert _bound_to(world) == "c"


def test_the_instant_timing_binds_in_the_same_tick() -> None:
    world, clock = _world(SchedulerTiming.instant())
    world.store.create(NODES, node("small", cpu="2"))
    _big_pod(world)
    _at(world, clock, 0.0)
    world.store.create(NODES, node("big", cpu="16"))
    _at(world, clock, 0.0)
    assert _bound_to(world) == "big"


def test_failed_scheduling_message_and_event_are_kept() -> None:
    world, clock = _world(SchedulerTiming())
    world.store.create(NODES, node("small", cpu="2"))
    _big_pod(world)
    _at(world, clock, 0.0)
    got = world.store.must_get(PODS, "default", "web")
    (cond,) = [c for c in got["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    assert cond["message"].startswith("0/1 nodes are available: 1 Insufficient cpu")
    assert [e["reason"] for e in world.store.list(BY_KIND["Event"])] == ["FailedScheduling"]
