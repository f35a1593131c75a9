"""What `nodeflow status` shows of DisruptionWorkflows: phase, method and reason, nodes, replacements and their
state, and what each waits for, from the workflow's `progress` query (running ones) or its search attributes and
memo (finished ones, or when no worker answers).

Which step a disruption waits on is a typed `DisruptionWait`, so callers branch on it, never on text.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from enum import StrEnum
from functools import partial
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr
from pydantic.alias_generators import to_camel
from temporalio.client import Client, WorkflowExecution, WorkflowExecutionStatus

from activities.planning_runner import MEMO_METHOD, MEMO_NODES
from client.pollers import query_where_polled
from contracts import search_attributes as sa
from contracts.disruption import NO_RETURN_PHASES, DisruptionPhase, DisruptionProgress
from workflows.disruption import DisruptionWorkflow

QUERY_TIMEOUT = 5.0  # a worker that does not answer: the row keeps what the search attributes say
HOOK_ACTIVITY = "policy_pre_disruption_hook"
# a cancel changes nothing once the candidates are being deleted, or while it is already being rolled back
NOT_CANCELLABLE = NO_RETURN_PHASES | {DisruptionPhase.ROLLING_BACK}


class DisruptionWait(StrEnum):
    """The step a disruption is waiting on (from its phase, and its pending activities while it validates)."""

    START = "Start"
    VALIDATION = "Validation"
    PRE_DISRUPTION_ACK = "PreDisruptionAck"
    TAINT = "Taint"
    LAUNCH = "Launch"
    REPLACEMENTS_READY = "ReplacementsReady"
    ROLLBACK = "Rollback"
    TERMINATIONS = "Terminations"
    NOTHING = "Nothing"  # finished


_WAIT_OF_PHASE = {
    DisruptionPhase.PENDING: DisruptionWait.START, DisruptionPhase.VALIDATING: DisruptionWait.VALIDATION,
    DisruptionPhase.TAINTING: DisruptionWait.TAINT, DisruptionPhase.LAUNCHING: DisruptionWait.LAUNCH,
    DisruptionPhase.WAITING_READY: DisruptionWait.REPLACEMENTS_READY,
    DisruptionPhase.ROLLING_BACK: DisruptionWait.ROLLBACK, DisruptionPhase.TERMINATING: DisruptionWait.TERMINATIONS,
}


class ReplacementState(StrEnum):
    READY = "Ready"
    NOT_READY = "NotReady"


class ReplacementRow(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    node_claim: str
    instance_type: str | None = None
    zone: str | None = None
    capacity_type: str | None = None
    state: ReplacementState


class DisruptionStatus(BaseModel):
    """One DisruptionWorkflow as `nodeflow status` prints it (`-o json` writes the camelCase aliases)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    kind: str = "Disruption"
    workflow_id: str
    status: str | None = None
    phase: DisruptionPhase | None = None
    method: str | None = None
    reason: str | None = None
    node_pool: str | None = None
    nodes: list[str] = Field(default_factory=list)
    replacements: list[ReplacementRow] = Field(default_factory=list)
    ready_deadline: datetime | None = None
    waiting_for: DisruptionWait | None = None
    cancellable: bool = False  # before the point of no return: `nodeflow cancel NODE` rolls it back
    cancel_requested: bool = False
    error: str | None = None
    note: str | None = None  # how the command carried out differs from the one planned (no replacement)
    started_at: datetime | None = None
    query_error: str | None = None
    _run_id: str | None = PrivateAttr(default=None)  # for the query; not serialised
    _task_queue: str | None = PrivateAttr(default=None)  # whose pollers say whether a worker can answer

    @property
    def running(self) -> bool:
        return self.status == WorkflowExecutionStatus.RUNNING.name


def disruption_query(node: str | None = None, running_only: bool = True, first_node_only: bool = False) -> str:
    """Running disruptions, plus with `running_only=False` the finished ones whose first node is NODE (the
    NodeflowNode attribute holds a command's first node; the memo lists them all, so running ones are filtered
    by it after listing). `first_node_only`: only those whose NodeflowNode is NODE."""
    base = "WorkflowType = 'DisruptionWorkflow'"
    if node and first_node_only:
        return f"{base} AND {sa.NODE.name} = '{node.replace(chr(39), '')}'"
    if running_only:
        return f"{base} AND ExecutionStatus = 'Running'"
    if node:
        return f"{base} AND (ExecutionStatus = 'Running' OR {sa.NODE.name} = '{node.replace(chr(39), '')}')"
    return base


async def list_disruptions(client: Client, node: str | None = None, running_only: bool = True
                           ) -> list[DisruptionStatus]:
    """Disruptions (running ones, or all with `running_only=False`) that include NODE when one is given."""
    rows = []
    async for wf in client.list_workflows(disruption_query(node, running_only)):
        rows.append(await _from_listing(wf))
    if node:  # the listing's nodes come from the memo; a row without one is checked again after its query
        rows = [r for r in rows if not r.nodes or node in r.nodes]
    await query_where_polled(client, ((r._task_queue, partial(_query, client, r), partial(_unanswered, r))
                                      for r in rows if r.running))
    return [r for r in rows if not node or node in r.nodes]


async def _from_listing(wf: WorkflowExecution) -> DisruptionStatus:
    attrs = wf.typed_search_attributes
    memo = await wf.memo()
    phase = _phase(attrs.get(sa.PHASE))
    nodes = list(memo.get(MEMO_NODES) or ([attrs.get(sa.NODE)] if attrs.get(sa.NODE) else []))
    row = DisruptionStatus(workflow_id=wf.id, status=wf.status.name if wf.status else None, phase=phase,
                           method=memo.get(MEMO_METHOD), reason=attrs.get(sa.REASON),
                           node_pool=attrs.get(sa.NODE_POOL), nodes=nodes, started_at=wf.start_time)
    row.waiting_for = _wait(phase, row.running)
    row.cancellable = row.running and phase is not None and phase not in NOT_CANCELLABLE
    row._run_id, row._task_queue = wf.run_id, wf.task_queue
    return row


def _unanswered(row: DisruptionStatus, why: str) -> None:
    row.query_error = why


async def _query(client: Client, row: DisruptionStatus) -> None:
    """Fill the row from the workflow's `progress` query; on no answer keep the listing's view and say why."""
    handle = client.get_workflow_handle_for(DisruptionWorkflow.run, row.workflow_id,
                                            run_id=row._run_id)
    try:
        p: DisruptionProgress = await asyncio.wait_for(handle.query(DisruptionWorkflow.progress), QUERY_TIMEOUT)
    except Exception as exc:  # no worker answering: the search attributes still tell the phase
        row.query_error = str(exc) or type(exc).__name__
        return
    ready = set(p.ready)
    row.phase, row.method, row.reason = p.phase, p.method or row.method, p.reason or row.reason
    row.node_pool, row.nodes = p.node_pool or row.node_pool, p.nodes or row.nodes
    row.replacements = [ReplacementRow(node_claim=r.node_claim, instance_type=r.instance_type, zone=r.zone,
                                       capacity_type=r.capacity_type,
                                       state=ReplacementState.READY if r.node_claim in ready
                                       else ReplacementState.NOT_READY) for r in p.replacements]
    row.ready_deadline, row.cancel_requested, row.error = p.ready_deadline, p.cancel_requested, p.error
    row.note = p.note
    row.cancellable = p.phase not in NOT_CANCELLABLE and not p.cancel_requested
    row.waiting_for = _wait(p.phase, True)
    if p.phase == DisruptionPhase.VALIDATING and await _awaiting_hook(handle):
        row.waiting_for = DisruptionWait.PRE_DISRUPTION_ACK


async def _awaiting_hook(handle: Any) -> bool:
    """While validating, a pending pre-disruption hook call means the pool's policy waits for its answer or ack."""
    try:
        desc = await asyncio.wait_for(handle.describe(), QUERY_TIMEOUT)
    except Exception:
        return False
    return any(a.activity_type.name == HOOK_ACTIVITY for a in desc.raw_description.pending_activities)


def _phase(value: str | None) -> DisruptionPhase | None:
    try:
        return DisruptionPhase(value) if value else None
    except ValueError:
        return None


def _wait(phase: DisruptionPhase | None, running: bool) -> DisruptionWait | None:
    if not running:
        return DisruptionWait.NOTHING
    return _WAIT_OF_PHASE.get(phase) if phase is not None else None
