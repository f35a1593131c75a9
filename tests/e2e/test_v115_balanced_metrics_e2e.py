"""Karpenter v1.15's approval metrics through the worker (kubernetes-sigs/karpenter#3322; docs/semantics.md §5.10,
§19.1): a live planner pass over a Balanced pool scores the replace it finds, refuses it (a quarter of the pool's
cost saved for 7/9 of its disruption, under 1/2) and counts it as `rejected` in karpenter_consolidation_moves_total
and karpenter_consolidation_score; with the costly pod gone the same move is `approved`, starts, and records
Karpenter's `ConsolidationApproved` Event on the node."""

from __future__ import annotations

from typing import Any

import pytest
from e2e.test_node_repair_e2e import bound_pods, running_on
from support.disruption_stack import disruption_stack, fresh, replica_set, wait_for

from api import labels
from bench.clusters import node_objects, node_pool
from telemetry.metrics import REGISTRY

pytestmark = pytest.mark.e2e
M5 = [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
      {"key": labels.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.xlarge", "m5.2xlarge"]}]
COSTLY = 5 * 2**25  # a priority that makes a pod's eviction cost 6 (1 + 5 * 2^25 / 2^25)


def cluster(priority: int | None) -> list[dict[str, Any]]:
    """a (m5.2xlarge, one 3-cpu `web` pod) could be replaced by an m5.xlarge; x keeps its 6-cpu `big` pod."""
    pool = node_pool("default", requirements=M5, consolidate_after="0s", budgets=[{"nodes": "100%"}])
    pool["spec"]["disruption"]["consolidationPolicy"] = "Balanced"
    objs: list[dict[str, Any]] = [pool]
    objs += node_objects("a", "m5.2xlarge") + node_objects("x", "m5.2xlarge")
    web, big = replica_set("web", 1, "3"), replica_set("big", 1, "6")
    pods = bound_pods(web, ["a"]) + bound_pods(big, ["x"])
    if priority is not None:
        pods[0]["spec"]["priority"] = priority
    return fresh([*objs, web, big, *pods])


def _moves(decision: str) -> float:
    return REGISTRY.get_sample_value("karpenter_consolidation_moves_total",
                                     {"decision": decision, "nodepool": "default", "policy": "Balanced"}) or 0.0


@pytest.mark.parametrize(("priority", "decision", "starts"), [(COSTLY, "rejected", 0), (None, "approved", 1)])
async def test_a_balanced_move_is_counted_by_its_approval(temporal_client, sim_ec2, moto_endpoint,
                                                          priority: int | None, decision: str, starts: int) -> None:
    sim_ec2.load_objects(cluster(priority))
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint) as stack:
        await wait_for(lambda: running_on(stack, "web") == ["a"] and running_on(stack, "big") == ["x"],
                       what="web on a, big on x")
        before = _moves(decision)
        result = await stack.planner_pass()
        assert len(result.started) == starts
        assert _moves(decision) == before + 1
        assert (REGISTRY.get_sample_value("karpenter_consolidation_score_count",
                                          {"decision": decision, "nodepool": "default", "policy": "Balanced"})
                or 0.0) >= 1
        # Karpenter's Event of an approval, on the Node and NodeClaim of a single-node move; none for a rejection
        approvals = [e for e in stack.events() if e["reason"] == "ConsolidationApproved"]
        assert sorted(e["involvedObject"]["kind"] for e in approvals) == (["Node", "NodeClaim"] if starts else [])
        assert all(e["message"].startswith("score ") and ">= threshold 0.50" in e["message"] for e in approvals)
