"""activities/candidates.py on a command of many nodes: taint, untaint, start and await terminations with several
calls in flight (activities/fan_out.py), against the emulated API server and a real Temporal server.

One at a time, tainting the 300 empty nodes of one Emptiness command outlasted the activity's 30 s timeout three times
in Karpenter's hostname-spreading-xl scenario, and starting their terminations twice.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

import pytest
from temporalio import workflow
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from activities import fan_out
from activities.candidates import CandidateActivities
from api import labels
from bench.clusters import node_objects
from contracts.disruption import AwaitTerminationsInput, CancelHold, NodeRef, TaintInput, TerminationsInput
from contracts.errors import ErrorType
from gateways.kube import KubeClient
from simulator.server import Simulator

MANY = 3 * fan_out.THREADS + 1


def _refs(n: int) -> list[NodeRef]:
    return [NodeRef(name=f"n{i}", uid=f"uid-node-n{i}", node_claim=f"n{i}-claim", node_pool="default")
            for i in range(n)]


@pytest.fixture
def kube(sim: Simulator) -> KubeClient:
    for i in range(MANY):
        sim.load_objects(node_objects(f"n{i}", "m5.large"))
    return KubeClient(sim.api_client())


def _tainted(kube: KubeClient, name: str) -> bool:
    return labels.disrupted_taint_in(((kube.get_node(name) or {}).get("spec") or {}).get("taints"))


def _reason(kube: KubeClient, claim: str) -> str | None:
    conds = ((kube.get_node_claim(claim) or {}).get("status") or {}).get("conditions") or []
    return next((c.get("reason") for c in conds if c["type"] == "DisruptionReason"), None)


async def _no_start(_inp: Any, _tq: str) -> str:
    raise AssertionError("not used")


async def test_many_candidates_are_tainted_marked_and_released(kube: KubeClient) -> None:
    acts, env, refs = CandidateActivities(kube, _no_start), ActivityEnvironment(), _refs(MANY)
    assert await env.run(acts.taint_candidates, TaintInput(nodes=refs, reason="Empty")) == [r.name for r in refs]
    assert all(_tainted(kube, r.name) and _reason(kube, r.node_claim or "") == "Empty" for r in refs)
    hold = CancelHold.model_validate({"cancelled_at": "2026-12-01T12:00:00Z", "held_until": "2026-12-01T12:30:00Z"})
    released = await env.run(acts.untaint_candidates, TaintInput(nodes=refs, reason="Empty", hold=hold))
    assert released == [r.name for r in refs]
    for r in refs:
        node = kube.get_node(r.name) or {}
        assert not _tainted(kube, r.name) and _reason(kube, r.node_claim or "") is None
        assert labels.DISRUPTION_HELD_UNTIL_ANNOTATION in node["metadata"]["annotations"]


async def test_a_vanished_candidate_among_many_fails_the_command_by_name(kube: KubeClient) -> None:
    refs = [*_refs(MANY), NodeRef(name="gone", uid="uid-gone")]
    with pytest.raises(ApplicationError) as err:
        await ActivityEnvironment().run(CandidateActivities(kube, _no_start).taint_candidates,
                                        TaintInput(nodes=refs, reason="Empty"))
    assert err.value.type == ErrorType.CANDIDATE_GONE.value and "gone" in str(err.value)
    assert err.value.non_retryable


@workflow.defn(name="FanOutTermination")
class _Done:
    @workflow.run
    async def run(self, node: str) -> str:
        await workflow.sleep(timedelta(milliseconds=200))
        return node


async def test_terminations_of_many_start_together_once_each_and_are_awaited(
        kube: KubeClient, temporal_client: Client) -> None:
    tq, refs, in_flight, most, starts = f"tq-{uuid.uuid4()}", _refs(MANY), [0], [0], []

    async def start(inp: Any, task_queue: str) -> str:
        in_flight[0] += 1
        most[0] = max(most[0], in_flight[0])
        try:
            await asyncio.sleep(0.02)
            wid = f"fan-out-{tq}-{inp.node_uid}"
            await temporal_client.start_workflow(_Done.run, inp.node_name, id=wid, task_queue=task_queue)
            starts.append(inp.node_name)
            return wid
        finally:
            in_flight[0] -= 1

    acts = CandidateActivities(kube, start, temporal_client)
    env = ActivityEnvironment()
    async with Worker(temporal_client, task_queue=tq, workflows=[_Done], workflow_runner=UnsandboxedWorkflowRunner()):
        ids = await env.run(acts.start_terminations, TerminationsInput(nodes=refs, reason="Empty", task_queue=tq,
                                                                        requested_by="test"))
        assert ids == [f"fan-out-{tq}-{r.uid}" for r in refs]  # in the command's order
        assert sorted(starts) == sorted(r.name for r in refs)  # each once
        assert 1 < most[0] <= fan_out.STARTS
        done = await env.run(acts.await_terminations, AwaitTerminationsInput(workflow_ids=ids, poll_seconds=0.1))
    assert done == ids


def test_each_keeps_order_and_raises_the_first_failure() -> None:
    assert fan_out.each(lambda x: x * 2, list(range(20)), threads=4) == [x * 2 for x in range(20)]

    def boom(x: int) -> int:
        if x == 7:
            raise ValueError("seven")
        return x

    with pytest.raises(ValueError, match="seven"):
        fan_out.each(boom, list(range(20)), threads=4)


async def test_each_async_lets_every_call_end_before_it_raises() -> None:
    ended: list[int] = []

    async def call(x: int) -> int:
        await asyncio.sleep(0.01 * (x % 3))
        ended.append(x)
        if x == 2:
            raise ValueError("two")
        return x

    with pytest.raises(ValueError, match="two"):
        await fan_out.each_async(call, list(range(10)), limit=3)
    assert sorted(ended) == list(range(10))
