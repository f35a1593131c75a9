"""The pods-by-node index prepare reads (runtime/cache_reads.py) against a scan of the Pod informer: the same pods
for every node after each watch event and after a relist, and None before the informer has synced."""

from __future__ import annotations

import json
import random
from typing import Any

from runtime.cache_reads import PodsByNode
from runtime.informer import Informer, KindSpec

Obj = dict[str, Any]
NODES = ("n0", "n1", "n2", "")


class _Listed:
    def __init__(self, items: list[Obj]) -> None:
        self.data = json.dumps({"metadata": {"resourceVersion": "1"}, "items": items}).encode()


def _pod(name: str, node: str, rv: int) -> Obj:
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": str(rv)},
            "spec": {"nodeName": node} if node else {}}


def _scan(inf: Informer, node: str) -> list[str]:
    return sorted(p["metadata"]["name"] for p in inf.objects() if (p.get("spec") or {}).get("nodeName") == node)


def test_pods_by_node_agree_with_a_scan_after_every_event_and_relist() -> None:
    rng = random.Random(3)
    items = [_pod(f"p{i}", rng.choice(NODES), 1) for i in range(8)]
    inf = Informer(KindSpec("Pod", "v1", lambda **_: _Listed(items)))
    index = PodsByNode(inf)
    assert index.pods("n0") is None  # not listed yet
    inf._list()
    inf.watched = True
    for step in range(300):
        obj = _pod(f"p{rng.randrange(12)}", rng.choice(NODES), step + 2)
        inf._apply({"type": "DELETED" if rng.random() < 0.2 else "MODIFIED", "object": obj})
        for node in NODES[:3]:
            assert sorted(p["metadata"]["name"] for p in index.pods(node) or ()) == _scan(inf, node), step
        if step % 71 == 0:
            inf.spec = KindSpec("Pod", "v1", lambda objs=inf.objects(), **_: _Listed(objs))
            inf._list()
            assert sorted(p["metadata"]["name"] for p in index.pods("n1") or ()) == _scan(inf, "n1")
