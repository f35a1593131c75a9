"""Starting terminations: the one entry point the watcher, disruptions, interruptions and the CLI share.

`start_termination()` is idempotent per node: id `terminate-<node uid>`, conflict policy USE_EXISTING, so
the deletion watcher, a disruption and an interruption asking at once share one workflow.
"""

from __future__ import annotations

from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from contracts import search_attributes as sa
from contracts.termination import TerminationInput, TerminationPhase
from workflows import summaries
from workflows.termination import TerminationWorkflow, workflow_id


async def start_termination(client: Client, inp: TerminationInput, signal: str | None = None,
                            signal_arg: Any = None, task_queue: str = sa.TASK_QUEUE
                            ) -> WorkflowHandle[TerminationWorkflow, Any]:
    """Start (or join) `terminate-<uid>`. With `signal` (e.g. "force_signal") it is signal-with-start.

    A running termination is joined (USE_EXISTING). A finished one is not run again, so a watcher pass that
    saw the node a moment before its finalizer went cannot start a second run; only a termination that ended
    Cancelled (the node lives on) may be started anew.
    """
    try:
        return await _start(client, inp, signal, signal_arg, task_queue,
                            WorkflowIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY)
    except WorkflowAlreadyStartedError:
        previous = client.get_workflow_handle_for(TerminationWorkflow.run, workflow_id(inp.node_uid))
        result = await previous.result()
        if result.phase != TerminationPhase.CANCELLED:
            return previous
        return await _start(client, inp, signal, signal_arg, task_queue, WorkflowIDReusePolicy.ALLOW_DUPLICATE)


async def _start(client: Client, inp: TerminationInput, signal: str | None, signal_arg: Any, task_queue: str,
                 reuse: WorkflowIDReusePolicy) -> WorkflowHandle[TerminationWorkflow, Any]:
    kwargs: dict[str, Any] = {}
    if signal:
        kwargs["start_signal"] = signal
        kwargs["start_signal_args"] = [signal_arg] if signal_arg is not None else []
    return await client.start_workflow(
        TerminationWorkflow.run, inp, id=workflow_id(inp.node_uid), task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING, id_reuse_policy=reuse,
        request_eager_start=not signal,  # the watcher shares the worker's client: first task without a poll
        **summaries.termination(inp).start_kwargs(), **kwargs,
    )


def termination_query(node: str | None = None, running_only: bool = True) -> str:
    parts = ["WorkflowType = 'TerminationWorkflow'"]
    if running_only:
        parts.append("ExecutionStatus = 'Running'")
    if node:
        parts.append(f"{sa.NODE.name} = '{node.replace(chr(39), '')}'")
    return " AND ".join(parts)
