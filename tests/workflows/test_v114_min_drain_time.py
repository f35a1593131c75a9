"""MinDrainTime (Karpenter v1.10, kubernetes-sigs/karpenter#2709; docs/semantics.md §9.5) in TerminationWorkflow, on
the time-skipping server.

With a NodeClaim, the drain activity is asked not to count the node drained before 5 s after the drain began
(`drained_not_before`): it waits and looks again then, so a pod bound in the moment before kube-scheduler saw the
disrupted taint is evicted too (the activity's side: tests/activities/test_drain_minimum.py). A node without a
NodeClaim is not held. Executions recorded before the one-marker patch hold it with a timer and a second drain
(tests/histories, replayed).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from support.termination_fakes import after_drain
from temporalio import activity
from temporalio.worker import Worker

from contracts.termination import (
    DrainInput,
    DrainResult,
    PodState,
    PrepareInput,
    PrepareResult,
    TerminationInput,
    TerminationPhase,
)
from workflows.termination import MIN_DRAIN_TIME, TerminationWorkflow, workflow_id

WEB = PodState(namespace="default", name="web-1")


@dataclass
class Node:
    """A node whose first `blocked` drains are refused (a PDB), and a pod that lands after the first drain."""

    claim: bool = True
    blocked: int = 0
    late_pod: bool = False
    drains: list[datetime] = field(default_factory=list)
    floors: list[datetime | None] = field(default_factory=list)
    evicted: list[str] = field(default_factory=list)

    def activities(self, clock: object) -> list:
        node = self

        @activity.defn(name="termination.prepare")
        async def prepare(inp: PrepareInput) -> PrepareResult:
            return PrepareResult(node_exists=True, node_claim_name="c" if node.claim else None,
                                 node_claim_exists=node.claim, node_pool="default",
                                 provider_id="aws:///us-east-1a/i-0abc", pods=[WEB])

        @activity.defn(name="termination.drain")
        async def drain(inp: DrainInput) -> DrainResult:
            node.drains.append(await clock.get_current_time())  # type: ignore[attr-defined]
            node.floors.append(inp.drained_not_before)
            if len(node.drains) <= node.blocked:
                return DrainResult(drained=False, pods=[WEB.model_copy(update={"status": "Blocked"})])
            # the drain evicts web-1; held to its floor, it sees a pod bound just before the taint was seen too
            names = ["web-1"] if len(node.drains) == node.blocked + 1 else []
            if node.late_pod and inp.drained_not_before is not None:
                names.append("late-1")
            node.evicted += names
            return DrainResult(drained=True, evicted=len(names))

        return [prepare, drain, *after_drain()]


async def _run(ts_env, node: Node):
    uid = str(uuid.uuid4())
    inp = TerminationInput(node_name=f"n-{uid[:6]}", node_uid=uid, node_claim_name="c" if node.claim else None,
                           node_pool="default", provider_id="aws:///us-east-1a/i-0abc", reason="Drifted",
                           requested_by="disrupt-x")
    tq = f"tq-{uuid.uuid4()}"
    async with Worker(ts_env.client, task_queue=tq, workflows=[TerminationWorkflow],
                      activities=node.activities(ts_env)):
        handle = await ts_env.client.start_workflow(TerminationWorkflow.run, inp, id=workflow_id(uid), task_queue=tq)
        return await handle.result()


async def test_the_drain_is_held_to_the_minimum_time(ts_env) -> None:
    node = Node(late_pod=True)
    result = await _run(ts_env, node)
    assert result.phase == TerminationPhase.TERMINATED
    # one drain, not counted drained before 5 s from the drain's start in the workflow (a moment before it ran)
    floor = node.floors[0]
    assert len(node.drains) == 1 and floor is not None
    assert MIN_DRAIN_TIME - timedelta(seconds=1) <= floor - node.drains[0] <= MIN_DRAIN_TIME
    assert node.evicted == ["web-1", "late-1"] and result.pods_evicted == 2


async def test_a_drain_longer_than_the_minimum_is_not_held(ts_env) -> None:
    node = Node(blocked=1)  # refused once: the retry comes at the next window, minutes later
    result = await _run(ts_env, node)
    assert result.phase == TerminationPhase.TERMINATED
    assert len(node.drains) == 2 and node.drains[1] - node.drains[0] > MIN_DRAIN_TIME


async def test_without_a_nodeclaim_there_is_no_minimum(ts_env) -> None:
    node = Node(claim=False)
    result = await _run(ts_env, node)
    assert result.phase == TerminationPhase.TERMINATED and node.floors == [None]
