"""The interruption intake's client side: the poller workflow's bootstrap and the starts its dispatcher makes.

The poller has one fixed workflow id per task queue, started with USE_EXISTING by every worker replica at
start-up, so exactly one poll loop runs however many workers there are; its activity runs on any of them.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from client.termination import start_termination
from contracts import search_attributes as sa
from contracts.interruption import POLLER_WORKFLOW_ID, PollerInput, PollInput, PrespinInput
from contracts.termination import DeadlineRequest, TerminationInput
from workflows import summaries
from workflows.interruption import InterruptionPollerWorkflow, SpotPrespinWorkflow

log = logging.getLogger(__name__)

# The two idempotent starts the dispatcher (runtime/interruption.py) is given, bound by temporal_starters.
StartTermination = Callable[[TerminationInput], Awaitable[Any]]
StartPrespin = Callable[[PrespinInput], Awaitable[Any]]


def poller_workflow_id(task_queue: str) -> str:
    """`nodeflow-interruption-poller` on the production queue; suffixed elsewhere so tests never share one."""
    return sa.queue_scoped(POLLER_WORKFLOW_ID, task_queue)


def temporal_starters(client: Client, task_queue: str) -> tuple[StartTermination, StartPrespin]:
    """The two idempotent starts the dispatcher makes, bound to a client and task queue."""
    async def terminate(inp: TerminationInput) -> None:
        if inp.deadline is None:
            await start_termination(client, inp, task_queue=task_queue)
            return
        # Signal-with-start: a termination already draining gracefully (e.g. for drift) adopts the deadline.
        await start_termination(client, inp, signal="tighten_deadline", task_queue=task_queue,
                                signal_arg=DeadlineRequest(deadline=inp.deadline, reason=inp.reason))

    async def prespin(inp: PrespinInput) -> None:
        try:
            await client.start_workflow(
                SpotPrespinWorkflow.run, inp, id=inp.workflow_id, task_queue=task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                # A replacement was already launched for this node: a redelivered warning must not launch again.
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                **summaries.prespin(inp).start_kwargs(),
            )
        except WorkflowAlreadyStartedError:
            log.info("pre-spin for %s already ran", inp.node_name)

    return terminate, prespin


async def ensure_interruption_poller(client: Client, task_queue: str, poll: PollInput | None = None
                                     ) -> WorkflowHandle[Any, Any]:
    """Start the poller, or join the one already running. A running poller keeps the settings it was started
    with (across continue-as-new); terminate it to apply new ones, and the next worker start restarts it."""
    return await client.start_workflow(
        InterruptionPollerWorkflow.run, PollerInput(poll=poll or PollInput()), id=poller_workflow_id(task_queue),
        task_queue=task_queue, id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        **summaries.interruption_poller(task_queue).kwargs(),
    )
