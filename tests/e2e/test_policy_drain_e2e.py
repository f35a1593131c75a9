"""drain.jobs Wait end to end (dev server + simulator + the real worker, docs/semantics.md §15.8): a planner pass
drifts a node that runs a Job's pod; the pool's DisruptionPolicy reaches the TerminationWorkflow, which taints the
node, drains the rest and leaves the Job pod to finish. The test plays the kubelet reporting the container's exit
(the pod's status goes to Succeeded through the API), as the simulated kubelet does not run containers."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest
from e2e.termination_helpers import QUICK_WORKER
from e2e.termination_helpers import record_history as record_termination
from support.disruption_stack import Stack, disruption_stack, fresh, record_history, replica_set, wait_for

from api import labels
from bench.clusters import node_objects, node_pool, pod
from contracts.disruption import DisruptionPhase
from contracts.termination import WAITING_FOR_COMPLETION
from workflows.termination import TerminationWorkflow, workflow_id

pytestmark = pytest.mark.e2e

JOB_POD = "report-abc12"


def _policy(max_wait: str) -> dict[str, Any]:
    return {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": "batch"},
            "spec": {"nodePools": ["default"], "drain": {"jobs": "Wait", "maxWait": max_wait}}}


def _cluster(sim: Any, max_wait: str) -> str:
    """`old-0` drifted, running one ReplicaSet pod and one Job pod that both fit on `new-0` (no replacement)."""
    objs = [node_pool("default", budgets=[{"nodes": "1"}], consolidate_after="Never"), _policy(max_wait)]
    objs += node_objects("old-0", "m5.large", annotations={labels.TEMPLATE_HASH_ANNOTATION: "stale-template"})
    objs += node_objects("new-0", "m5.large")
    objs.append(replica_set("api", 1, "500m"))
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "report", "namespace": "default",
                                                                 "uid": "uid-job-report"},
           "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "r", "image": "r"}]}}}}
    job_pod = pod(JOB_POD, "old-0", 0.25, 0.5, labels={"job-name": "report"})
    job_pod["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "report",
                                               "uid": "uid-job-report", "controller": True}]
    job_pod["spec"]["terminationGracePeriodSeconds"] = 1
    job_pod["status"]["startTime"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    loaded = fresh([*objs, job, job_pod])
    sim.load_objects(loaded)
    return next(o["metadata"]["uid"] for o in loaded if o["kind"] == "Node" and o["metadata"]["name"] == "old-0")


def _core(stack: Stack) -> Any:
    from kubernetes import client as k8s

    return k8s.CoreV1Api(stack.api)


def _job_pod(stack: Stack) -> dict[str, Any] | None:
    from kubernetes.client.rest import ApiException

    try:
        return stack.api.sanitize_for_serialization(_core(stack).read_namespaced_pod(JOB_POD, "default"))
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _evicted(stack: Stack) -> list[str]:
    """Evicted Events naming the Job pod, wherever they were recorded (on the Node or on the Pod)."""
    items = stack.api.sanitize_for_serialization(_core(stack).list_event_for_all_namespaces().items)
    return [e.get("message", "") for e in items if e.get("reason") == "Evicted"
            and (JOB_POD in e.get("message", "") or (e.get("involvedObject") or {}).get("name") == JOB_POD)]


async def _start(stack: Stack, node_uid: str) -> tuple[str, Any]:
    await wait_for(lambda: any(p.status.phase == "Running" for p in _core(stack).list_namespaced_pod(
        "default", label_selector="app=api").items), what="api pod running")
    result = await stack.planner_pass()
    assert len(result.started) == 1, result
    termination = stack.client.get_workflow_handle_for(TerminationWorkflow.run, workflow_id(node_uid))

    async def waiting() -> Any:
        while True:
            try:
                p = await termination.query(TerminationWorkflow.progress)
                if p.waiting:
                    return p
            except Exception:  # not started yet
                pass
            await asyncio.sleep(0.2)

    progress = await asyncio.wait_for(waiting(), 40)
    return result.started[0], progress


async def test_a_job_pod_finishes_on_the_tainted_node_before_it_goes(temporal_client, sim_ec2, moto_endpoint) -> None:
    node_uid = _cluster(sim_ec2, "10m")
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=QUICK_WORKER) as stack:
        disruption, progress = await _start(stack, node_uid)
        assert progress.waiting.startswith("waiting for 1 Job pod, longest running"), progress.waiting
        assert [p.key for p in progress.pods if p.status == WAITING_FOR_COMPLETION] == [f"default/{JOB_POD}"]
        await asyncio.sleep(2)  # the drain keeps leaving it alone: the node stays, the pod keeps running
        running = await asyncio.to_thread(_job_pod, stack)
        assert running is not None and not running["metadata"].get("deletionTimestamp")
        assert "old-0" in {n["metadata"]["name"] for n in stack.nodes()}
        tainted = next(n for n in stack.nodes() if n["metadata"]["name"] == "old-0")
        assert any(t["key"] == labels.DISRUPTED_TAINT_KEY for t in tainted["spec"].get("taints") or [])

        # the kubelet reports the Job's container exited 0
        await asyncio.to_thread(_core(stack).patch_namespaced_pod_status, JOB_POD, "default",
                                {"status": {"phase": "Succeeded"}})
        outcome = await stack.outcome(disruption, timeout=40)
        assert outcome.outcome == DisruptionPhase.SUCCEEDED, outcome.message
        await record_history(stack.client.get_workflow_handle(disruption), "DisruptionWorkflow", "policy_drain_wait")
        await record_termination(stack.client.get_workflow_handle(workflow_id(node_uid)), "completion_wait_finished")
        await wait_for(lambda: "old-0" not in {n["metadata"]["name"] for n in stack.nodes()}, what="old-0 gone")
        assert await asyncio.to_thread(_evicted, stack) == []
        waits = [e["message"] for e in stack.events() if e["reason"] == "AwaitingJobCompletion"
                 and e["involvedObject"]["name"] == "old-0"]
        assert waits and waits[0].startswith("Leaving 1 Job pod(s) to finish before draining, until "), waits
        assert waits[0].endswith(f"(default/{JOB_POD})")


async def test_max_wait_passes_and_the_job_pod_is_evicted(temporal_client, sim_ec2, moto_endpoint) -> None:
    node_uid = _cluster(sim_ec2, "4s")
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=QUICK_WORKER) as stack:
        disruption, progress = await _start(stack, node_uid)
        assert progress.completion_until is not None and progress.started_at is not None
        assert (progress.completion_until - progress.started_at).total_seconds() == pytest.approx(4, abs=0.01)
        outcome = await stack.outcome(disruption, timeout=40)
        assert outcome.outcome == DisruptionPhase.SUCCEEDED, outcome.message
        evicted = await asyncio.to_thread(_evicted, stack)
        assert evicted, "after maxWait the Job pod takes the usual path: an eviction"
        await record_termination(stack.client.get_workflow_handle(workflow_id(node_uid)), "completion_wait_evicted")
        desc = await stack.client.get_workflow_handle(workflow_id(node_uid)).describe()
        history = await stack.client.get_workflow_handle(workflow_id(node_uid)).fetch_history()
        drains = [e for e in history.events if e.HasField("activity_task_scheduled_event_attributes")
                  and e.activity_task_scheduled_event_attributes.activity_type.name == "termination.drain"]
        assert len(drains) >= 2, "one drain while the hold lasts, another that evicts"
        last = drains[-1].event_time.ToDatetime(tzinfo=UTC)
        assert (last - desc.start_time).total_seconds() >= 4 - 0.05
