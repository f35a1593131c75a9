"""Invalid `force` / `cancel` payloads sent to a running TerminationWorkflow (dev server, fake activities).

Each gets a clear rejection (WorkflowUpdateFailedError naming the problem), nothing is written to history for
a rejected update, and the workflow keeps draining; a valid force afterwards still finishes it.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from support.termination_fakes import after_drain
from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowUpdateFailedError
from temporalio.worker import Worker

from contracts.termination import (
    DeletePodsInput,
    DeletePodsResult,
    DrainInput,
    DrainResult,
    ForceRequest,
    PodState,
    PrepareInput,
    PrepareResult,
    TerminationInput,
    TerminationPhase,
    UntaintInput,
)
from workflows.termination import TerminationWorkflow, workflow_id

POD = PodState(namespace="default", name="web-0")


class FakeNode:
    """Activities under the real names: the drain blocks (like a PDB) until pods are force-deleted."""

    def __init__(self) -> None:
        self.pods_deleted = asyncio.Event()

    def activities(self) -> list[Any]:
        node = self

        @activity.defn(name="termination.prepare")
        async def prepare(inp: PrepareInput) -> PrepareResult:
            return PrepareResult(node_exists=True, node_claim_name="claim", node_claim_exists=True,
                                 provider_id="aws:///us-east-1a/i-0abc", node_pool="default", pods=[POD])

        @activity.defn(name="termination.drain")
        async def drain(inp: DrainInput) -> DrainResult:
            while not node.pods_deleted.is_set():
                activity.heartbeat()
                await asyncio.sleep(0.1)
            return DrainResult(drained=True)

        @activity.defn(name="termination.delete_pods")
        async def delete_pods(inp: DeletePodsInput) -> DeletePodsResult:
            node.pods_deleted.set()
            return DeletePodsResult(deleted=[POD.key])

        @activity.defn(name="termination.untaint")
        async def untaint(inp: UntaintInput) -> None:
            return None

        return [prepare, drain, untaint, *after_drain(delete=delete_pods)]


def _chain(exc: BaseException | None) -> str:
    """Messages of an exception and its causes (the SDK wraps a decoding failure around pydantic's error)."""
    parts = []
    while exc is not None:
        parts.append(str(exc))
        exc = exc.__cause__ or getattr(exc, "cause", None)
    return " <- ".join(parts)


# A rejected update's workflow task is dropped, unless the server had to keep it: under load a speculative task
# that times out or meets another event is written as an ordinary one. Those events are the task's, not the
# update's; an accepted, rejected or completed update would show as an update event.
_TASK_BOOKKEEPING = {EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
                     EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT}


BAD_FORCE: list[tuple[Any, str]] = [
    ({"reason": ""}, "reason is required"),
    ({"reason": "   "}, "reason is required"),
    ({}, "reason is required"),
    ({"reason": 123}, "reason\n  Input should be a valid string"),
    ({"reason": ["a"]}, "reason\n  Input should be a valid string"),
    ({"reason": None}, "reason\n  Input should be a valid string"),
    (42, "ForceRequest\n  Input should be an object"),
    ("please", "ForceRequest\n  Input should be an object"),
    ([1, 2], "ForceRequest\n  Input should be an object"),
    (None, "a ForceRequest is required"),
]


@pytest.mark.timeout(120)
async def test_invalid_updates_are_rejected_and_the_workflow_keeps_going(temporal_client: Client) -> None:
    node = FakeNode()
    tq = f"fuzz-updates-{uuid.uuid4()}"
    uid = str(uuid.uuid4())
    inp = TerminationInput(node_name=f"node-{uid[:6]}", node_uid=uid, node_claim_name="claim",
                           node_pool="default", provider_id="aws:///us-east-1a/i-0abc", requested_by="disruption")
    async with Worker(temporal_client, task_queue=tq, workflows=[TerminationWorkflow],
                      activities=node.activities()):
        typed = await temporal_client.start_workflow(TerminationWorkflow.run, inp, id=workflow_id(uid),
                                                     task_queue=tq)
        untyped = temporal_client.get_workflow_handle(typed.id)
        for _ in range(100):
            if (await typed.query(TerminationWorkflow.progress)).phase == TerminationPhase.DRAINING:
                break
            await asyncio.sleep(0.1)
        before = len((await typed.fetch_history()).events)
        for payload, expected in BAD_FORCE:
            with pytest.raises(WorkflowUpdateFailedError) as err:
                await asyncio.wait_for(untyped.execute_update("force", payload), 20)
            message = _chain(err.value)
            assert expected in message, (payload, message)
        for payload in (7, "x", [None]):
            with pytest.raises(WorkflowUpdateFailedError):
                await asyncio.wait_for(untyped.execute_update("cancel", payload), 20)
        with pytest.raises(WorkflowUpdateFailedError):
            await asyncio.wait_for(untyped.execute_update("no_such_update", {"reason": "x"}), 20)
        added = (await typed.fetch_history()).events[before:]
        assert [e.event_type for e in added if e.event_type not in _TASK_BOOKKEEPING] == [], \
            "rejected updates leave no trace in history"
        # signals cannot be rejected: invalid ones must be ignored ({} is a valid cancel: its reason is optional)
        for names, payloads in ((("force", "force_signal"), (None, 42, {"reason": 5}, {"reason": ""})),
                                (("cancel", "cancel_signal"), (None, 42, {"reason": 5}, [1]))):
            for payload in payloads:
                for name in names:
                    await untyped.signal(name, payload)
        await untyped.signal("no_such_signal", {"reason": "x"})  # logged and listed, never acted on
        await asyncio.sleep(1.0)

        desc = await typed.describe()
        assert desc.status == WorkflowExecutionStatus.RUNNING
        progress = await typed.query(TerminationWorkflow.progress)
        assert progress.phase == TerminationPhase.DRAINING and progress.forced is None and progress.cancelled is None
        assert progress.unknown_signals == ["no_such_signal"]
        history = await typed.fetch_history()
        failed_tasks = [e for e in history.events if e.HasField("workflow_task_failed_event_attributes")]
        assert not failed_tasks, "a bad payload must not fail workflow tasks"

        res = await typed.execute_update(TerminationWorkflow.force, ForceRequest(reason="fuzz done"))
        assert res.accepted
        result = await asyncio.wait_for(typed.result(), 30)
    assert result.phase == TerminationPhase.TERMINATED
