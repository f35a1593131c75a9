"""`nodeflow rollout status|resume|abort NODEPOOL` and `nodeflow approve NODE`: find the pool's DriftRolloutWorkflow
(or the node's DisruptionWorkflow) and query or update it (docs/semantics.md §15)."""

from __future__ import annotations

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle, WorkflowUpdateFailedError

from activities.planning_runner import MEMO_NODES
from contracts import search_attributes as sa
from contracts.policy import RolloutStatus
from workflows.disruption import DisruptionWorkflow
from workflows.rollout import DriftRolloutWorkflow


class ControlRejected(Exception):
    """The workflow refused the update (e.g. resume of a rollout that is not halted); the message says why."""


def _quote(value: str) -> str:
    return value.replace("'", "")


async def find_rollout(client: Client, pool: str) -> WorkflowHandle | None:
    """The pool's running rollout, else its most recent one; None when it never had one."""
    query = f"WorkflowType = 'DriftRolloutWorkflow' AND {sa.NODE_POOL.name} = '{_quote(pool)}'"
    latest = None
    async for wf in client.list_workflows(query):
        if wf.status == WorkflowExecutionStatus.RUNNING:
            return client.get_workflow_handle_for(DriftRolloutWorkflow.run, wf.id, run_id=wf.run_id)
        if latest is None or (wf.start_time and latest.start_time and wf.start_time > latest.start_time):
            latest = wf
    if latest is None:
        return None
    return client.get_workflow_handle_for(DriftRolloutWorkflow.run, latest.id, run_id=latest.run_id)


async def rollout_status(client: Client, pool: str) -> RolloutStatus | None:
    handle = await find_rollout(client, pool)
    return None if handle is None else await handle.query(DriftRolloutWorkflow.status)


async def control_rollout(client: Client, pool: str, action: str, reason: str) -> str | None:
    """`resume` or `abort` the pool's running rollout; None when none runs."""
    handle = await find_rollout(client, pool)
    if handle is None or (await handle.describe()).status != WorkflowExecutionStatus.RUNNING:
        return None
    update = DriftRolloutWorkflow.resume if action == "resume" else DriftRolloutWorkflow.abort
    try:
        return await handle.execute_update(update, reason)
    except WorkflowUpdateFailedError as exc:
        raise ControlRejected(getattr(exc.cause, "message", None) or str(exc.cause or exc)) from exc


async def approve_disruption(client: Client, node: str, reason: str) -> str | None:
    """Ack the pre-disruption hook of the running disruption that includes `node`; None when there is none."""
    async for wf in client.list_workflows("WorkflowType = 'DisruptionWorkflow' AND ExecutionStatus = 'Running'"):
        if node not in ((await wf.memo()).get(MEMO_NODES) or []):
            continue
        handle = client.get_workflow_handle_for(DisruptionWorkflow.run, wf.id, run_id=wf.run_id)
        try:
            return f"{wf.id}: " + await handle.execute_update(DisruptionWorkflow.approve, reason)
        except WorkflowUpdateFailedError as exc:
            raise ControlRejected(getattr(exc.cause, "message", None) or str(exc.cause or exc)) from exc
    return None
