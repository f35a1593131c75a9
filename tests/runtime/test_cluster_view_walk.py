"""The view's walk over the cache (runtime/cluster_view.py `read`) without servers: after 300 random adds,
replacements and deletions, read between them so loads and parses are carried from read to read, each read returns
what a fresh view's first read of the same cache returns, reuses exactly the entries of objects it saw last time,
and counts as re-parsed exactly the pods that are new to it; a pass planned on the carried read (its memo of what
the Nodes alone decide, planning/identity_memo.py, included) plans what a pass on a fresh parse plans."""

from __future__ import annotations

import gc
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import runtime.cluster_view as cluster_view
from api import labels as L
from api.snapshot import Snapshot
from planning.cluster import Cluster, Parsed, parse_claim, parse_pod
from planning.planner.plan import plan
from runtime.cluster_cache import KINDS
from runtime.cluster_trim import trim
from runtime.cluster_view import ClusterView
from simulator.generate import generate_cluster

Obj = dict[str, Any]
AT = datetime(2026, 11, 29, 12, tzinfo=UTC)


REAL_FREEZE = cluster_view._freeze_for_gc


@pytest.fixture(autouse=True)
def freezes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The reads' collector freeze, counted instead of run: these walks make ~60 first reads each, and a full
    collection of a test process that has run much of the suite took ~0.24 s a read on a 2-core machine (two
    thirds of the walk). test_the_freeze_moves_what_is_alive_into_the_permanent_generation runs it for real."""
    calls: list[int] = []
    monkeypatch.setattr(cluster_view, "_freeze_for_gc", lambda: calls.append(1))
    yield calls


class FakeInformer:
    def __init__(self) -> None:
        self.items: dict[tuple[str, str], Obj] = {}

    def objects(self) -> list[Obj]:
        return list(self.items.values())


class FakeCache:
    """The informers' side of ClusterCache that the view reads: objects replaced, never modified."""

    def __init__(self, objs: list[Obj]) -> None:
        self.informers = {k: FakeInformer() for k in KINDS}
        for o in objs:
            if o["kind"] in self.informers:
                self.put(trim(o["kind"], o))

    def put(self, obj: Obj) -> None:
        meta = obj["metadata"]
        self.informers[obj["kind"]].items[(meta.get("namespace") or "", meta["name"])] = obj


def _relabeled(obj: Obj, i: int, name: str | None = None) -> Obj:
    meta = dict(obj["metadata"])
    meta["labels"] = {**(meta.get("labels") or {}), "test.nodeflow.dev/change": str(i)}
    if name is not None:
        meta["name"], meta["uid"] = name, f"uid-{name}"
    return {**obj, "metadata": meta}


def _node_changed(node: Obj, rng: random.Random) -> Obj:
    """A Node as a pass decides on it differently: cordoned, NotReady, or Ready again."""
    if rng.random() < 0.5:
        return {**node, "spec": {**(node.get("spec") or {}), "unschedulable": rng.random() < 0.5}}
    status = dict(node.get("status") or {})
    status["conditions"] = [{**c, "status": rng.choice(["True", "False"]), "lastTransitionTime": "2026-11-29T00:00:00Z"}
                            if c.get("type") == "Ready" else c for c in status.get("conditions") or ()]
    return {**node, "status": status}


def _change(rng: random.Random, cache: FakeCache, i: int) -> str:
    kind = rng.choice(["Pod"] * 6 + ["Node", "Node", "NodeClaim", "PodDisruptionBudget", "NodePool"])
    inf = cache.informers[kind]
    key = rng.choice(list(inf.items))
    op = rng.choice(["replace", "replace", "add", "delete"])
    if op == "replace" and kind == "Node":
        cache.put(_node_changed(inf.items[key], rng))
    elif op == "replace":
        cache.put(_relabeled(inf.items[key], i))
    elif op == "add":
        cache.put(_relabeled(inf.items[key], i, name=f"{key[1]}-copy-{i}"))
    elif len(inf.items) > 1:
        del inf.items[key]
    return kind


def _same(a: Any, b: Any) -> None:
    objs_a, snap_a, parsed_a = a
    objs_b, snap_b, parsed_b = b
    assert [id(o) for o in objs_a] == [id(o) for o in objs_b]
    for field in ("node_pools", "node_claims", "node_classes", "nodes", "pods", "pdbs", "others"):
        assert getattr(snap_a, field) == getattr(snap_b, field), field
    assert parsed_a.pods == parsed_b.pods
    assert parsed_a.claims == parsed_b.claims


def _entries(view: ClusterView) -> dict[int, Any]:
    """The load and parse the view's last read kept, by the id of the very object it saw (indexed once per read:
    a scan per object made this walk quadratic)."""
    return {id(e[0]): e for entries in view._kept.values() for e in entries}


def test_carried_reads_equal_a_fresh_read_after_random_changes() -> None:
    rng = random.Random(3)
    cache = FakeCache(generate_cluster(12, 6, seed=4))
    view = ClusterView(cache)  # type: ignore[arg-type]
    _, _, first = view.read()
    assert view.reparsed == len(first.pods) > 0
    for i in range(300):
        _change(rng, cache, i)
        if i % 5 == 0:
            now = [o for inf in cache.informers.values() for o in inf.objects()]
            kept = _entries(view)
            before = {id(o): (o, kept[id(o)]) for o in now if id(o) in kept and kept[id(o)][0] is o}
            got = view.read()
            _same(got, ClusterView(cache).read())  # type: ignore[arg-type]
            new_pods = sum(1 for o in cache.informers["Pod"].objects() if id(o) not in before)
            assert view.reparsed == new_pods
            kept = _entries(view)
            for o, parts in before.values():  # an object seen last read keeps its very load and parse
                assert kept.get(id(o)) is parts


def test_a_pass_on_carried_reads_plans_what_a_fresh_parse_plans() -> None:
    rng = random.Random(8)
    cache = FakeCache(generate_cluster(12, 6, seed=9))
    view = ClusterView(cache)  # type: ignore[arg-type]
    changed_nodes = 0
    for i in range(120):
        changed_nodes += _change(rng, cache, i) == "Node"
        if i % 4 == 0:
            _, snap, parsed = view.read()
            carried = plan(snap, AT, parsed=parsed)
            assert parsed.memo is view.memo
            fresh = Parsed([parse_pod(p) for p in snap.pods], [parse_claim(c) for c in snap.node_claims])
            assert carried.model_dump_json() == plan(snap, AT, parsed=fresh).model_dump_json()
    assert changed_nodes > 10


def _with_pdb_status(objs: list[Obj]) -> list[Obj]:
    """The generated PDBs with the status the simulator's disruption controller writes (a PDB without one is judged
    from the pods each pass, so nothing about it would be carried)."""
    cluster = Cluster.from_snapshot(Snapshot.from_objects(objs))
    allowed = {p.key: p.disruptions_allowed for pdbs in cluster.pdbs_by_ns.values() for p in pdbs}
    return [{**o, "status": {"disruptionsAllowed": allowed[f"{o['metadata']['namespace']}/{o['metadata']['name']}"]}}
            if o["kind"] == "PodDisruptionBudget" else o for o in objs]


def _pod_or_pdb_changed(rng: random.Random, cache: FakeCache, i: int) -> None:
    """A pod's do-not-disrupt flipped, a pod moved to another node, or a PDB's allowed disruptions changed: each as
    a new object, as the cache holds changes."""
    op = rng.choice(["dnd", "move", "pdb"])
    kind = "PodDisruptionBudget" if op == "pdb" else "Pod"
    inf = cache.informers[kind]
    key = rng.choice(list(inf.items))
    old = inf.items[key]
    if op == "pdb":
        cache.put({**old, "status": {"disruptionsAllowed": rng.choice([0, 1, 2])}})
    elif op == "move":
        node = rng.choice(list(cache.informers["Node"].items.values()))["metadata"]["name"]
        cache.put({**old, "spec": {**old["spec"], "nodeName": node}})
    else:
        meta = dict(old["metadata"])
        notes = dict(meta.get("annotations") or {})
        if notes.pop(L.DO_NOT_DISRUPT_ANNOTATION, None) is None:
            notes[L.DO_NOT_DISRUPT_ANNOTATION] = rng.choice(["true", "30m"])
        cache.put({**old, "metadata": {**meta, "annotations": notes}})


def test_a_pass_on_carried_reads_plans_what_a_fresh_parse_plans_as_pods_and_pdbs_change() -> None:
    """The same with PDB statuses (so pod-level blocks and PDB answers are carried) while pods flip do-not-disrupt,
    move between nodes, and PDBs' allowed disruptions change."""
    rng = random.Random(21)
    cache = FakeCache(_with_pdb_status(generate_cluster(12, 6, seed=22)))
    view = ClusterView(cache)  # type: ignore[arg-type]
    carried = 0
    for i in range(80):
        for _ in range(rng.randint(1, 3)):
            _pod_or_pdb_changed(rng, cache, i)
        _, snap, parsed = view.read()
        at = AT + timedelta(minutes=i)
        got = plan(snap, at, parsed=parsed).model_dump_json()
        carried += view.memo.nodes.made < len(snap.nodes)
        fresh = Parsed([parse_pod(p) for p in snap.pods], [parse_claim(c) for c in snap.node_claims])
        assert got == plan(snap, at, parsed=fresh).model_dump_json(), i
    assert carried > 40


def test_a_small_first_read_leaves_the_collector_alone(freezes: list[int]) -> None:
    cache = FakeCache(generate_cluster(4, 3, seed=5))
    view = ClusterView(cache)  # type: ignore[arg-type]
    _, snap, _ = view.read()
    assert view.reparsed == len(snap.pods) > 0  # every pod loaded, as in a first read
    assert freezes == []  # fewer than FREEZE_MIN_PODS pods: a full collection would cost more than it saves


def test_a_first_read_freezes_and_a_carried_read_does_not(freezes: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    cache = FakeCache(generate_cluster(4, 3, seed=5))
    monkeypatch.setattr(cluster_view, "FREEZE_MIN_PODS", 1)  # this cluster is small; the rule is the same
    view = ClusterView(cache)  # type: ignore[arg-type]
    view.read()
    assert freezes == [1]  # most of the cluster loaded: what is alive now goes to the permanent generation
    _change(random.Random(1), cache, 0)
    view.read()
    assert freezes == [1]  # a carried read loads a few objects and leaves the collector alone


def test_the_freeze_moves_what_is_alive_into_the_permanent_generation() -> None:
    alive = [{"kept": i} for i in range(1000)]
    try:
        REAL_FREEZE()
        assert gc.get_freeze_count() >= len(alive)
    finally:
        gc.unfreeze()  # the rest of this test process collects as before
