"""pod_block keeps what a pod's own fields decide on its PodInfo and the PDB answer per label set for a pass
(planning/disruption/candidates.py): after random pods, PDBs and changes between passes, with PodInfos carried from
pass to pass as the worker's cache carries them, it answers exactly what a plain walk over every pod answers."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from planning_factory import AT, node_and_claim, nodepool, pdb, pod, snapshot

from api import labels as L
from planning.cluster import Cluster, PodInfo, parse_pod
from planning.disruption.candidates import _pdb_block, do_not_disrupt_active, pod_block
from planning.selectors import tolerates

NODES = [f"n{i}" for i in range(8)]
APPS = ["web", "api", "db", "cache"]


def _reference(cluster: Cluster, pods: list[PodInfo]) -> str | None:
    """pod_block as a plain walk: no cache on the pod, none on the cluster."""
    found: str | None = None
    for p in pods:
        if not p.active:
            continue
        if do_not_disrupt_active(p, AT):
            return f'pod has "{L.DO_NOT_DISRUPT_ANNOTATION}" annotation (Pod={p.key})'
        if found is None and not p.is_mirror and not tolerates(p.tolerations, L.DISRUPTED_TAINT):
            found = _pdb_block(cluster, p)
    return found


def _random_pod(rng: random.Random, i: int) -> dict[str, Any]:
    app = rng.choice(APPS)
    labels = {"app": app, **({"tier": rng.choice(["a", "b"])} if rng.random() < 0.5 else {})}
    if rng.random() < 0.5:  # a label no PDB reads, unique to the pod (as the bench's churn writes one)
        labels["churn"] = str(rng.random())
    annotations = {}
    if rng.random() < 0.08:
        annotations[L.DO_NOT_DISRUPT_ANNOTATION] = rng.choice(["true", "1h", "1s", "bogus"])
    tolerations = [{"key": L.DISRUPTED_TAINT_KEY, "operator": "Exists"}] if rng.random() < 0.1 else None
    raw = pod(f"{app}-{i}", rng.choice(NODES), ns=rng.choice(["default", "other"]), labels=labels,
              annotations=annotations, tolerations=tolerations, owner=rng.choice(["ReplicaSet", "Node", "DaemonSet"]),
              phase=rng.choice(["Running"] * 8 + ["Succeeded"]), start=AT - timedelta(minutes=rng.randint(0, 120)))
    if rng.random() < 0.2:
        raw["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    return raw


def _random_pdbs(rng: random.Random) -> list[dict[str, Any]]:
    out = []
    for j in range(rng.randint(0, 6)):
        match = {"app": rng.choice(APPS), **({"tier": rng.choice(["a", "b"])} if rng.random() < 0.3 else {})}
        p = pdb(f"pdb-{j}", match, rng.choice([0, 0, 1, 2]), ns=rng.choice(["default", "other"]))
        if rng.random() < 0.3:
            p["spec"]["unhealthyPodEvictionPolicy"] = "AlwaysAllow"
        if rng.random() < 0.3:
            p["spec"]["selector"]["matchExpressions"] = [
                {"key": "tier", "operator": rng.choice(["Exists", "DoesNotExist"])}]
        out.append(p)
    return out


def test_cached_pod_block_answers_what_a_plain_walk_answers_over_random_passes() -> None:
    rng = random.Random(7)
    raws = [_random_pod(rng, i) for i in range(120)]
    carried: dict[str, PodInfo] = {}  # raw identity's stand-in: the pod's name, replaced when the pod changes
    blocked = 0
    for _ in range(40):
        for i in rng.sample(range(len(raws)), 12):  # some pods change between passes, as churn does
            carried.pop(raws[i]["metadata"]["name"], None)
            raws[i] = _random_pod(rng, i)
        infos = [carried.setdefault(r["metadata"]["name"], parse_pod(r)) for r in raws]
        snap = snapshot(nodepool(), *[node_and_claim(n) for n in NODES], *_random_pdbs(rng))
        cluster = Cluster.from_parts(snap, infos)
        fresh = Cluster.from_parts(snap, [parse_pod(r) for r in raws])
        for node, plain in zip(cluster.nodes, fresh.nodes, strict=True):
            got = pod_block(cluster, node, AT)
            assert got == _reference(fresh, plain.pods)
            blocked += got is not None
    assert blocked > 20  # the random passes did block nodes, by PDB and by do-not-disrupt
