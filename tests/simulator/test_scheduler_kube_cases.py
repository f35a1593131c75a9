"""kube-scheduler's own plugin test cases (tests/planning/data/kube_scheduler_cases.yaml, each naming the kubernetes
test it restates) run against the emulator's filter chain (simulator/scheduling_filters.py): the same cases the
planner's simulation is held to, so the emulator that plays the world agrees with kube-scheduler on each."""

from __future__ import annotations

from typing import Any

import pytest
from support.kube_cases import kube_cases

from simulator.patch import deep_copy
from simulator.resources import BY_KIND
from simulator.scheduler_timing import SchedulerTiming
from simulator.scheduling_filters import feasible_nodes
from simulator.store import Store
from simulator.world import World

CASES = kube_cases()


def test_the_case_file_is_there_and_covers_every_filter_plugin() -> None:
    sources = {c["source"].split("plugins/")[-1].split("/")[0] for c in CASES}
    assert {"podtopologyspread", "interpodaffinity", "nodeports", "noderesources", "nodeaffinity", "volumebinding",
            "volumezone"} <= sources, sources


@pytest.mark.parametrize("case", CASES, ids=[f"{c['source'].split('plugins/')[-1]}::{c['name']}" for c in CASES])
def test_the_emulator_filters_as_kube_scheduler_does(case: dict[str, Any]) -> None:
    got = feasible_nodes(case["pod"], case["nodes"], case.get("existingPods") or (), case.get("pvs") or (),
                         case.get("pvcs") or (), case.get("storageClasses") or (), case.get("namespaces") or ())
    assert sorted(got) == sorted(case["expect"]["feasibleNodes"]), case.get("note", "")


@pytest.mark.parametrize("case", CASES, ids=[f"{c['source'].split('plugins/')[-1]}::{c['name']}" for c in CASES])
def test_the_emulators_scheduler_binds_where_kube_scheduler_may(case: dict[str, Any]) -> None:
    """The same cases through the emulator's Scheduler over its store (the wiring: usage, indexes, volumes)."""
    store = Store()
    world = World(store, scheduler_timing=SchedulerTiming.instant())  # one pass binds: this test reads filters
    objects = [obj for key in ("nodes", "existingPods", "pvs", "pvcs", "storageClasses") for obj in case.get(key) or ()]
    for obj in [*objects, case["pod"]]:
        store.create(BY_KIND[obj["kind"]], deep_copy(obj))
    world.scheduler.schedule()
    ident = case["pod"]["metadata"]
    pod = store.get(BY_KIND["Pod"], ident.get("namespace") or "default", ident["name"])
    assert pod is not None
    where = pod["spec"].get("nodeName")
    feasible = case["expect"]["feasibleNodes"]
    if feasible:
        assert where in feasible, case.get("note", "")
    else:
        assert where is None
        (cond,) = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
        assert cond["reason"] == "Unschedulable" and cond["message"].startswith(f"0/{len(case['nodes'])} nodes")


def _refused_twice(time_scale: float) -> list[str]:
    """A pod that fits nowhere, then a second node it cannot use either: the FailedScheduling Events written."""
    store = Store()
    world = World(store, time_scale=time_scale, scheduler_timing=SchedulerTiming.instant())
    small = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a", "labels": {}}, "spec": {},
             "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "110"},
                        "conditions": [{"type": "Ready", "status": "True"}]}}
    big = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}}
    store.create(BY_KIND["Node"], small)
    store.create(BY_KIND["Pod"], big)
    world.scheduler.schedule()
    store.create(BY_KIND["Node"], {**deep_copy(small), "metadata": {"name": "b", "labels": {}}})
    world.scheduler.schedule()
    return [e["message"] for e in store.list(BY_KIND["Event"]) if e["reason"] == "FailedScheduling"]


def test_a_refused_pods_message_is_refreshed_at_most_every_ten_simulated_seconds() -> None:
    assert [m[:26] for m in _refused_twice(1.0)] == ["0/1 nodes are available: 1"]
    assert [m[:26] for m in _refused_twice(0.0)] == ["0/1 nodes are available: 1", "0/2 nodes are available: 2"]
