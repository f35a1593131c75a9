"""End-to-end terminations: Temporal dev server + simulator (Kubernetes API) + moto (EC2) + in-process worker.

Everything goes through real clients: `kubectl delete`-equivalents through the kubernetes client, the
watcher starts the workflow, activities evict through the Eviction API and terminate through boto3.
"""

from __future__ import annotations

import asyncio
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
from temporalio.client import Client

from api.timestamps import parse_time
from contracts.termination import TerminationPhase
from workflows.termination import TerminationWorkflow, workflow_id

pytestmark = pytest.mark.e2e


def _gone(api: Any, kind: str, name: str) -> bool:
    try:
        if kind == "Node":
            k8s.CoreV1Api(api).read_node(name)
        else:
            k8s.CustomObjectsApi(api).get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", name)
        return False
    except k8s.ApiException as exc:
        return exc.status == 404


def _node_uid(api: Any, name: str) -> str:
    return k8s.CoreV1Api(api).read_node(name).metadata.uid


def _events(api: Any, node: str) -> list[tuple[str, str]]:
    evs = k8s.CoreV1Api(api).list_namespaced_event("default").items
    return [(e.reason, e.message) for e in evs if e.involved_object.name == node]


async def test_plain_drain_terminates_instance_and_removes_finalizers(
        temporal_client: Client, sim: Any, moto_endpoint: str) -> None:
    ec2 = ec2_client(moto_endpoint)
    i1, i2 = launch_instances(ec2, 2)
    sim.load_objects(cluster_objects({"n1": i1, "n2": i2}, [PodSpec("web", "n1", count=3, grace=5)]))
    api = sim.api_client()
    uid = _node_uid(api, "n1")
    async with running_worker(temporal_client, sim, moto_endpoint, min_drain=QUICK_DRAIN):
        k8s.CoreV1Api(api).delete_node("n1")
        await eventually(lambda: _gone(api, "Node", "n1") and _gone(api, "NodeClaim", "n1-claim"),
                         what="n1 and its claim gone")
        handle = temporal_client.get_workflow_handle_for(TerminationWorkflow.run, workflow_id(uid))
        result = await handle.result()
        history = await handle.fetch_history()
        await record_history(handle, "plain_drain")
    assert result.phase == TerminationPhase.TERMINATED and result.instance_terminated
    assert result.pods_evicted == 3
    assert instance_state(ec2, i1) in ("shutting-down", "terminated")
    assert instance_state(ec2, i2) == "running"
    assert len(history.events) <= 80, len(history.events)
    stats = sim.stats()
    assert stats["pdbViolationsTotal"] == 0
    pods = k8s.CoreV1Api(api).list_namespaced_pod("default").items
    assert {p.spec.node_name for p in pods} == {"n2"} and len(pods) == 3
    reasons = [r for r, _ in _events(api, "n1")]
    assert "Terminating" in reasons and "Terminated" in reasons
    # Karpenter's Evicted is on the Pod, "Evicted pod: <reason>" (terminator/events/events.go)
    evicted = [(e.involved_object.kind, e.message) for e in k8s.CoreV1Api(api).list_namespaced_event("default").items
               if e.reason == "Evicted"]
    assert evicted == [("Pod", "Evicted pod: Forceful Termination")] * 3  # a deletion, not a disruption command
    api.close()


async def test_pdb_blocks_until_replacement_is_healthy(temporal_client: Client, sim: Any, moto_endpoint: str) -> None:
    """minAvailable 1 of 2: the second eviction waits (429) until a replacement runs on n2; never violated."""
    # the replacement takes 3 s to start (image pull, readiness), not 0.03 s: otherwise, on a loaded machine, it can
    # be Ready before the drain asks for the second eviction, and nothing is refused
    sim.world.pod_start_delay = 3.0 / sim.world.time_scale
    ec2 = ec2_client(moto_endpoint)
    i1, i2 = launch_instances(ec2, 2)
    sim.load_objects(cluster_objects({"n1": i1, "n2": i2}, [PodSpec("web", "n1", count=2, grace=5)],
                                     pdbs={"web": 1}))
    api = sim.api_client()
    uid = _node_uid(api, "n1")
    async with running_worker(temporal_client, sim, moto_endpoint, min_drain=QUICK_DRAIN):
        k8s.CoreV1Api(api).delete_node("n1")
        await eventually(lambda: _gone(api, "Node", "n1"), what="n1 gone")
        await record_history(temporal_client.get_workflow_handle(workflow_id(uid)), "pdb_blocked")
    stats = sim.stats()
    assert stats["pdbViolationsTotal"] == 0
    assert stats["evictions"].get("429", 0) >= 1, stats["evictions"]
    assert stats["evictions"].get("201", 0) == 2
    failed = [m for r, m in _events(api, "n1") if r == "FailedDraining"]
    assert failed and "default/web" in failed[0]
    assert len(failed) == 1  # one per node per 2 min, however many rounds the PDB refused (Karpenter's recorder)
    api.close()


async def test_drain_goes_tier_by_tier(temporal_client: Client, sim: Any, moto_endpoint: str) -> None:
    ec2 = ec2_client(moto_endpoint)
    i1, i2 = launch_instances(ec2, 2)
    sim.load_objects(cluster_objects({"n1": i1, "n2": i2}, [
        PodSpec("crit-ds", "n1", daemonset=True, critical=True, grace=3),
        PodSpec("crit", "n1", critical=True, grace=3),
        PodSpec("ds", "n1", daemonset=True, grace=3),
        PodSpec("plain", "n1", count=2, grace=3),
    ]))
    api = sim.api_client()
    async with running_worker(temporal_client, sim, moto_endpoint, min_drain=QUICK_DRAIN):
        k8s.CoreV1Api(api).delete_node("n1")
        await eventually(lambda: _gone(api, "Node", "n1"), what="n1 gone")
    removals = [r for r in sim.ledger() if r["node"] == "n1" and r["cause"] == "eviction"]
    order = [r["pod"].split("/")[1].rsplit("-", 1)[0] for r in removals]
    rank = {"plain": 0, "ds": 1, "crit": 2, "crit-ds": 3}
    assert [rank[o] for o in order] == sorted(rank[o] for o in order), order
    assert set(order) == set(rank)
    api.close()


async def test_nodeclaim_vanishing_mid_drain(temporal_client: Client, sim: Any, moto_endpoint: str) -> None:
    ec2 = ec2_client(moto_endpoint)
    i1, i2 = launch_instances(ec2, 2)
    sim.load_objects(cluster_objects({"n1": i1, "n2": i2}, [PodSpec("web", "n1", count=2, grace=5)],
                                     pdbs={"web": 2}))  # blocks: nothing may be evicted
    api = sim.api_client()
    custom = k8s.CustomObjectsApi(api)
    uid = _node_uid(api, "n1")
    async with running_worker(temporal_client, sim, moto_endpoint, min_drain=QUICK_DRAIN):
        k8s.CoreV1Api(api).delete_node("n1")
        handle = temporal_client.get_workflow_handle_for(TerminationWorkflow.run, workflow_id(uid))

        async def blocked() -> bool:
            try:
                p = await handle.query(TerminationWorkflow.progress)
            except Exception:
                return False
            return bool(p.blocking_pdbs)

        for _ in range(100):
            if await blocked():
                break
            await asyncio.sleep(0.1)
        # someone strips the claim's finalizer: the claim disappears while the node is still draining
        custom.patch_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "n1-claim",
                                           {"metadata": {"finalizers": None}})
        await eventually(lambda: _gone(api, "NodeClaim", "n1-claim"), what="claim gone")
        await handle.execute_update(TerminationWorkflow.force, _force("test: unblock"))
        result = await asyncio.wait_for(handle.result(), timeout=30)
        await record_history(handle, "claim_vanished_forced")
    assert result.phase == TerminationPhase.TERMINATED
    assert _gone(api, "Node", "n1")
    assert instance_state(ec2, i1) in ("shutting-down", "terminated")
    api.close()


def _force(reason: str) -> Any:
    from contracts.termination import ForceRequest

    return ForceRequest(reason=reason)


async def test_deadline_deletes_do_not_disrupt_pod_before_node_grace_ends(
        temporal_client: Client, sim: Any, moto_endpoint: str) -> None:
    """NodeClaim terminationGracePeriod 2s, a do-not-disrupt pod with grace 1s: it is deleted (bypassing the
    annotation) about 1s after the deletion, so its own grace ends at the node's deadline."""
    ec2 = ec2_client(moto_endpoint)
    i1, i2 = launch_instances(ec2, 2)
    sim.load_objects(cluster_objects(
        {"n1": i1, "n2": i2},
        [PodSpec("pinned", "n1", grace=1, annotations={"karpenter.sh/do-not-disrupt": "true"})],
        node_grace="2s"))
    api = sim.api_client()
    uid = _node_uid(api, "n1")
    async with running_worker(temporal_client, sim, moto_endpoint, min_drain=QUICK_DRAIN):
        k8s.CoreV1Api(api).delete_node("n1")
        handle = temporal_client.get_workflow_handle_for(TerminationWorkflow.run, workflow_id(uid))
        await eventually(lambda: _gone(api, "Node", "n1"), what="n1 gone")
        result = await handle.result()
        progress = await handle.query(TerminationWorkflow.progress)
    assert result.phase == TerminationPhase.TERMINATED and result.pods_deleted == 1 and result.pods_evicted == 0
    assert progress.deadline is not None
    removal = next(r for r in sim.ledger() if r["pod"] == "default/pinned-0")
    assert removal["cause"] in ("delete", "grace-deadline")
    disrupted = [m for r, m in _events(api, "pinned-0") if r == "Disrupted"]
    assert disrupted and disrupted[0].startswith("Deleting the pod to accommodate the terminationTime ")
    assert any(r == "TerminationGracePeriodExpiring" for r, _ in _events(api, "n1"))
    api.close()


async def test_started_by_a_disruption_deletes_the_objects_at_the_end(
        temporal_client: Client, sim: Any, moto_endpoint: str) -> None:
    """No one deleted the Node: the workflow drains, terminates, then deletes Node and NodeClaim itself."""
    from client.termination import start_termination
    from contracts.termination import TerminationInput

    ec2 = ec2_client(moto_endpoint)
    i1, i2 = launch_instances(ec2, 2)
    sim.load_objects(cluster_objects({"n1": i1, "n2": i2}, [PodSpec("web", "n1", count=2, grace=2)]))
    api = sim.api_client()
    node = k8s.CoreV1Api(api).read_node("n1")
    async with running_worker(temporal_client, sim, moto_endpoint, min_drain=QUICK_DRAIN) as tq:
        handle = await start_termination(temporal_client, TerminationInput(
            node_name="n1", node_uid=node.metadata.uid, node_claim_name="n1-claim", node_pool="default",
            provider_id=node.spec.provider_id, reason="Drifted", requested_by="disruption-test"), task_queue=tq)
        again = await start_termination(temporal_client, TerminationInput(
            node_name="n1", node_uid=node.metadata.uid, reason="Drifted"), task_queue=tq)
        result = await handle.result()
        assert (await again.result()).phase == TerminationPhase.TERMINATED  # the same execution, joined
    assert result.phase == TerminationPhase.TERMINATED and result.pods_evicted == 2
    assert _gone(api, "Node", "n1") and _gone(api, "NodeClaim", "n1-claim")
    assert instance_state(ec2, i1) in ("shutting-down", "terminated")
    api.close()


async def test_notready_node_whose_instance_is_gone_needs_no_drain(
        temporal_client: Client, sim: Any, moto_endpoint: str) -> None:
    """Karpenter's fast path: the instance is already terminated and the node NotReady, so nothing can stop its
    pods gracefully; a do-not-disrupt pod (which would hold a drain forever) does not hold the termination."""
    ec2 = ec2_client(moto_endpoint)
    i1, i2 = launch_instances(ec2, 2)
    sim.load_objects(cluster_objects({"n1": i1, "n2": i2}, [
        PodSpec("batch", "n1", count=2, grace=5, annotations={"karpenter.sh/do-not-disrupt": "true"})]))
    api = sim.api_client()
    uid = _node_uid(api, "n1")
    ec2.terminate_instances(InstanceIds=[i1])
    sim.world.set_node_ready("n1", False)
    async with running_worker(temporal_client, sim, moto_endpoint, min_drain=QUICK_DRAIN):
        k8s.CoreV1Api(api).delete_node("n1")
        handle = temporal_client.get_workflow_handle_for(TerminationWorkflow.run, workflow_id(uid))
        await eventually(lambda: _gone(api, "Node", "n1") and _gone(api, "NodeClaim", "n1-claim"),
                         what="n1 and its claim gone")
        result = await asyncio.wait_for(handle.result(), timeout=30)
        progress = await handle.query(TerminationWorkflow.progress)
        await record_history(handle, "notready_instance_gone")
    assert result.phase == TerminationPhase.TERMINATED and result.pods_evicted == 0 and result.pods_deleted == 0
    assert "no drain" in progress.message
    assert instance_state(ec2, i2) == "running"
    api.close()


def _claim(api: Any, name: str) -> dict[str, Any] | None:
    try:
        return k8s.CustomObjectsApi(api).get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", name)
    except k8s.ApiException:
        return None


def _drained(claim: dict[str, Any] | None) -> str | None:
    conds = ((claim or {}).get("status") or {}).get("conditions") or []
    return next((f"{c['status']}/{c.get('reason')}" for c in conds if c.get("type") == "Drained"), None)


async def test_terminating_nodeclaim_shows_karpenters_markers(
        temporal_client: Client, sim: Any, moto_endpoint: str) -> None:
    """While it drains, the NodeClaim carries the termination-timestamp annotation (deletion + TGP) and
    Drained=Unknown/Draining, as Karpenter's termination controller writes them."""
    ec2 = ec2_client(moto_endpoint)
    i1, i2 = launch_instances(ec2, 2)
    sim.load_objects(cluster_objects(
        {"n1": i1, "n2": i2},
        [PodSpec("pinned", "n1", grace=1, annotations={"karpenter.sh/do-not-disrupt": "true"})],
        node_grace="4s"))  # the pod goes at 3 s: time enough to see the claim while it drains
    api = sim.api_client()
    uid = _node_uid(api, "n1")
    async with running_worker(temporal_client, sim, moto_endpoint, min_drain=QUICK_DRAIN):
        k8s.CoreV1Api(api).delete_node("n1")
        claim = await eventually(
            lambda: (c := _claim(api, "n1-claim")) is not None and _drained(c) == "Unknown/Draining" and c,
            what="n1-claim marked Drained=Unknown")
        handle = temporal_client.get_workflow_handle_for(TerminationWorkflow.run, workflow_id(uid))
        result = await handle.result()
        # one_patch_marker.json and patches_decided_first.json: the paths before the drain-heartbeat marker
        await record_history(handle, "one_patch_marker_drain_heartbeat")
    stamp = claim["metadata"]["annotations"]["karpenter.sh/nodeclaim-termination-timestamp"]
    deleted = claim["metadata"]["deletionTimestamp"]
    assert parse_time(stamp) == parse_time(deleted).replace(microsecond=0) + timedelta(seconds=4), (stamp, deleted)
    assert result.phase == TerminationPhase.TERMINATED
    # Karpenter's TerminationGracePeriodExpiring, Warning, on the NodeClaim and its Node, once each (2 min window)
    for name in ("n1-claim", "n1"):
        expiring = [m for r, m in _events(api, name) if r == "TerminationGracePeriodExpiring"]
        assert expiring == [f"All pods will be deleted by {stamp}"], (name, expiring)
    api.close()
