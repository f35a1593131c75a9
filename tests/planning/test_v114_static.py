"""Static NodePools while their NodePool is being deleted (kubernetes-sigs/karpenter#2840, v1.10.0;
docs/semantics.md §14.2): static provisioning and deprovisioning leave the pool's NodeClaims alone, the NodePool's
deletion removes them."""

from __future__ import annotations

from typing import Any

from planning_factory import AT, node_and_claim, nodepool, snapshot

from planning.planner.plan import plan


def _static(replicas: int, deleting: bool) -> dict[str, Any]:
    pool = nodepool("static")
    pool["spec"]["replicas"] = replicas
    if deleting:
        pool["metadata"]["deletionTimestamp"] = "2026-11-22T19:59:00Z"
    return pool


def _nodes(pool: dict[str, Any], *names: str) -> list[dict[str, Any]]:
    return [o for n in names for o in node_and_claim(n, pool="static", pool_obj=pool)]


def test_a_deleting_static_pool_launches_nothing() -> None:
    live = plan(snapshot(_static(3, False)), AT).static_node_pools
    assert [p.launch for p in live] == [3]
    assert plan(snapshot(_static(3, True)), AT).static_node_pools == []


def test_a_deleting_static_pool_removes_nothing() -> None:
    pool = _static(1, False)
    (live,) = plan(snapshot(pool, _nodes(pool, "s-0", "s-1", "s-2")), AT).static_node_pools
    assert len(live.remove) == 2
    pool = _static(1, True)
    assert plan(snapshot(pool, _nodes(pool, "s-0", "s-1", "s-2")), AT).static_node_pools == []
