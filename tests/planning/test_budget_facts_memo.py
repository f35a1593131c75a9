"""The budgets' node counts from facts kept per Node and NodeClaim object (planning/planner/plan.py `budget_rows`
with the worker's memo, api/budgets.py `node_facts`/`claim_facts`): over random passes in which Nodes turn NotReady,
get deleted, tainted, lose their initialized label, and NodeClaims change conditions, links and deletion, each as a
new object as the cache holds them, the rows equal those counted afresh from the objects."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

from api import labels as L
from api.budgets import ALL_REASONS
from api.nodeclaim import NodeClaim
from api.nodepool import NodePool
from planning.cluster import Cluster
from planning.identity_memo import IdentityMemo
from planning.planner.plan import budget_rows

AT = datetime(2026, 11, 29, 12, tzinfo=UTC)
POOLS = ["a", "b"]


def _pool(name: str) -> NodePool:
    return NodePool.model_validate({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
                                    "spec": {"template": {"spec": {"requirements": []}},
                                             "disruption": {"budgets": [{"nodes": "40%"}]}}})


def _node(rng: random.Random, i: int) -> dict[str, Any]:
    labels = {L.NODEPOOL_LABEL: rng.choice(POOLS)} if rng.random() < 0.8 else {}
    if rng.random() < 0.85:
        labels[L.INITIALIZED_LABEL] = "true"
    meta: dict[str, Any] = {"name": f"n{i}", "labels": labels}
    if rng.random() < 0.1:
        meta["deletionTimestamp"] = "2026-11-29T11:00:00Z"
    taints = [{"key": L.DISRUPTED_TAINT_KEY, "effect": "NoSchedule"}] if rng.random() < 0.1 else []
    ready = rng.choice(["True"] * 5 + ["False", "Unknown"])
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta,
            "spec": {"providerID": f"aws:///us-east-1a/i-{i}", "taints": taints},
            "status": {"conditions": [{"type": "Ready", "status": ready}]}}


def _claim(rng: random.Random, i: int) -> NodeClaim:
    meta: dict[str, Any] = {"name": f"nc-{i}", "labels": {L.NODEPOOL_LABEL: rng.choice(POOLS)}}
    if rng.random() < 0.1:
        meta["deletionTimestamp"] = "2026-11-29T11:00:00Z"
    conditions = [{"type": t, "status": rng.choice(["True", "False"])}
                  for t in ("Initialized", "InstanceTerminating") if rng.random() < 0.6]
    status: dict[str, Any] = {"conditions": conditions}
    if rng.random() < 0.7:
        status["nodeName"] = f"n{i}"
    else:  # linked by provider id, now and then to another node's
        status["providerID"] = f"aws:///us-east-1a/i-{i if rng.random() < 0.8 else rng.randrange(40)}"
    return NodeClaim.model_validate({"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": meta,
                                     "spec": {"requirements": []}, "status": status})


class _Snap:
    def __init__(self, nodes: list[dict[str, Any]], claims: list[NodeClaim]) -> None:
        self.node_pools, self.nodes, self.node_claims = [_pool(p) for p in POOLS], nodes, claims


def test_counts_from_kept_facts_equal_a_fresh_count_over_random_passes() -> None:
    rng = random.Random(5)
    nodes = [_node(rng, i) for i in range(40)]
    claims = [_claim(rng, i) for i in range(40) if rng.random() < 0.9]
    memo = IdentityMemo()
    empty = Cluster([], {}, [], [], [], None)  # type: ignore[arg-type]  # no in-flight nodes to take off
    disrupting = 0
    budget_rows(_Snap(nodes, claims), AT, empty, set(), ALL_REASONS, memo)
    for _ in range(40):
        for _ in range(rng.randint(0, 5)):
            i = rng.randrange(len(nodes))
            nodes[i] = _node(rng, i)
        for _ in range(rng.randint(0, 3)):
            j = rng.randrange(len(claims))
            claims[j] = _claim(rng, int(claims[j].metadata.name.split("-")[1]))
        memo.next_pass()
        snap = _Snap(list(nodes), list(claims))
        kept = budget_rows(snap, AT, empty, set(), ALL_REASONS, memo)
        assert kept == budget_rows(snap, AT, empty, set(), ALL_REASONS)
        assert memo.made <= 2 * (5 + 3)  # only the changed objects were read again
        disrupting += sum(r["disrupting"] for r in kept)
    assert disrupting > 40
