"""`nodeflow cancel NODE [--reason]`: call off NODE's termination, or the disruption it is part of, before the
point of no return. A termination is untainted; a disruption is rolled back (taint removed, replacements that
never became Ready deleted)."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from starter.cmd_force import send_update
from starter.output import CliError
from starter.temporal_flags import add_temporal_flags

# Our modules that load pydantic, temporalio or kubernetes are imported inside the functions that use them:
# this module loads with `nodeflow --help` (starter/cli.py builds every command's parser), which takes 0.13 s
# without them and 0.83 s with them (farm-bench, median).


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("cancel", help="cancel an in-flight termination or disruption (if still possible)",
                              description="Cancel NODE's termination (untaints it) or, when none runs, the "
                                          "disruption NODE belongs to (rolled back). Rejected once the instance "
                                          "is being terminated, and for nodes a user deleted.")
    p.add_argument("node")
    p.add_argument("--reason", default="cancelled from the command line")
    add_temporal_flags(p)
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from contracts.termination import CancelRequest
    from starter.temporal import NoTerminationError
    from workflows.termination import TerminationWorkflow

    try:
        result = asyncio.run(send_update(args, TerminationWorkflow.cancel, CancelRequest(reason=args.reason)))
    except NoTerminationError as no_termination:
        message = asyncio.run(cancel_disruption(args))
        if message is None:
            raise CliError(f"nothing to cancel for node {args.node}: no termination in flight and no disruption "
                           "includes it") \
                from no_termination
        print(f"{args.node}: {message}")
        return 0
    print(f"{args.node}: {result.message} (phase {result.phase.value})")
    return 0


async def cancel_disruption(args: argparse.Namespace) -> str | None:
    """Cancel the running DisruptionWorkflow whose command includes NODE; None when there is none."""
    from temporalio.client import WorkflowUpdateFailedError

    from activities.planning_runner import MEMO_NODES
    from starter.temporal import connect_from_args
    from workflows.disruption import DisruptionWorkflow

    client = await connect_from_args(args)
    async for wf in client.list_workflows("WorkflowType = 'DisruptionWorkflow' AND ExecutionStatus = 'Running'"):
        if args.node not in ((await wf.memo()).get(MEMO_NODES) or []):
            continue
        handle = client.get_workflow_handle_for(DisruptionWorkflow.run, wf.id, run_id=wf.run_id)
        try:
            answer = await handle.execute_update(DisruptionWorkflow.cancel, args.reason)
        except WorkflowUpdateFailedError as exc:
            message = getattr(exc.cause, "message", None) or str(exc.cause or exc)
            raise CliError(f"rejected: {message.removeprefix('ValueError: ')}") from exc
        return f"disruption {wf.id} cancelled: {answer}"
    return None
