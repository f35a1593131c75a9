"""The savings threshold end to end (dev server + simulator + the real worker): a consolidation move that saves
less than the DisruptionPolicy asks is not started and `nodeflow plan --kubeconfig` lists it under skippedMoves
with the figures; once the threshold is lowered the next pass starts it."""

from __future__ import annotations

import json

import pytest
from e2e.termination_helpers import QUICK_WORKER
from kubernetes import client as k8s
from support.disruption_stack import disruption_stack, fresh

from bench.clusters import node_objects, node_pool, pod
from contracts.disruption import DisruptionPhase
from starter.cli import run
from telemetry.metrics import REGISTRY

pytestmark = pytest.mark.e2e
ON_DEMAND = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]


def _policy(threshold: str) -> dict:
    return {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": "worth-it"},
            "spec": {"nodePools": ["default"], "consolidation": {"minSavingsPerHour": threshold}}}


def _skipped() -> float:
    return REGISTRY.get_sample_value("nodeflow_consolidation_skipped_total", {"nodepool": "default"}) or 0.0


async def test_a_move_below_the_threshold_is_skipped_live(temporal_client, sim_ec2, moto_endpoint, capsys) -> None:
    objs = [node_pool("default", requirements=ON_DEMAND), *node_objects("small", "m5.large"),
            *node_objects("big", "m5.2xlarge"), pod("x-1", "small", 0.5, 0.5), pod("y-1", "big", 2, 4),
            _policy("5")]
    sim_ec2.load_objects(fresh(objs))
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=QUICK_WORKER) as stack:
        before = _skipped()
        result = await stack.planner_pass()
        assert result.started == [], result
        assert _skipped() > before

        assert run(["plan", "--kubeconfig", sim_ec2.kubeconfig_path, "-o", "json"]) == 0
        plan = json.loads(capsys.readouterr().out)
        assert plan["commands"] == []
        assert plan["skippedMoves"], plan
        for move in plan["skippedMoves"]:
            assert move["reason"].startswith("savings $") and move["reason"].endswith("below threshold $5.00/h")

        k8s.CustomObjectsApi(stack.api).patch_cluster_custom_object(
            "nodeflow.dev", "v1alpha1", "disruptionpolicies", "worth-it",
            {"spec": {"consolidation": {"minSavingsPerHour": "0.01"}}})
        result = await stack.planner_pass()
        assert len(result.started) == 1
        outcome = await stack.outcome(result.started[0], timeout=60)
        assert outcome.outcome == DisruptionPhase.SUCCEEDED, outcome.message
        assert len({n["metadata"]["name"] for n in stack.nodes()} & {"small", "big"}) < 2
