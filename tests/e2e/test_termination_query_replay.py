"""A query while a termination's first local activities run (what `nodeflow status` does in a drain's first
seconds) must leave a history that replays: a worker restart replays it the same way."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from e2e.termination_helpers import PodSpec, cluster_objects, ec2_client, launch_instances, running_worker
from kubernetes import client as k8s
from support.replay import replay_failure
from temporalio.client import Client

from client.termination import start_termination
from contracts.termination import CancelRequest, TerminationInput, TerminationPhase
from workflows.termination import TerminationWorkflow

pytestmark = pytest.mark.e2e


async def _query_until(handle: Any, stop: asyncio.Event) -> None:
    while not stop.is_set():
        with contextlib.suppress(Exception):
            await handle.query(TerminationWorkflow.progress)
        await asyncio.sleep(0.005)


async def test_queries_during_the_first_local_activities_leave_a_replayable_history(
        temporal_client: Client, sim: Any, moto_endpoint: str) -> None:
    ec2 = ec2_client(moto_endpoint)
    (i1,) = launch_instances(ec2, 1)
    sim.load_objects(cluster_objects({"n1": i1}, [PodSpec("web", "n1", count=2, grace=5)], pdbs={"web": 2}))
    api = sim.api_client()
    node = k8s.CoreV1Api(api).read_node("n1")
    failures = []
    async with running_worker(temporal_client, sim, moto_endpoint) as tq:
        for _ in range(3):
            stop = asyncio.Event()
            handle = await start_termination(temporal_client, TerminationInput(
                node_name="n1", node_uid=node.metadata.uid, node_claim_name="n1-claim", node_pool="default",
                provider_id=node.spec.provider_id, reason="Underutilized", requested_by="query-test"),
                task_queue=tq)
            spam = asyncio.create_task(_query_until(handle, stop))
            await asyncio.sleep(1.5)
            stop.set()
            await spam
            await handle.execute_update(TerminationWorkflow.cancel, CancelRequest(reason="test"))
            assert (await handle.result()).phase == TerminationPhase.CANCELLED
            failure = await replay_failure(await handle.fetch_history())
            if failure is not None:
                failures.append(failure[:300])
    api.close()
    assert not failures, failures
