"""`nodeflow cancel NODE [--reason]`: call off a termination before the point of no return (untaints)."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("cancel", help="cancel an in-flight node termination (if still possible)",
                              description="Cancel NODE's termination and untaint it. Rejected once the instance "
                                          "is being terminated, and for nodes a user deleted.")
    p.add_argument("node")
    p.add_argument("--reason", default="cancelled from the command line")
    from starter.temporal_flags import add_temporal_flags

    add_temporal_flags(p)
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from starter.cmd_force import send_update
    from workflows.models import CancelRequest
    from workflows.termination import TerminationWorkflow

    result = asyncio.run(send_update(args, TerminationWorkflow.cancel, CancelRequest(reason=args.reason)))
    print(f"{args.node}: {result.message} (phase {result.phase.value})")
    return 0
