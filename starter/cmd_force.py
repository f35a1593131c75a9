"""`nodeflow force NODE --reason TEXT`: stop waiting for PDBs and delete the node's pods now."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from starter.output import CliError
from starter.temporal_flags import add_temporal_flags

# Our modules that load pydantic, temporalio or kubernetes are imported inside the functions that use them:
# this module loads with `nodeflow --help` (starter/cli.py builds every command's parser), which takes 0.13 s
# without them and 0.83 s with them (farm-bench, median).


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("force", help="force an in-flight node termination past blocking PDBs",
                              description="Delete the remaining pods of NODE now (with their grace periods), "
                                          "bypassing PDBs and do-not-disrupt, and finish its termination.")
    p.add_argument("node")
    p.add_argument("--reason", required=True, help="why (recorded in the workflow and in pod events)")
    add_temporal_flags(p)
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from contracts.termination import ForceRequest
    from workflows.termination import TerminationWorkflow

    result = asyncio.run(send_update(args, TerminationWorkflow.force, ForceRequest(reason=args.reason)))
    print(f"{args.node}: {result.message} (phase {result.phase.value})")
    return 0


async def send_update(args: argparse.Namespace, update: Any, request: Any) -> Any:
    """Find NODE's termination and run the update; a validator's rejection becomes a CliError with its reason."""
    from temporalio.client import WorkflowUpdateFailedError

    from starter.temporal import connect_from_args, find_termination

    client = await connect_from_args(args)
    handle = await find_termination(client, args.node, args.kubeconfig, args.context)
    try:
        return await handle.execute_update(update, request)
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        message = getattr(cause, "message", None) or str(cause or exc)
        raise CliError(f"rejected: {message.removeprefix('ValueError: ')}") from exc
