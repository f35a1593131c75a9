"""Steering terminations end to end through the `nodeflow` CLI: status, cancel (accepted and rejected), force;
and the NodePool deletion cascade."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from datetime import timedelta
from typing import Any

import pytest
from e2e.termination_helpers import (
    QUICK_DRAIN,
    PodSpec,
    cluster_objects,
    ec2_client,
    eventually,
    instance_state,
    launch_instances,
    record_history,
    running_worker,
)
from kubernetes import client as k8s
from support.cli_runner import nodeflow
from temporalio.client import Client

from api import labels
from api.timestamps import parse_timestamp
from client.termination import start_termination
from contracts.termination import TerminationInput, TerminationPhase
from workflows.termination import TerminationWorkflow

pytestmark = pytest.mark.e2e



def _taints(api: Any, node: str) -> list[str]:
    return [t.key for t in (k8s.CoreV1Api(api).read_node(node).spec.taints or [])]


async def _wait_blocked(handle: Any) -> None:
    for _ in range(150):
        with contextlib.suppress(Exception):
            if (await handle.query(TerminationWorkflow.progress)).blocking_pdbs:
                return
        await asyncio.sleep(0.1)
    raise AssertionError("drain never reported a blocking PDB")


async def test_cancel_accepted_untaints_and_keeps_instance(
        temporal_client: Client, sim: Any, moto_endpoint: str) -> None:
    ec2 = ec2_client(moto_endpoint)
    i1, i2 = launch_instances(ec2, 2)
    sim.load_objects(cluster_objects({"n1": i1, "n2": i2}, [PodSpec("web", "n1", count=2, grace=5)],
                                     pdbs={"web": 2}))
    api = sim.api_client()
    node = k8s.CoreV1Api(api).read_node("n1")
    async with running_worker(temporal_client, sim, moto_endpoint, min_drain=QUICK_DRAIN) as tq:
        handle = await start_termination(temporal_client, TerminationInput(
            node_name="n1", node_uid=node.metadata.uid, node_claim_name="n1-claim", node_pool="default",
            provider_id=node.spec.provider_id, reason="Underutilized", requested_by="disruption-test"),
            task_queue=tq)
        await _wait_blocked(handle)
        assert "karpenter.sh/disrupted" in _taints(api, "n1")
        code, out, err = await nodeflow(temporal_client, "status", "n1", "-o", "json")
        assert code == 0, err
        rows = json.loads(out)
        assert rows[0]["phase"] == "Draining" and rows[0]["blockingPDBs"] == ["default/web"]
        assert rows[0]["podsLeft"] == 2
        code, out, err = await nodeflow(temporal_client, "status")
        assert code == 0 and out.split()[:3] == ["NODE", "NODEPOOL", "REASON"], out
        assert "n1" in out and "Underutilized" in out and "default/web" in out
        code, out, err = await nodeflow(temporal_client, "cancel", "n1", "--reason", "planner changed its mind")
        assert code == 0, err
        result = await handle.result()
        await record_history(handle, "cancelled")
        assert result.phase == TerminationPhase.CANCELLED
        assert "karpenter.sh/disrupted" not in _taints(api, "n1")
        assert instance_state(ec2, i1) == "running"
        assert k8s.CoreV1Api(api).read_node("n1").metadata.deletion_timestamp is None
        held = k8s.CoreV1Api(api).read_node("n1").metadata.annotations  # held from re-planning for 30 min
        cancelled_at = parse_timestamp(held[labels.DISRUPTION_CANCELLED_AT_ANNOTATION])
        assert parse_timestamp(held[labels.DISRUPTION_HELD_UNTIL_ANNOTATION]) - cancelled_at == timedelta(minutes=30)
        # the user deletes it after all: a cancelled termination does not block a new one under the same id
        k8s.PolicyV1Api(api).delete_namespaced_pod_disruption_budget("web", "default")
        k8s.CoreV1Api(api).delete_node("n1")
        await eventually(lambda: _node_gone(api, "n1"), what="n1 gone after the later deletion")
    assert instance_state(ec2, i1) in ("shutting-down", "terminated")
    api.close()


async def test_cancel_rejected_for_deleted_node_then_force(
        temporal_client: Client, sim: Any, moto_endpoint: str) -> None:
    ec2 = ec2_client(moto_endpoint)
    i1, i2 = launch_instances(ec2, 2)
    sim.load_objects(cluster_objects({"n1": i1, "n2": i2}, [PodSpec("web", "n1", count=2, grace=5)],
                                     pdbs={"web": 2}))
    api = sim.api_client()
    uid = k8s.CoreV1Api(api).read_node("n1").metadata.uid
    async with running_worker(temporal_client, sim, moto_endpoint, min_drain=QUICK_DRAIN):
        k8s.CoreV1Api(api).delete_node("n1")
        handle = temporal_client.get_workflow_handle_for(TerminationWorkflow.run, f"terminate-{uid}")
        await _wait_blocked(handle)
        code, out, err = await nodeflow(temporal_client, "cancel", "n1", "--kubeconfig", sim.kubeconfig_path)
        assert code == 1 and "being deleted" in err, (code, out, err)
        code, out, err = await nodeflow(temporal_client, "force", "n1")
        assert code == 2  # --reason is required by the parser
        code, out, err = await nodeflow(temporal_client, "force", "n1", "--reason", "PDB misconfigured")
        assert code == 0, err
        result = await asyncio.wait_for(handle.result(), timeout=30)
        await eventually(lambda: _node_gone(api, "n1"), what="n1 gone")
        await record_history(handle, "cancel_rejected_forced")
    assert result.phase == TerminationPhase.TERMINATED and result.pods_deleted == 2
    assert instance_state(ec2, i1) in ("shutting-down", "terminated")
    removals = [r for r in sim.ledger() if r["node"] == "n1"]
    assert {r["cause"] for r in removals} <= {"delete", "grace-deadline"}
    api.close()


async def test_cancel_rejected_past_point_of_no_return(temporal_client: Client) -> None:
    """A finished termination cannot be cancelled; the CLI says why and exits non-zero."""
    code, _out, err = await nodeflow(temporal_client, "cancel", f"no-such-node-{uuid.uuid4().hex[:6]}")
    assert code == 1 and "no termination in flight" in err


def _node_gone(api: Any, name: str) -> bool:
    try:
        k8s.CoreV1Api(api).read_node(name)
        return False
    except k8s.ApiException as exc:
        return exc.status == 404


def _claims(api: Any) -> list[dict[str, Any]]:
    return k8s.CustomObjectsApi(api).list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims")["items"]


async def test_nodepool_deletion_terminates_its_nodes(temporal_client: Client, sim: Any, moto_endpoint: str) -> None:
    ec2 = ec2_client(moto_endpoint)
    i1, i2 = launch_instances(ec2, 2)
    sim.load_objects(cluster_objects({"n1": i1, "n2": i2}, [PodSpec("web", "n1", count=1, grace=2)]))
    api = sim.api_client()
    async with running_worker(temporal_client, sim, moto_endpoint, resync=0.5,
                              min_drain=QUICK_DRAIN):
        await asyncio.sleep(1.0)  # the watcher has seen the pool
        k8s.CustomObjectsApi(api).delete_cluster_custom_object("karpenter.sh", "v1", "nodepools", "default")
        # The NodeClaim's finalizer goes last, after the Node and the instance, so wait for both.
        await eventually(lambda: _node_gone(api, "n1") and _node_gone(api, "n2") and not _claims(api),
                         timeout=60, what="nodes and NodeClaims gone")  # returns once gone; 30 s ran out at load 32
    assert {instance_state(ec2, i) for i in (i1, i2)} <= {"shutting-down", "terminated"}
    api.close()


async def test_status_names_do_not_disrupt_and_keeps_the_pod_count_current(
        temporal_client: Client, sim: Any, moto_endpoint: str) -> None:
    """BLOCKING lists the PDB and each do-not-disrupt pod; PODS LEFT follows evictions (not only changes of
    what blocks), within the drain's progress interval."""
    ec2 = ec2_client(moto_endpoint)
    i1, i2 = launch_instances(ec2, 2)
    pods = [PodSpec("web", "n1", count=2, grace=1), PodSpec("plain", "n1", count=3, grace=1),
            PodSpec("pinned", "n1", grace=1, annotations={"karpenter.sh/do-not-disrupt": "true"})]
    sim.load_objects(cluster_objects({"n1": i1, "n2": i2}, pods, pdbs={"web": 2}))
    node = k8s.CoreV1Api(sim.api_client()).read_node("n1")
    async with running_worker(temporal_client, sim, moto_endpoint, min_drain=QUICK_DRAIN) as tq:
        handle = await start_termination(temporal_client, TerminationInput(
            node_name="n1", node_uid=node.metadata.uid, node_claim_name="n1-claim", node_pool="default",
            provider_id=node.spec.provider_id, reason="Underutilized", requested_by="disruption-test"),
            task_queue=tq)

        progress = None
        for _ in range(200):  # the count is re-signalled at most every 5 s (activities/kube.py PROGRESS_EVERY)
            with contextlib.suppress(Exception):
                progress = await handle.query(TerminationWorkflow.progress)
                if len(progress.pods) == 3 and len(progress.blocking) == 2:
                    break
            await asyncio.sleep(0.1)
        assert progress is not None and len(progress.pods) == 3, progress
        code, out, err = await nodeflow(temporal_client, "status", "n1", "-o", "json")
        assert code == 0, err
        row = json.loads(out)[0]
        assert row["podsLeft"] == 3
        assert row["blocking"] == ["default/web", "do-not-disrupt: default/pinned-0"]
        assert row["blockingPDBs"] == ["default/web"]
        code, out, _ = await nodeflow(temporal_client, "status", "n1")
        assert "BLOCKING" in out and "do-not-disrupt: default/pinned-0" in out
        code, _out, err = await nodeflow(temporal_client, "cancel", "n1", "--reason", "test done")
        assert code == 0, err
        assert (await handle.result()).phase == TerminationPhase.CANCELLED
