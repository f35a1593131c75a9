"""Interruption intake end to end: moto SQS -> poller workflow/activity -> the right workflow per message kind.

Real servers throughout: the Temporal dev server, moto_server (SQS and EC2) and the Kubernetes simulator
whose Nodes are backed by moto instances; the worker runs in-process (except the one that gets killed).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import boto3
import pytest
from e2e.interruption_helpers import (
    FAST_POLL,
    NodeSpec,
    eventually,
    intake_worker,
    load_cluster,
    new_queue,
    nodepool,
    queue_depth,
    rebalance,
    scheduled_change,
    spot_warning,
    state_change,
    stop_workflows,
    workflow_exists,
)
from e2e.termination_helpers import QUICK_DRAIN
from kubernetes import client as k8s
from support.disruption_stack import record_history
from support.ports import free_port
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from api import labels
from api.catalog import load_default_catalog
from client.interruption import ensure_interruption_poller
from client.termination import start_termination
from contracts.interruption import prespin_workflow_id
from contracts.search_attributes import ALL as SEARCH_ATTRIBUTES
from contracts.termination import TerminationInput, TerminationProgress
from devstack.binaries import find_binary
from simulator.server import Simulator
from telemetry import metrics
from workflows.interruption import SpotPrespinWorkflow
from workflows.termination import TerminationWorkflow

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


async def progress(client: Client, node_uid: str) -> TerminationProgress:
    return await client.get_workflow_handle_for(TerminationWorkflow.run, f"terminate-{node_uid}").query(
        TerminationWorkflow.progress)


def node_events(sim: Simulator, node: str) -> list[str]:
    api = sim.api_client()
    try:
        events = k8s.CoreV1Api(api).list_namespaced_event("default").items
        return [e.reason for e in events if e.involved_object.name == node]
    finally:
        api.close()


def small_pods(node: str, count: int, cpu: str = "500m") -> list[dict[str, Any]]:
    return [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"{node}-web-{i}", "namespace": "default", "labels": {"app": "web"}},
             "spec": {"nodeName": node, "containers": [{"name": "web", "image": "web", "resources": {
                 "requests": {"cpu": cpu, "memory": "512Mi"}}}]}} for i in range(count)]


async def test_spot_warning_prespins_a_replacement_and_terminates_by_the_deadline(
        temporal_client: Client, sim_ec2: Simulator, moto_endpoint: str) -> None:
    """A large spot node with two small pods and nowhere else to put them: the pre-spin is sized for the pods."""
    nodes = load_cluster(sim_ec2, [nodepool("spot")],
                         [NodeSpec("spot-a", "spot", labels.CAPACITY_SPOT, instance_type="m5.2xlarge")])
    sim_ec2.load_objects(small_pods("spot-a", 2))
    node = nodes["spot-a"]
    sqs, url = new_queue(moto_endpoint)
    warned_at = datetime.now(UTC).replace(microsecond=0)
    async with intake_worker(temporal_client, sim_ec2, moto_endpoint, sqs, url):
        sqs.send_message(QueueUrl=url, MessageBody=spot_warning(node["instance"], time_=warned_at))
        prespin = temporal_client.get_workflow_handle_for(SpotPrespinWorkflow.run, prespin_workflow_id(node["uid"]))
        result = await eventually(lambda: workflow_exists(temporal_client, prespin.id)) and await prespin.result()
        await record_history(prespin, "SpotPrespinWorkflow", "sized_by_pods")
        assert result.launched is not None, result.error
        assert result.launched.capacity_type == labels.CAPACITY_SPOT
        assert result.sizing is not None and (result.sizing.pods, result.sizing.placed) == (2, 0)
        assert len(result.launched_all) == 1
        sized = load_default_catalog().get(result.launched.instance_type or "")
        assert sized is not None and sized.cpu_cores <= 2 < 8  # for 1 CPU of pods, not the m5.2xlarge's 8
        ec2 = boto3.client("ec2", endpoint_url=moto_endpoint, region_name="us-east-1")
        state = ec2.describe_instances(InstanceIds=[result.launched.instance_id])
        assert state["Reservations"][0]["Instances"][0]["State"]["Name"] in ("pending", "running")
        prog = await eventually(lambda: progress(temporal_client, node["uid"]))
        assert prog.reason == "SpotInterrupted"
        assert prog.deadline == warned_at + timedelta(minutes=2)
        assert await eventually(lambda: queue_depth(sqs, url) == (0, 0))
        for name in ("spot-a", "spot-a-claim"):  # the provider's events are on the Node and its NodeClaim
            reasons = node_events(sim_ec2, name)
            assert reasons.count("SpotInterrupted") == 1 and reasons.count("TerminatingOnInterruption") == 1, name


async def test_spot_warning_whose_pods_fit_elsewhere_prespins_nothing(
        temporal_client: Client, sim_ec2: Simulator, moto_endpoint: str) -> None:
    nodes = load_cluster(sim_ec2, [nodepool("spot")],
                         [NodeSpec("spot-b", "spot", labels.CAPACITY_SPOT),
                          NodeSpec("roomy", "spot", instance_type="m5.2xlarge")])
    sim_ec2.load_objects(small_pods("spot-b", 2))
    node = nodes["spot-b"]
    claims_before = len(_node_claims(sim_ec2))
    sqs, url = new_queue(moto_endpoint)
    async with intake_worker(temporal_client, sim_ec2, moto_endpoint, sqs, url):
        sqs.send_message(QueueUrl=url, MessageBody=spot_warning(node["instance"]))
        prespin = temporal_client.get_workflow_handle_for(SpotPrespinWorkflow.run, prespin_workflow_id(node["uid"]))
        result = await eventually(lambda: workflow_exists(temporal_client, prespin.id)) and await prespin.result()
        assert result.launched is None and result.launched_all == [] and result.error == ""
        assert result.sizing is not None and (result.sizing.pods, result.sizing.placed) == (2, 2)
        assert await prespin.query(SpotPrespinWorkflow.phase) == "NotNeeded"
        assert len(_node_claims(sim_ec2)) == claims_before  # nothing launched
        prog = await eventually(lambda: progress(temporal_client, node["uid"]))
        assert prog.reason == "SpotInterrupted"  # the node itself still goes


def _node_claims(sim: Simulator) -> list[dict[str, Any]]:
    api = sim.api_client()
    try:
        return k8s.CustomObjectsApi(api).list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims")["items"]
    finally:
        api.close()


async def test_state_changes_and_scheduled_changes_terminate(
        temporal_client: Client, sim_ec2: Simulator, moto_endpoint: str) -> None:
    specs = [NodeSpec(f"od-{i}", "default") for i in range(3)]
    nodes = load_cluster(sim_ec2, [nodepool("default")], specs)
    sqs, url = new_queue(moto_endpoint)
    async with intake_worker(temporal_client, sim_ec2, moto_endpoint, sqs, url, min_drain=QUICK_DRAIN):
        sqs.send_message(QueueUrl=url, MessageBody=state_change(nodes["od-0"]["instance"], "stopping"))
        sqs.send_message(QueueUrl=url, MessageBody=state_change(nodes["od-1"]["instance"], "terminated"))
        sqs.send_message(QueueUrl=url, MessageBody=scheduled_change(nodes["od-2"]["instance"]))
        reasons = {}
        for name in ("od-0", "od-1", "od-2"):
            prog = await eventually(lambda n=name: progress(temporal_client, nodes[n]["uid"]))
            reasons[name] = prog.reason
            assert prog.deadline is None or prog.deadline > datetime.now(UTC)  # graceful: the node's own period
        assert reasons == {"od-0": "InstanceStateChange", "od-1": "InstanceStateChange", "od-2": "ScheduledChange"}
        before = _sample("nodeflow_nodes_terminated_total", reason="InstanceStateChange")
        drains = _sample("nodeflow_drain_duration_seconds_count")
        result = await temporal_client.get_workflow_handle_for(
            TerminationWorkflow.run, f"terminate-{nodes['od-0']['uid']}").result()
        assert result.instance_terminated
        assert await eventually(lambda: _sample("nodeflow_nodes_terminated_total", reason="InstanceStateChange")
                                 >= max(before, 1))
        assert _sample("nodeflow_drain_duration_seconds_count") >= max(drains, 1)
        assert not await workflow_exists(temporal_client, prespin_workflow_id(nodes["od-0"]["uid"]))
        assert await eventually(lambda: queue_depth(sqs, url) == (0, 0))


async def test_rebalance_follows_the_nodepool_annotation(
        temporal_client: Client, sim_ec2: Simulator, moto_endpoint: str) -> None:
    pools = [nodepool("plain"), nodepool("drainer", rebalance="drain"), nodepool("quiet", rebalance="ignore")]
    specs = [NodeSpec("r-plain", "plain", labels.CAPACITY_SPOT), NodeSpec("r-drain", "drainer", labels.CAPACITY_SPOT),
             NodeSpec("r-quiet", "quiet", labels.CAPACITY_SPOT)]
    nodes = load_cluster(sim_ec2, pools, specs)
    sqs, url = new_queue(moto_endpoint)
    async with intake_worker(temporal_client, sim_ec2, moto_endpoint, sqs, url):
        for name in ("r-plain", "r-drain", "r-quiet"):
            sqs.send_message(QueueUrl=url, MessageBody=rebalance(nodes[name]["instance"]))
        prog = await eventually(lambda: progress(temporal_client, nodes["r-drain"]["uid"]))
        assert prog.reason == "RebalanceRecommendation"
        assert await eventually(lambda: queue_depth(sqs, url) == (0, 0))
        assert await eventually(lambda: "SpotRebalanceRecommendation" in node_events(sim_ec2, "r-plain"))
        assert not await workflow_exists(temporal_client, f"terminate-{nodes['r-plain']['uid']}")
        assert not await workflow_exists(temporal_client, f"terminate-{nodes['r-quiet']['uid']}")
        assert node_events(sim_ec2, "r-quiet") == []


async def test_malformed_and_unknown_messages_are_logged_counted_and_deleted(
        temporal_client: Client, sim_ec2: Simulator, moto_endpoint: str, caplog: pytest.LogCaptureFixture) -> None:
    nodes = load_cluster(sim_ec2, [nodepool("default")], [NodeSpec("m-0", "default")])
    sqs, url = new_queue(moto_endpoint)
    caplog.set_level(logging.INFO, logger="activities.queue")
    sqs.send_message(QueueUrl=url, MessageBody="{this is not json")
    sqs.send_message(QueueUrl=url, MessageBody=state_change(nodes["m-0"]["instance"], "running"))
    sqs.send_message(QueueUrl=url, MessageBody=spot_warning("i-0000000000000dead"))  # no such node
    async with intake_worker(temporal_client, sim_ec2, moto_endpoint, sqs, url):
        assert await eventually(lambda: queue_depth(sqs, url) == (0, 0))
    messages = [r.getMessage() for r in caplog.records if r.name == "activities.queue"]
    assert any("dropping malformed interruption message" in m and "not JSON" in m for m in messages), messages
    assert any("needs no action" in m and "'running'" in m for m in messages), messages
    assert not await workflow_exists(temporal_client, f"terminate-{nodes['m-0']['uid']}")


async def test_the_same_message_twice_starts_one_workflow(
        temporal_client: Client, sim_ec2: Simulator, moto_endpoint: str) -> None:
    nodes = load_cluster(sim_ec2, [nodepool("default")], [NodeSpec("d-0", "default")])
    sqs, url = new_queue(moto_endpoint)
    body = state_change(nodes["d-0"]["instance"], "stopping", message_id=str(uuid.uuid4()))
    sqs.send_message(QueueUrl=url, MessageBody=body)
    sqs.send_message(QueueUrl=url, MessageBody=body)
    wf_id = f"terminate-{nodes['d-0']['uid']}"
    async with intake_worker(temporal_client, sim_ec2, moto_endpoint, sqs, url):
        assert await eventually(lambda: queue_depth(sqs, url) == (0, 0))
        runs = await eventually(lambda: _runs(temporal_client, wf_id))
        assert len(runs) == 1, runs
        assert node_events(sim_ec2, "d-0").count("InstanceStopping") == 1  # the provider's split of the state
        assert node_events(sim_ec2, "d-0-claim").count("InstanceStopping") == 1


def _sample(name: str, **label_values: str) -> float:
    return metrics.REGISTRY.get_sample_value(name, label_values) or 0.0


async def _runs(client: Client, workflow_id: str) -> list[str]:
    return [wf.run_id async for wf in client.list_workflows(f'WorkflowId = "{workflow_id}"')]


async def test_a_worker_killed_between_receive_and_delete_loses_nothing(sim_ec2: Simulator,
                                                                       moto_endpoint: str) -> None:
    """Worker A (a real process) receives the message, hangs on the Kubernetes API, and is SIGKILLed before
    it could start anything or delete the message; worker B then takes over the poll and handles it.

    On a dev server of its own: `python worker.py` also creates or updates the planner Schedule (a fixed
    id), which must not point the shared server's schedule at this test's task queue."""
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=find_binary("temporal"),
                                                data_converter=pydantic_data_converter,
                                                search_attributes=list(SEARCH_ATTRIBUTES))
    try:
        await _killed_worker_scenario(env.client, sim_ec2, moto_endpoint)
    finally:
        await env.shutdown()


async def _ready(port: int) -> bool:
    """The worker's /readyz answers 200 (not yet listening counts as not ready)."""
    try:
        async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{port}/readyz") as resp:
            return resp.status == 200
    except aiohttp.ClientError:
        return False


async def _killed_worker_scenario(temporal_client: Client, sim_ec2: Simulator, moto_endpoint: str) -> None:
    sqs, url = new_queue(moto_endpoint)
    tq = f"interruption-{uuid.uuid4().hex[:10]}"
    await ensure_interruption_poller(temporal_client, tq, FAST_POLL)
    env = {**os.environ, "NODEFLOW_TEMPORAL_ADDRESS": temporal_client.service_client.config.target_host,
           "NODEFLOW_TEMPORAL_NAMESPACE": temporal_client.namespace, "NODEFLOW_LOG_LEVEL": "WARNING"}
    metrics_port = free_port()
    worker_a = subprocess.Popen(
        [sys.executable, str(ROOT / "worker.py"), "--kubeconfig", sim_ec2.kubeconfig_path, "--task-queue", tq,
         "--ec2-endpoint", moto_endpoint, "--interruption-queue", url, "--no-watch",
         "--ami-id", sim_ec2.world.ec2.image_id(),  # not a listing of moto's Amazon images (2-4 s) per launch path
         "--metrics-port", str(metrics_port),
         "--no-instance-type-discovery"],  # the bundled catalog: 1,000+ types discovered per start cost CPU seconds
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # The cluster loads while worker A starts up; A turns ready once its cluster cache has synced (a
        # worker that cannot see the cluster must not count as available); then A's node lookup hangs.
        nodes = load_cluster(sim_ec2, [nodepool("default")], [NodeSpec("k-0", "default")])
        assert await eventually(lambda: _ready(metrics_port), timeout=30)
        sim_ec2.inject_faults(latency=8.0, resources=("nodes",))
        sqs.send_message(QueueUrl=url, MessageBody=state_change(nodes["k-0"]["instance"], "stopping"))
        assert await eventually(lambda: queue_depth(sqs, url) == (0, 1), timeout=30)
        # A's health endpoint: ready, and its /metrics already counts the message it is stuck on.
        async with aiohttp.ClientSession() as http:
            base = f"http://127.0.0.1:{metrics_port}"
            async with http.get(f"{base}/readyz") as resp:
                assert resp.status == 200
            async with http.get(f"{base}/metrics") as resp:
                assert 'nodeflow_interruption_messages_total{kind="StateChange"} 1.0' in await resp.text()
        worker_a.send_signal(signal.SIGKILL)
        worker_a.wait(10)
        sim_ec2.inject_faults()
        assert not await workflow_exists(temporal_client, f"terminate-{nodes['k-0']['uid']}")
        async with intake_worker(temporal_client, sim_ec2, moto_endpoint, sqs, url, task_queue=tq,
                                 start_poller=False):
            prog = await eventually(lambda: progress(temporal_client, nodes["k-0"]["uid"]), timeout=30)
            assert prog.reason == "InstanceStateChange"
            assert await eventually(lambda: queue_depth(sqs, url) == (0, 0))
    finally:
        if worker_a.poll() is None:
            worker_a.kill()
            worker_a.wait(10)
        await stop_workflows(temporal_client, tq)


async def test_a_message_that_keeps_failing_is_dropped_after_max_receives(
        temporal_client: Client, sim_ec2: Simulator, moto_endpoint: str, caplog: pytest.LogCaptureFixture) -> None:
    nodes = load_cluster(sim_ec2, [nodepool("broken")], [NodeSpec("f-0", "broken")])
    sqs, url = new_queue(moto_endpoint)
    caplog.set_level(logging.INFO, logger="activities.queue")
    sim_ec2.inject_faults(rate=1.0, codes=(500,), resources=("nodepools",))  # every NodePool read fails
    poll = FAST_POLL.model_copy(update={"visibility_timeout_seconds": 1, "max_receives": 2})
    sqs.send_message(QueueUrl=url, MessageBody=state_change(nodes["f-0"]["instance"], "stopping"))
    def queue_log() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name == "activities.queue"]

    def dropped() -> bool:
        return any("dropping interruption message" in m and "after 2 deliveries" in m for m in queue_log())

    async with intake_worker(temporal_client, sim_ec2, moto_endpoint, sqs, url, poll=poll):
        # the drop first: between the two deliveries moto's counts once read (0, 0) (a fresh-clone run of 7cb0026)
        assert await eventually(dropped), queue_log()
        assert await eventually(lambda: queue_depth(sqs, url) == (0, 0))
    messages = queue_log()
    assert any("left for redelivery" in m for m in messages), messages
    assert not await workflow_exists(temporal_client, f"terminate-{nodes['f-0']['uid']}")


async def test_spot_warning_tightens_a_termination_already_draining(
        temporal_client: Client, sim_ec2: Simulator, moto_endpoint: str) -> None:
    """A node draining gracefully (drift, PDB-blocked, no deadline) learns the spot deadline by signal."""
    nodes = load_cluster(sim_ec2, [nodepool("spot")], [NodeSpec("t-0", "spot", labels.CAPACITY_SPOT)])
    node = nodes["t-0"]
    sim_ec2.load_objects([
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": "db-0", "namespace": "default", "labels": {"app": "db"}},
         "spec": {"nodeName": "t-0", "containers": [{"name": "db", "image": "db"}]}},
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "db", "namespace": "default"},
         "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}}},
    ])
    sqs, url = new_queue(moto_endpoint)
    async with intake_worker(temporal_client, sim_ec2, moto_endpoint, sqs, url) as tq:
        await start_termination(temporal_client, TerminationInput(
            node_name="t-0", node_uid=node["uid"], node_pool="spot", provider_id=node["provider_id"],
            reason="Drifted", requested_by="test"), task_queue=tq)
        blocked = await eventually(lambda: _blocked_by_pdb(temporal_client, node["uid"]))
        assert blocked.deadline is None
        warned_at = datetime.now(UTC).replace(microsecond=0)
        sqs.send_message(QueueUrl=url, MessageBody=spot_warning(node["instance"], time_=warned_at))
        prog = await eventually(lambda: _with_deadline(temporal_client, node["uid"]))
        assert prog.deadline == warned_at + timedelta(minutes=2)
        assert prog.reason == "Drifted"  # the same run, not a new one
        assert len(await _runs(temporal_client, f"terminate-{node['uid']}")) == 1


async def _blocked_by_pdb(client: Client, uid: str) -> TerminationProgress | None:
    prog = await progress(client, uid)
    return prog if prog.blocking_pdbs else None


async def _with_deadline(client: Client, uid: str) -> TerminationProgress | None:
    prog = await progress(client, uid)
    return prog if prog.deadline is not None else None
