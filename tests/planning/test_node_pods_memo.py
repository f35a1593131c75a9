"""What a node's pods decide, carried between passes (planning/node_pods_memo.py, used by
planning/disruption/candidates.py `pod_block` and `node_pods`, and planning/scheduling/pod_context.py for the pods
whose anti-affinity others must respect): over random passes, with PodInfos and PDB objects
carried as the worker's cache carries them and the time moving on, every node's pod-level block and pod values equal
a fresh cluster's, computed without any memo. Between passes pods are added, removed and replaced (moving nodes,
flipping do-not-disrupt between absent, "true" and durations), and PDBs are changed, added, removed or left without
status (their allowed disruptions then come from every pod they select)."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from planning_factory import AT, node_and_claim, nodepool, pdb, pod, snapshot

from api import labels as L
from planning.cluster import Cluster, PodInfo, parse_pod
from planning.disruption.candidates import GRACEFUL, build_candidates, node_pods, pod_block
from planning.identity_memo import IdentityMemo
from planning.node_pods_memo import NodePodsMemo, same_objects
from planning.policies.pod_annotations import DO_NOT_CONSOLIDATE_ANNOTATION
from planning.scheduling.pod_context import MoreChecks

NODES = [f"n{i}" for i in range(10)]
APPS = ["web", "api", "db", "cache"]
NAMESPACES = ["default", "other", "third"]


def _pod(rng: random.Random, name: str) -> dict[str, Any]:
    app = rng.choice(APPS)
    labels = {"app": app, **({"tier": rng.choice(["a", "b"])} if rng.random() < 0.4 else {})}
    annotations: dict[str, str] = {}
    if rng.random() < 0.15:
        annotations[L.DO_NOT_DISRUPT_ANNOTATION] = rng.choice(["true", "true", "30m", "2h", "bogus"])
    if rng.random() < 0.05:
        annotations[DO_NOT_CONSOLIDATE_ANNOTATION] = "true"
    if rng.random() < 0.2:
        annotations[L.POD_DELETION_COST_ANNOTATION] = str(rng.randint(-1000, 1000))
    tolerations = [{"key": L.DISRUPTED_TAINT_KEY, "operator": "Exists"}] if rng.random() < 0.05 else None
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": rng.choice([L.HOSTNAME_LABEL, L.ZONE_LABEL])}
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}} \
        if rng.random() < 0.15 else None
    raw = pod(name, rng.choice(NODES), ns=rng.choice(NAMESPACES), labels=labels, annotations=annotations,
              tolerations=tolerations, affinity=anti,
              owner=rng.choice(["ReplicaSet"] * 4 + ["Node", "DaemonSet", "StatefulSet"]),
              phase=rng.choice(["Running"] * 8 + ["Succeeded"]), start=AT - timedelta(minutes=rng.randint(0, 90)))
    if rng.random() < 0.15:
        raw["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    return raw


def _pdb(rng: random.Random, name: str) -> dict[str, Any]:
    match = {"app": rng.choice(APPS), **({"tier": rng.choice(["a", "b"])} if rng.random() < 0.3 else {})}
    raw = pdb(name, match, rng.choice([0, 0, 1, 2]), ns=rng.choice(NAMESPACES))
    if rng.random() < 0.3:
        raw["spec"]["unhealthyPodEvictionPolicy"] = "AlwaysAllow"
    if rng.random() < 0.1:
        del raw["status"]  # judged from the pods it selects, on every node
    return raw


def _change(rng: random.Random, pods: list[dict[str, Any]], pdbs: list[dict[str, Any]], i: int) -> None:
    for _ in range(rng.randint(0, 6)):
        op = rng.choice(["replace", "replace", "add", "remove", "dnd"])
        j = rng.randrange(len(pods))
        if op == "replace":
            pods[j] = _pod(rng, pods[j]["metadata"]["name"])
        elif op == "add":
            pods.append(_pod(rng, f"p-{i}-{j}"))
        elif op == "remove" and len(pods) > 20:
            pods.pop(j)
        elif op == "dnd":  # the same pod with its do-not-disrupt flipped, as a new object
            meta = dict(pods[j]["metadata"])
            notes = dict(meta.get("annotations") or {})
            if notes.pop(L.DO_NOT_DISRUPT_ANNOTATION, None) is None:
                notes[L.DO_NOT_DISRUPT_ANNOTATION] = rng.choice(["true", "45m"])
            pods[j] = {**pods[j], "metadata": {**meta, "annotations": notes}}
    if rng.random() < 0.4:
        op, j = rng.choice(["status", "add", "remove"]), rng.randrange(len(pdbs))
        if op == "status":  # the controller's new status: a new object, as the cache holds it
            pdbs[j] = {**pdbs[j], "status": {"disruptionsAllowed": rng.choice([0, 1])}}
        elif op == "add":
            pdbs.append(_pdb(rng, f"pdb-{i}"))
        elif len(pdbs) > 1:
            pdbs.pop(j)


def _values(node: Any) -> tuple[Any, ...]:
    v = node_pods(node)
    return ([p.key for p in v.reschedulable], v.eviction_sum, v.reschedule_cost, v.pinned,
            [p.key for p in v.dnd_valued])


def test_carried_pod_values_equal_a_fresh_computation_over_random_passes() -> None:
    rng = random.Random(11)
    pods = [_pod(rng, f"p{i}") for i in range(160)]
    pdbs = [_pdb(rng, f"pdb{i}") for i in range(8)]
    nodes = [node_and_claim(n) for n in NODES]
    memo = IdentityMemo()
    carried: dict[int, tuple[dict[str, Any], PodInfo]] = {}  # raw identity -> its PodInfo, as the cache view keeps
    asked = made = blocked = anti = 0
    for i in range(60):
        _change(rng, pods, pdbs, i)
        at = AT + timedelta(minutes=i)  # durations run out as the passes go on
        carried = {id(r): e if (e := carried.get(id(r))) is not None and e[0] is r else (r, parse_pod(r))
                   for r in pods}
        snap = snapshot(nodepool(), *nodes, *pods, *pdbs)
        memo.next_pass()
        cluster = Cluster.from_parts(snap, [carried[id(r)][1] for r in pods], memo=memo)
        fresh = Cluster.from_parts(snap, [parse_pod(r) for r in pods])
        assert fresh.pods_memo is None and cluster.pods_memo is memo.nodes
        for node, plain in zip(cluster.nodes, fresh.nodes, strict=True):
            got = pod_block(cluster, node, at)
            assert got == pod_block(fresh, plain, at), (i, node.name)
            assert _values(node) == _values(plain), (i, node.name)
            blocked += got is not None
        holders = [(dict(labels), p.key) for labels, p in MoreChecks(cluster).holders]
        assert holders == [(dict(labels), p.key) for labels, p in MoreChecks(fresh).holders]
        anti += len(holders)
        got_set = build_candidates(cluster, at, set(), GRACEFUL)
        plain_set = build_candidates(fresh, at, set(), GRACEFUL)
        assert [(c.name, c.reschedule_cost, c.disruption_cost) for c in got_set.candidates] == \
            [(c.name, c.reschedule_cost, c.disruption_cost) for c in plain_set.candidates]
        assert [(r.node.name, r.message) for r in got_set.rejected] == [(r.node.name, r.message)
                                                                         for r in plain_set.rejected]
        asked += 3 * len(NODES)
        made += memo.nodes.made
    assert blocked > 50 and anti > 100
    assert 0 < made < asked // 2  # most answers were carried, and the changes made some derive again


def test_a_changed_pdb_derives_its_namespace_again_and_only_it() -> None:
    memo = NodePodsMemo()
    a, b = pdb("a", {"app": "web"}, 1), pdb("b", {"app": "web"}, 1, ns="other")
    first = memo.pdb_tokens([a, b])
    pods = [object()]
    memo.keep("block", "n1", pods, ["default"], first, "blocked")
    memo.keep("block", "n2", pods, ["other"], first, None)
    memo.next_pass()
    second = memo.pdb_tokens([a, {**b, "status": {"disruptionsAllowed": 0}}])
    assert second["default"] is first["default"] and second["other"] is not first["other"]
    assert memo.found("block", "n1", pods, second) == (True, "blocked")
    assert memo.found("block", "n2", pods, second) == (False, None)
    assert memo.found("block", "n1", [object()], second) == (False, None)  # other pods
    assert memo.found("block", "n1", pods, memo.pdb_tokens([b])) == (False, None)  # its namespace lost its PDB
    statusless = {**a, "status": {}}
    assert memo.pdb_tokens([statusless])["default"] is not memo.pdb_tokens([statusless])["default"]
    assert same_objects(pods, list(pods)) and not same_objects(pods, [*pods, pods[0]])
