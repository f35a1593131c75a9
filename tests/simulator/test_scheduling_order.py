"""The order the emulated control plane handles pods in, as a real one does: kube-scheduler attempts pods of one
priority in the order they were (last) added to its queue, and a ReplicaSet whose pod was deleted first creates its
replacement first (a controller's work queue is FIFO). Hash order decided both before, differently in every process,
so the pods a drain evicted largest first reached the scheduler in any order."""

from __future__ import annotations

from typing import Any

from simulator.resources import BY_KIND
from simulator.scheduler_queues import SchedulingQueue, Where
from simulator.scheduler_timing import SchedulerTiming
from simulator.store import Store
from simulator.world import World

PODS = BY_KIND["Pod"]
NAMES = ("m", "c", "x", "a", "q", "f", "z", "b", "k", "d")


def _pod(name: str, cpu: str, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}


def _world(node_cpu: str) -> World:
    store = Store()
    world = World(store, scheduler_timing=SchedulerTiming.instant())
    store.create(BY_KIND["Node"], {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "labels": {}},
                                   "spec": {}, "status": {"allocatable": {"cpu": node_cpu, "memory": "8Gi",
                                                                          "pods": "110"},
                                                          "conditions": [{"type": "Ready", "status": "True"}]}})
    return world


def test_the_queue_hands_out_pods_in_arrival_order_and_a_readded_pod_last() -> None:
    queue = SchedulingQueue(SchedulerTiming.instant())
    for name in NAMES:
        queue.add(("default", name))
    assert [k[1] for k in queue.pop_active(0.0)] == list(NAMES)
    for name in ("x", "a", "q"):
        queue.add(("default", name))
    queue.gated(("default", "x"))
    queue.updated(("default", "x"), 1.0)  # its gates removed: it enters the queue again, now
    assert [k[1] for k in queue.pop_active(1.0)] == ["a", "q", "x"]
    assert queue.counts()[Where.ACTIVE.value] == 0 and not queue.active


def test_pods_created_in_one_second_are_attempted_in_the_order_they_arrived() -> None:
    """Ten pods each needing the whole node, all created within the same second: the first one gets it."""
    world = _world("2")
    for name in NAMES:
        world.store.create(PODS, _pod(name, "1500m"))
    world.scheduler.schedule()
    bound = [p["metadata"]["name"] for p in world.store.list(PODS) if p["spec"].get("nodeName")]
    assert bound == [NAMES[0]]


def test_replicasets_replace_evicted_pods_in_the_order_they_were_evicted() -> None:
    world = _world("64")
    store = world.store
    owners = {}
    for name in NAMES:
        rs = store.create(BY_KIND["ReplicaSet"], {
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}})
        owners[name] = rs["metadata"]["uid"]
    world.tick()
    first = {p["metadata"]["name"] for p in store.list(PODS)}
    by_owner = {p["metadata"]["ownerReferences"][0]["uid"]: p["metadata"]["name"] for p in store.list(PODS)}
    evicted = list(reversed(NAMES))
    for name in evicted:
        pod = by_owner[owners[name]]
        world.evict("default", pod, {"metadata": {"name": pod, "namespace": "default"}})
    world.tick()
    created = [p for p in store.list(PODS) if p["metadata"]["name"] not in first]
    assert len(created) == len(NAMES)
    created.sort(key=lambda p: int(p["metadata"]["resourceVersion"]))
    uid_to_rs = {uid: name for name, uid in owners.items()}
    assert [uid_to_rs[p["metadata"]["ownerReferences"][0]["uid"]] for p in created] == evicted
