"""nodeflow.dev/do-not-consolidate and nodeflow.dev/disruption-cost end to end (dev server + simulator + the real
worker, docs/semantics.md §15.9): a pod's annotation keeps its node from being consolidated (an Unconsolidatable
Event, `blocked` in `nodeflow plan --kubeconfig`); its disruption-cost weight makes the move not worth its
evictions under the policy's perPodDisruptionCost; with the weight at 0 the next pass consolidates the node."""

from __future__ import annotations

import json

import pytest
from e2e.termination_helpers import QUICK_WORKER
from kubernetes import client as k8s
from support.disruption_stack import disruption_stack, fresh

from api.policy_controls import DISRUPTION_COST_ANNOTATION, DO_NOT_CONSOLIDATE_ANNOTATION
from bench.clusters import node_objects, node_pool, pod
from contracts.disruption import DisruptionPhase
from starter.cli import run

pytestmark = pytest.mark.e2e
ON_DEMAND = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]
# $0.20/h per evicted pod: more than any move of `big` (6 vCPU of 8 used) saves, so `small` is the only candidate
POLICY = {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": "weigh"},
          "spec": {"nodePools": ["default"], "consolidation": {"perPodDisruptionCost": "0.2"}}}


def _annotate(stack, annotations: dict[str, str | None]) -> None:
    k8s.CoreV1Api(stack.api).patch_namespaced_pod("x-1", "default", {"metadata": {"annotations": annotations}})


def _plan(sim, capsys) -> dict:
    assert run(["plan", "--kubeconfig", sim.kubeconfig_path, "-o", "json"]) == 0
    return json.loads(capsys.readouterr().out)


async def test_do_not_consolidate_then_a_heavy_pod_then_a_free_one(temporal_client, sim_ec2, moto_endpoint,
                                                                   capsys) -> None:
    pinned = {DO_NOT_CONSOLIDATE_ANNOTATION: "true", DISRUPTION_COST_ANNOTATION: "50"}
    objs = [node_pool("default", requirements=ON_DEMAND), *node_objects("small", "m5.large"),
            *node_objects("big", "m5.2xlarge"), pod("x-1", "small", 0.5, 0.5, annotations=pinned),
            pod("y-1", "big", 6, 20), POLICY]
    sim_ec2.load_objects(fresh(objs))
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=QUICK_WORKER) as stack:
        result = await stack.planner_pass()
        assert result.started == [], result
        reason = f'pod has "{DO_NOT_CONSOLIDATE_ANNOTATION}" annotation (Pod=default/x-1)'
        events = {(e["involvedObject"]["name"], e["reason"], e["message"]) for e in stack.events()}
        assert ("small", "Unconsolidatable", reason[:1].upper() + reason[1:]) in events
        assert {"node": "small", "reason": reason} in _plan(sim_ec2, capsys)["blocked"]

        _annotate(stack, {DO_NOT_CONSOLIDATE_ANNOTATION: None})  # weight 50 stays: 50 x $0.20 > the savings
        result = await stack.planner_pass()
        assert result.started == [], result
        moves = _plan(sim_ec2, capsys)["skippedMoves"]
        assert any(m["nodes"] == ["small"] and "(1 pod(s) weighing 50 x $0.20)" in m["reason"] for m in moves), moves

        _annotate(stack, {DISRUPTION_COST_ANNOTATION: "0"})
        result = await stack.planner_pass()
        assert len(result.started) == 1, result
        outcome = await stack.outcome(result.started[0], timeout=60)
        assert outcome.outcome == DisruptionPhase.SUCCEEDED, outcome.message
        assert "small" not in {n["metadata"]["name"] for n in stack.nodes()}
