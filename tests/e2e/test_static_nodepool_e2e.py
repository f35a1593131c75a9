"""Static NodePools end to end (docs/semantics.md §14): dev server + simulator (wired to moto) + the real worker,
planner passes driven one by one.

A pool with `replicas: 3` and no node reaches 3 nodes through one ProvisioningWorkflow (a pass while it runs launches
nothing more); a template change replaces them one at a time under budget 1 (StaticDrift: never more than one
disruption at once, never fewer than 3 nodes); scaled to 1, it goes down to 1 (terminations, not budgeted).
"""

from __future__ import annotations

import asyncio
import uuid
from itertools import pairwise
from typing import Any

import pytest
from support.disruption_stack import Stack, disruption_stack, record_history, wait_for

from api import labels
from api.nodepool import NodePool
from bench.clusters import node_pool
from contracts.disruption import DisruptionPhase, PlannerInput, PlannerResult
from telemetry.metrics import REGISTRY
from workflows.disruption import DisruptionWorkflow
from workflows.planner import PlannerWorkflow
from workflows.provisioning import ProvisioningWorkflow

pytestmark = pytest.mark.e2e
REQUIREMENTS = [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
                {"key": labels.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large"]}]
QUICK_DRAIN = {"min_drain_seconds": 0.5}  # Karpenter's 5 s MinDrainTime (semantics §9.5), shortened: 5 terminations


def _pool(name: str) -> dict[str, Any]:
    pool = node_pool(name, requirements=REQUIREMENTS, budgets=[{"nodes": "1"}])
    pool["metadata"]["uid"] = f"uid-{name}"
    pool["spec"]["replicas"] = 3
    pool["spec"]["limits"] = {"nodes": 4}  # room for one replacement beside the three
    return pool


def _custom(stack: Stack) -> Any:
    from kubernetes import client as k8s

    return k8s.CustomObjectsApi(stack.api)


def _patch_pool(stack: Stack, name: str, body: dict[str, Any]) -> None:
    _custom(stack).patch_cluster_custom_object("karpenter.sh", "v1", "nodepools", name, body)


def _template_hash(stack: Stack, name: str) -> str:
    obj = _custom(stack).get_cluster_custom_object("karpenter.sh", "v1", "nodepools", name)
    return NodePool.model_validate(obj).template_hash()


def _live(stack: Stack) -> list[dict[str, Any]]:
    """The pool's Nodes that are Ready and not being deleted."""
    return [n for n in stack.nodes() if not n["metadata"].get("deletionTimestamp")
            and any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions") or [])]


def _claim_hashes(stack: Stack) -> list[str]:
    return sorted((c["metadata"].get("annotations") or {}).get(labels.TEMPLATE_HASH_ANNOTATION, "")
                  for c in stack.node_claims() if not c["metadata"].get("deletionTimestamp"))


async def test_a_static_pool_holds_its_replicas_rolls_one_node_at_a_time_and_scales_down(
        temporal_client, sim_ec2, moto_endpoint) -> None:
    name = f"static-{uuid.uuid4().hex[:6]}"
    sim_ec2.load_objects([_pool(name)])
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=QUICK_DRAIN) as stack:
        # scale-up: one ProvisioningWorkflow for the pool; a second pass while it runs launches nothing
        first = await _pass(stack, "static_scale_up")
        assert first.static_provisioning == [f"provision-static-{name}-uid-{name}"]
        again = await _pass(stack)
        assert again.static_provisioning == []
        await wait_for(lambda: len(_live(stack)) == 3, timeout=30, what="3 Ready nodes")
        scale_up = stack.client.get_workflow_handle_for(ProvisioningWorkflow.run, first.static_provisioning[0])
        assert len((await scale_up.result()).ready) == 3
        await record_history(scale_up, "ProvisioningWorkflow", "static_scale_up")
        steady = await _pass(stack)
        assert (steady.static_provisioning, steady.static_terminations, steady.started) == ([], [], [])
        assert len(stack.node_claims()) == 3  # never launched twice

        await _roll_template(stack, name)

        # scale-down to 1: two terminations in one pass (not budgeted), then one node
        _patch_pool(stack, name, {"spec": {"replicas": 1}})
        down = await _pass(stack)
        assert len(down.static_terminations) == 2 and down.started == []
        await wait_for(lambda: len(stack.nodes()) == 1 and len(stack.node_claims()) == 1, timeout=30,
                       what="the pool down to 1 node")
        assert (await _pass(stack)).static_terminations == []


async def _pass(stack: Stack, scenario: str | None = None) -> PlannerResult:
    """A planner pass; with `scenario` its history is kept (RECORD_HISTORIES=1) for tests/test_replay.py. Not
    Stack.planner_pass: that one re-records PlannerWorkflow__starts_disruption whenever a disruption starts."""
    handle = await stack.client.start_workflow(PlannerWorkflow.run, PlannerInput(settings=stack.settings),
                                               id=f"planner-{uuid.uuid4()}", task_queue=stack.task_queue)
    result = await handle.result()
    if scenario:
        await record_history(handle, "PlannerWorkflow", scenario)
    return result


async def _roll_template(stack: Stack, name: str) -> None:
    """Change the template; passes every half second until every NodeClaim carries the new hash. StaticDrift runs one
    disruption at a time (budget 1) and replaces before it removes, so there are always 3 or 4 Ready nodes."""
    _patch_pool(stack, name, {"spec": {"template": {"metadata": {"labels": {"rollout": "v2"}}}}})
    new = _template_hash(stack, name)
    started: list[str] = []
    seen: set[int] = set()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 45
    while _claim_hashes(stack) != [new] * 3 or len(stack.nodes()) != 3:
        assert loop.time() < deadline, f"rollout stalled: {_claim_hashes(stack)}, started {started}"
        result = await _pass(stack)
        assert len(result.started) <= 1 and result.static_provisioning == [] and result.static_terminations == []
        started += result.started
        seen.add(len(_live(stack)))
        await asyncio.sleep(0.5)
    assert len(started) == 3 and seen <= {3, 4}, (started, seen)
    spans = []
    for wid in started:
        handle = stack.client.get_workflow_handle_for(DisruptionWorkflow.run, wid)
        assert (await handle.result()).outcome == DisruptionPhase.SUCCEEDED
        desc = await handle.describe()
        spans.append((desc.start_time, desc.close_time))
    spans.sort()
    assert all(prev[1] <= nxt[0] for prev, nxt in pairwise(spans)), spans  # one at a time


async def test_v115_a_pool_at_its_node_limit_drifts_terminate_first(temporal_client, sim_ec2, moto_endpoint) -> None:
    """kubernetes-sigs/karpenter#3312 (docs/semantics.md §14.3): `replicas: 2` with `limits.nodes: 2` leaves no room
    for a replacement, so each drifted node is drained and deleted first (no replacement), then the pool's scale-up
    re-creates it; the pool never has more than 2 NodeClaims, and the NodePool is told why."""
    name = f"tf-{uuid.uuid4().hex[:6]}"
    pool = _pool(name)
    pool["spec"]["replicas"], pool["spec"]["limits"] = 2, {"nodes": 2}
    sim_ec2.load_objects([pool])
    deletes = {"decision": "delete", "reason": "drifted", "consolidation_type": ""}
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=QUICK_DRAIN) as stack:
        await _pass(stack)
        await wait_for(lambda: len(_live(stack)) == 2, timeout=30, what="2 Ready nodes")
        before = REGISTRY.get_sample_value("karpenter_voluntary_disruption_decisions_total", deletes) or 0.0
        _patch_pool(stack, name, {"spec": {"template": {"metadata": {"labels": {"rollout": "v2"}}}}})
        new = _template_hash(stack, name)
        started, most = [], 0
        deadline = asyncio.get_running_loop().time() + 60
        while _claim_hashes(stack) != [new] * 2 or len(_live(stack)) != 2:
            assert asyncio.get_running_loop().time() < deadline, f"stalled: {_claim_hashes(stack)}, {started}"
            started += (await _pass(stack)).started
            most = max(most, len(stack.node_claims()))
            await asyncio.sleep(0.5)
        assert len(started) == 2 and most <= 2
        for wid in started:
            result = await stack.client.get_workflow_handle_for(DisruptionWorkflow.run, wid).result()
            assert result.outcome == DisruptionPhase.SUCCEEDED and result.replacements == []
        assert REGISTRY.get_sample_value("karpenter_voluntary_disruption_decisions_total", deletes) == before + 2
        why = [e["message"] for e in stack.events() if e["reason"] == "DisruptionTerminating"
               and e["involvedObject"]["kind"] == "NodePool"]
        assert "terminate-first: pool at its replicas (limits.nodes 2)" in why, why
