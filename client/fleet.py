"""Starting and steering fleet rollouts (docs/fleet.md): `nodeflow fleet rollout ...` goes through here.

One rollout per change: its id comes from the change, so a second start of the same change finds the first. A
different rollout over a cluster and NodePool that a running one already rolls is refused, naming it.
"""

from __future__ import annotations

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from api.fleet import FleetRollout
from contracts.fleet import FLEET_TASK_QUEUE, MEMO_TARGETS, FleetInput, FleetSettings, FleetStatus
from workflows import summaries
from workflows.fleet import FleetRolloutWorkflow

RUNNING = "WorkflowType = 'FleetRolloutWorkflow' AND ExecutionStatus = 'Running'"


class FleetConflict(Exception):
    """Another running rollout already touches some of these clusters' NodePools."""


class FleetNotFound(Exception):
    """No fleet rollout has this id."""


class FleetRejected(Exception):
    """The rollout refused the update (e.g. resume of one that is neither halted nor paused)."""


def _targets(rollout: FleetRollout) -> list[str]:
    return [f"{cluster}/{pool}" for cluster, pool in rollout.targets()]


async def _still_running(client: Client, workflow_id: str) -> bool:
    """Visibility lags behind the history: a rollout that ended a moment ago is still listed as Running. The latest
    run's own description is read from the history, so it decides (a conflict over an ended rollout refused the next
    one; a run that continued as new is still the rollout)."""
    desc = await client.get_workflow_handle(workflow_id).describe()
    return desc.status == WorkflowExecutionStatus.RUNNING


async def _conflict(client: Client, rollout: FleetRollout) -> WorkflowHandle | None:
    """The running rollout of this same change (returned), or a FleetConflict for another over our pools."""
    ours = set(_targets(rollout))
    async for wf in client.list_workflows(RUNNING):
        if wf.id == rollout.rollout_id:
            if not await _still_running(client, wf.id):
                continue
            return client.get_workflow_handle_for(FleetRolloutWorkflow.run, wf.id)
        overlap = sorted(ours & set((await wf.memo()).get(MEMO_TARGETS) or []))
        if overlap and await _still_running(client, wf.id):
            shown = ", ".join(overlap[:5]) + (f" and {len(overlap) - 5} more" if len(overlap) > 5 else "")
            raise FleetConflict(f"fleet rollout {wf.id} is already rolling {shown}; wait for it to end, or "
                                f"`nodeflow fleet rollout abort {wf.id}`")
    return None


async def start_fleet_rollout(client: Client, rollout: FleetRollout, task_queue: str = FLEET_TASK_QUEUE,
                              settings: FleetSettings | None = None) -> tuple[WorkflowHandle, bool]:
    """(handle, started now). A running rollout of the same change is returned as it is (not started again)."""
    existing = await _conflict(client, rollout)
    if existing is not None:
        return existing, False
    try:
        handle = await client.start_workflow(
            FleetRolloutWorkflow.run, FleetInput(rollout=rollout, settings=settings or FleetSettings()),
            id=rollout.rollout_id, task_queue=task_queue, memo={MEMO_TARGETS: _targets(rollout)},
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL, **summaries.fleet(rollout).start_kwargs())
    except WorkflowAlreadyStartedError:
        return client.get_workflow_handle_for(FleetRolloutWorkflow.run, rollout.rollout_id), False
    return handle, True


async def fleet_status(client: Client, rollout_id: str) -> FleetStatus:
    handle = client.get_workflow_handle_for(FleetRolloutWorkflow.run, rollout_id)
    try:
        desc = await handle.describe()
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise FleetNotFound(f"no fleet rollout {rollout_id}") from exc
        raise
    if desc.status == WorkflowExecutionStatus.COMPLETED:
        return await handle.result()
    return await handle.query(FleetRolloutWorkflow.status)


async def control_fleet(client: Client, rollout_id: str, action: str, reason: str) -> str:
    """`pause`, `resume` or `abort` a running rollout."""
    handle = client.get_workflow_handle_for(FleetRolloutWorkflow.run, rollout_id)
    update = {"pause": FleetRolloutWorkflow.pause, "resume": FleetRolloutWorkflow.resume,
              "abort": FleetRolloutWorkflow.abort}[action]
    try:
        return await handle.execute_update(update, reason)
    except WorkflowUpdateFailedError as exc:
        raise FleetRejected(getattr(exc.cause, "message", None) or str(exc.cause or exc)) from exc
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise FleetNotFound(f"no running fleet rollout {rollout_id}") from exc
        raise
