"""The emulator's scheduling pass in slices: the world ticks on the API server's own loop, so a pass given a wall-time
budget stops when it is spent and the pods it did not reach wait, still active and in the same order, for the next."""

from __future__ import annotations

from typing import Any

from simulator.resources import BY_KIND
from simulator.scheduler_timing import SchedulerTiming
from simulator.store import Store
from simulator.world import World

PODS = BY_KIND["Pod"]


def _world(priorities: dict[str, int]) -> World:
    store = Store()
    world = World(store, scheduler_timing=SchedulerTiming.instant())
    store.create(BY_KIND["Node"], {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a", "labels": {}},
                                   "spec": {}, "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"},
                                                          "conditions": [{"type": "Ready", "status": "True"}]}})
    for name, priority in priorities.items():
        store.create(PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
                            "spec": {"priority": priority,
                                     "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}})
    return world


def _bound(world: World) -> set[str]:
    pods: list[dict[str, Any]] = world.store.list(PODS)
    return {p["metadata"]["name"] for p in pods if p["spec"].get("nodeName")}


def test_a_spent_budget_ends_the_pass_after_one_pod_and_the_rest_follow_in_priority_order() -> None:
    world = _world({"low": 0, "high": 100, "mid": 50})
    order = []
    for _ in range(3):
        before = _bound(world)
        world.scheduler.schedule(budget=0.0)  # spent at once: every pass still binds one pod
        (new,) = _bound(world) - before
        order.append(new)
        assert world.scheduler.queue.counts()["active"] == 3 - len(order)
    assert order == ["high", "mid", "low"]


def test_without_a_budget_one_pass_reaches_every_pod() -> None:
    world = _world({f"p{i}": 0 for i in range(20)})
    world.scheduler.schedule()
    assert len(_bound(world)) == 20 and world.scheduler.queue.counts()["active"] == 0


def test_a_world_tick_passes_its_budget_to_the_scheduler() -> None:
    world = _world({f"p{i}": 0 for i in range(5)})
    world.tick(schedule_budget=0.0)
    assert len(_bound(world)) == 1
    world.tick()
    assert len(_bound(world)) == 5
