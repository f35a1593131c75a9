"""The pending-pod intake's candidate index (runtime/pending_index.py) against the scan it replaces: after every
watch event and after a relist, the index names the same candidates as scanning every pod of the informers."""

from __future__ import annotations

import json
import random
from typing import Any

from api import labels as L
from planning.cluster import going_nodes
from runtime.informer import Informer, KindSpec
from runtime.pending_index import PendingIndex
from runtime.pending_pods import scanned

Obj = dict[str, Any]


class _Listed:
    def __init__(self, items: list[Obj]) -> None:
        self.data = json.dumps({"metadata": {"resourceVersion": "1"}, "items": items}).encode()


def _informer(kind: str, items: list[Obj]) -> Informer:
    inf = Informer(KindSpec(kind, "v1", lambda **_: _Listed(items)))
    inf._list()
    inf.watched = True  # as after the watch opened: synced
    return inf


def _pod(name: str, node: str = "", unschedulable: bool = False, message: str = "", **meta: Any) -> Obj:
    status: Obj = {"phase": "Pending" if not node else "Running"}
    if unschedulable:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                 "message": message}]
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", **meta},
            "spec": {"nodeName": node} if node else {}, "status": status}


def _node(name: str, deleting: bool = False, tainted: bool = False) -> Obj:
    meta: Obj = {"name": name}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-29T00:00:00Z"
    taints = [{"key": L.DISRUPTED_TAINT_KEY, "effect": "NoSchedule"}] if tainted else []
    return {"metadata": meta, "spec": {"taints": taints}}


def _claim(name: str, node: str, deleting: bool = False, owned: bool = False) -> Obj:
    meta: Obj = {"name": name, "annotations": {L.TERMINATION_WORKFLOW_ANNOTATION: "t"} if owned else {}}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-29T00:00:00Z"
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": meta,
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}},
            "status": {"nodeName": node}}


def _expected(infs: dict[str, Informer]) -> list[str]:
    going = going_nodes(infs["Node"].objects(), infs["NodeClaim"].objects())
    return sorted(r.uid for r in scanned(infs["Pod"].objects(), going))


def _got(index: PendingIndex) -> list[str]:
    return sorted(r.uid for r in index.candidates() or ())


def _notes(infs: dict[str, Informer]) -> dict[str, str]:
    """The scheduling notes the scan gives (runtime/pending_pods.py scanned)."""
    notes: dict[str, str] = {}
    scanned(infs["Pod"].objects(), set(), notes)
    return notes


def _world() -> dict[str, Informer]:
    pods = [_pod("p0", "n0"), _pod("p1", "n1"), _pod("u0", unschedulable=True),
            _pod("ds", "n1", ownerReferences=[{"kind": "DaemonSet", "name": "d"}])]
    return {"Pod": _informer("Pod", pods), "Node": _informer("Node", [_node("n0"), _node("n1", deleting=True)]),
            "NodeClaim": _informer("NodeClaim", [_claim("c0", "n0"), _claim("c1", "n1")])}


def test_the_index_names_unschedulable_pods_and_the_movable_pods_of_going_nodes() -> None:
    infs = _world()
    index = PendingIndex(infs)
    index.attach()
    assert _got(index) == ["uid-p1", "uid-u0"] == _expected(infs)  # not the DaemonSet pod, not n0's pod
    assert index.going() == {"n1"}


def test_a_cluster_without_nodes_still_names_its_unschedulable_pods() -> None:
    infs = {"Pod": _informer("Pod", [_pod("u0", unschedulable=True)]), "Node": _informer("Node", []),
            "NodeClaim": _informer("NodeClaim", [])}
    assert _got(PendingIndex(infs)) == ["uid-u0"]


def test_it_is_none_until_the_informers_have_synced() -> None:
    infs = _world()
    infs["Pod"].watched = False
    assert PendingIndex(infs).candidates() is None


def test_after_every_event_and_a_relist_it_agrees_with_the_scan() -> None:
    rng = random.Random(7)
    infs = _world()
    index = PendingIndex(infs)
    index.attach()
    assert _got(index) == _expected(infs)
    for step in range(400):
        kind = rng.choice(["Pod", "Pod", "Pod", "Node", "NodeClaim"])
        n = rng.randrange(4)
        if kind == "Pod":
            name = f"p{rng.randrange(12)}"
            obj = _pod(name, rng.choice(["", "n0", "n1", "n2", "n3"]), unschedulable=rng.random() < 0.3,
                       message=rng.choice(["", "0/4 nodes are available", "0/5 nodes are available"]),
                       **({"deletionTimestamp": "2026-11-29T00:00:00Z"} if rng.random() < 0.1 else {}))
        elif kind == "Node":
            obj = _node(f"n{n}", deleting=rng.random() < 0.3, tainted=rng.random() < 0.3)
        else:
            # a NodeClaim names at most its one Node (before registration none)
            obj = _claim(f"c{n}", rng.choice(["", f"n{n}"]), deleting=rng.random() < 0.3, owned=rng.random() < 0.5)
        obj["metadata"]["resourceVersion"] = str(step + 2)
        infs[kind]._apply({"type": "DELETED" if rng.random() < 0.15 else "MODIFIED", "object": obj})
        assert _got(index) == _expected(infs), step
        assert index.notes() == _notes(infs), step  # kube-scheduler's messages, which re-batch a pod (pending_pods)
        if step % 97 == 0:  # a relist: the listener hears (kind, None, None) and the index reloads the kind
            infs[kind].spec = KindSpec(kind, "v1", lambda objs=infs[kind].objects(), **_: _Listed(objs))
            infs[kind]._list()
            assert _got(index) == _expected(infs), step
            assert index.notes() == _notes(infs), step


def _ready(node: Obj, ready: bool) -> Obj:
    node["status"] = {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    return node


def test_it_counts_the_nodes_that_turn_ready() -> None:
    """New room kube-scheduler fills: the intake plans a pod again when its cluster gained some (pending_pods)."""
    infs = _world()
    index = PendingIndex(infs)
    index.attach()
    assert index.candidates() is not None and index.ready_nodes() == 0
    events = [("ADDED", _ready(_node("n5"), False), 0), ("MODIFIED", _ready(_node("n5"), True), 1),
              ("MODIFIED", _ready(_node("n5", tainted=True), True), 1),  # Ready already: no new room
              ("MODIFIED", _ready(_node("n5"), False), 1), ("MODIFIED", _ready(_node("n5"), True), 2),
              ("ADDED", _ready(_node("n6"), True), 3), ("DELETED", _ready(_node("n6"), True), 3)]
    for step, (kind, obj, count) in enumerate(events):
        obj["metadata"]["resourceVersion"] = str(step + 2)
        infs["Node"]._apply({"type": kind, "object": obj})
        assert index.ready_nodes() == count, step
    infs["Node"]._list()  # a relist may hide a transition: it counts one
    assert index.ready_nodes() == 4
