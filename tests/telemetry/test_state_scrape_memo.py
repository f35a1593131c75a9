"""The state gauges' scrape memo (runtime/karpenter_state.py ScrapeMemo) gives what a fresh scrape gives, over
random changes of the kind the watch cache makes: pods and nodes replaced (phase, readiness, node, labels,
requests), added and removed. Each round compares the memo's scrape with one that derives everything again."""

from __future__ import annotations

import random
from typing import Any

from bench.termination_cluster import PodSpec, cluster_objects
from runtime.cluster_trim import trim
from runtime.karpenter_state import ScrapeMemo, _split, node_families, pod_state_family

NOW = 1_800_000_000.0


def _samples(fams: list[Any]) -> list[tuple[str, tuple[tuple[str, str], ...], float]]:
    return [(s.name, tuple(sorted(s.labels.items())), s.value) for f in fams for s in f.samples]


def _scrape(objs: list[dict[str, Any]], memo: ScrapeMemo | None) -> list[Any]:
    _pools, view, pods = _split(objs)
    fams = [*node_families(view, NOW, memo), pod_state_family(pods, view, memo)]
    if memo is not None:
        memo.next_scrape()
    return _samples(fams)


def _change(rng: random.Random, objs: list[dict[str, Any]], nodes: list[str]) -> None:
    i = rng.randrange(len(objs))
    o = objs[i]
    if o["kind"] == "Pod":
        what = rng.choice(("phase", "ready", "node", "requests", "remove"))
        if what == "remove":
            objs.pop(i)
            return
        new = {**o, "spec": dict(o["spec"]), "status": dict(o.get("status") or {})}
        if what == "phase":
            new["status"]["phase"] = rng.choice(("Running", "Pending", "Succeeded"))
        elif what == "ready":
            new["status"]["conditions"] = [{"type": "Ready", "status": rng.choice(("True", "False"))}]
        elif what == "node":
            new["spec"]["nodeName"] = rng.choice(nodes)
        else:
            new["spec"]["containers"] = [{"name": "c", "resources": {"requests": {"cpu": f"{rng.randint(1, 9)}00m"},
                                                                      "limits": {"memory": "1Gi"}}}]
        objs[i] = new
    elif o["kind"] == "Node":
        labels = {**o["metadata"].get("labels", {}), "topology.kubernetes.io/zone": rng.choice(("a", "b", "c"))}
        objs[i] = {**o, "metadata": {**o["metadata"], "labels": labels}}
    elif rng.random() < 0.3:  # a new pod
        objs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"new-{len(objs)}", "namespace": "x"},
                     "spec": {"nodeName": rng.choice(nodes), "containers": []}, "status": {"phase": "Running"}})


def test_scrapes_with_the_memo_equal_fresh_ones_over_random_changes() -> None:
    rng = random.Random(5)
    nodes = [f"n{i}" for i in range(8)]
    objs = [trim(o["kind"], o) for o in cluster_objects(
        {n: f"i-{i:017x}" for i, n in enumerate(nodes)}, [PodSpec(f"app{i}", n, count=3) for i, n in enumerate(nodes)],
        registered=True)]
    memo = ScrapeMemo()
    reused = 0
    for _ in range(60):
        for _ in range(rng.randint(0, 4)):
            _change(rng, objs, nodes)
        before = len(memo.pod_labels.last)
        assert _scrape(objs, memo) == _scrape(objs, None)
        reused += before > 0
    assert reused > 50  # the memo was in use, not empty every round
