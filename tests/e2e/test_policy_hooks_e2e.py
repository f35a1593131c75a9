"""DisruptionPolicy hooks end to end (dev server + simulator + the real worker): the pre-disruption hook is called
before the node is tainted and retried with backoff; a required ack that never comes abandons the disruption;
`nodeflow approve NODE` acks it by hand; notifications follow the disruption's events."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from e2e.policy_helpers import endpoint, planned_command
from e2e.termination_helpers import QUICK_WORKER
from support.cli_runner import nodeflow
from support.disruption_stack import disruption_stack, fresh, record_history, replica_set, wait_for

from api import labels
from bench.clusters import node_objects, node_pool
from contracts.disruption import DisruptionInput, DisruptionPhase
from contracts.policy_controls import HookSpec, PolicyControls
from workflows.disruption import DisruptionWorkflow

pytestmark = pytest.mark.e2e


def _drifted_beside_spare(sim) -> None:
    """`old-0` drifted with one pod that fits on `new-0`: drift deletes it without a replacement (fast)."""
    objs = [node_pool("default", budgets=[{"nodes": "1"}], consolidate_after="Never")]
    objs += node_objects("old-0", "m5.large", annotations={labels.TEMPLATE_HASH_ANNOTATION: "stale-template"})
    objs += node_objects("new-0", "m5.large")
    objs.append(replica_set("api", 1, "500m"))
    sim.load_objects(fresh(objs))


def _tainted(stack, name: str) -> bool:
    node = next((n for n in stack.nodes() if n["metadata"]["name"] == name), None)
    return node is not None and any(t.get("key") == labels.DISRUPTED_TAINT_KEY
                                    for t in (node.get("spec") or {}).get("taints") or [])


async def _start(stack, policy: PolicyControls):
    await wait_for(lambda: any(p.status.phase == "Running" for p in _pods(stack)), what="api pod running")
    cmd = await asyncio.to_thread(planned_command, stack.api, "old-0")
    return await stack.client.start_workflow(
        DisruptionWorkflow.run, DisruptionInput(command=cmd, settings=stack.settings, policy=policy),
        id=f"{cmd.workflow_id}-{uuid.uuid4().hex[:6]}", task_queue=stack.task_queue,
        memo={"nodes": [n.name for n in cmd.nodes]})


def _pods(stack):
    from kubernetes import client as k8s

    return k8s.CoreV1Api(stack.api).list_namespaced_pod("default", label_selector="app=api").items


async def test_hook_answering_503_then_200_is_retried_then_the_node_goes(temporal_client, sim_ec2,
                                                                         moto_endpoint) -> None:
    _drifted_beside_spare(sim_ec2)
    async with endpoint([503, 200]) as hook, endpoint([200]) as notify, \
            disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=QUICK_WORKER) as stack:
        policy = PolicyControls(policy="general-rollout", notify_url=notify.url,
                                pre_disruption=HookSpec(url=hook.url, ack_required=True, ack_timeout_seconds=60))
        handle = await _start(stack, policy)
        result = await asyncio.wait_for(handle.result(), 50)
        await record_history(handle, "DisruptionWorkflow", "policy_hook_retried")

        assert result.outcome == DisruptionPhase.SUCCEEDED, result.message
        assert len(hook.calls) == 2, "503 fails the first attempt; the retry (after backoff) gets 200"
        body = hook.calls[0]
        assert {body["node"], body["pool"], body["reason"]} == {"old-0", "default", "Drifted"}
        assert body["deadline"] and any(p.startswith("default/api-") for p in body["pods"])
        assert notify.events() == ["started", "finished"]
        assert all(c["policy"] == "general-rollout" for c in notify.calls)
        await wait_for(lambda: "old-0" not in {n["metadata"]["name"] for n in stack.nodes()}, what="old-0 gone")


async def test_required_ack_that_never_comes_abandons_untouched(temporal_client, sim_ec2, moto_endpoint) -> None:
    _drifted_beside_spare(sim_ec2)
    async with endpoint([503]) as hook, endpoint([200]) as notify, \
            disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=QUICK_WORKER) as stack:
        policy = PolicyControls(policy="p", notify_url=notify.url,
                                pre_disruption=HookSpec(url=hook.url, ack_required=True, ack_timeout_seconds=4))
        handle = await _start(stack, policy)
        result = await asyncio.wait_for(handle.result(), 40)
        await record_history(handle, "DisruptionWorkflow", "policy_ack_abandoned")

        assert result.outcome == DisruptionPhase.ABANDONED
        assert "no pre-disruption ack within 4s" in result.message
        assert len(hook.calls) >= 2 and not _tainted(stack, "old-0")
        assert notify.events() == ["blocked"]
        assert any(e["reason"] == "DisruptionBlocked" and "no pre-disruption ack" in e["message"]
                   for e in stack.events())


async def test_approve_acks_a_waiting_disruption(temporal_client, sim_ec2, moto_endpoint) -> None:
    _drifted_beside_spare(sim_ec2)
    async with endpoint([503]) as hook, \
            disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=QUICK_WORKER) as stack:
        policy = PolicyControls(policy="p", pre_disruption=HookSpec(url=hook.url, ack_required=True,
                                                                    ack_timeout_seconds=120))
        handle = await _start(stack, policy)
        await wait_for(lambda: len(hook.calls) >= 1, what="the hook called")
        assert not _tainted(stack, "old-0"), "nothing is tainted before the ack"
        code, out, err = await nodeflow(temporal_client, "approve", "old-0", "--reason", "on-call says go")
        assert code == 0, err
        assert "approved" in out
        result = await asyncio.wait_for(handle.result(), 40)
        assert result.outcome == DisruptionPhase.SUCCEEDED, result.message


async def test_blocked_drain_is_escalated_then_forced(temporal_client, sim_ec2, moto_endpoint) -> None:
    """A PDB that allows no eviction appears while the replacement comes up: the drain blocks, an Event names the
    PDB at notifyAfter, and at forceAfter the termination's force path drains the node."""
    from kubernetes import client as k8s
    from support.sim_objects import pdb

    from contracts.policy_controls import EscalationSpec

    objs = [node_pool("default", budgets=[{"nodes": "1"}], consolidate_after="Never")]
    objs += node_objects("old-0", "m5.large", annotations={labels.TEMPLATE_HASH_ANNOTATION: "stale-template"})
    objs.append(replica_set("api", 1, "1500m"))  # fits nowhere else: drift launches a replacement first
    sim_ec2.load_objects(fresh(objs))
    async with endpoint([200]) as notify, \
            disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=QUICK_WORKER) as stack:
        policy = PolicyControls(policy="p", notify_url=notify.url,
                                escalation=EscalationSpec(notify_after_seconds=2, force_after_seconds=5))
        handle = await _start(stack, policy)
        for _ in range(300):
            if (await handle.query(DisruptionWorkflow.progress)).phase == DisruptionPhase.WAITING_READY:
                break
            await asyncio.sleep(0.1)
        k8s.PolicyV1Api(stack.api).create_namespaced_pod_disruption_budget(
            "default", pdb("api", {"app": "api"}, minAvailable=1))
        result = await asyncio.wait_for(handle.result(), 50)
        await record_history(handle, "DisruptionWorkflow", "policy_escalation_forced")

        assert result.outcome == DisruptionPhase.SUCCEEDED, result.message
        assert notify.events() == ["started", "blocked", "forced", "finished"]
        reasons = {(e["involvedObject"]["kind"], e["reason"]): e["message"] for e in stack.events()}
        assert "default/api" in reasons[("Node", "DisruptionEscalated")]
        assert "escalation.forceAfter" in reasons[("NodePool", "DisruptionForced")]
        await wait_for(lambda: "old-0" not in {n["metadata"]["name"] for n in stack.nodes()}, what="old-0 gone")
