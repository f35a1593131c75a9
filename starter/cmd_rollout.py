"""`nodeflow rollout status|resume|abort NODEPOOL` (a DisruptionPolicy's drift waves) and `nodeflow approve NODE`
(ack a disruption's pre-disruption hook by hand)."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from starter.output import CliError
from starter.temporal_flags import add_temporal_flags
from starter.timefmt import rfc3339_utc

# Our modules that load pydantic, temporalio or kubernetes are imported inside the functions that use them:
# this module loads with `nodeflow --help` (starter/cli.py builds every command's parser), which takes 0.13 s
# without them and 0.83 s with them (farm-bench, median).


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("rollout", help="a NodePool's drift rollout in waves: status, resume, abort",
                              description="Show or steer the DriftRolloutWorkflow of NODEPOOL (DisruptionPolicy "
                                          "drift.waves): its wave, bake deadline and why it halted; resume a "
                                          "halted rollout, or abort it for this drift generation.")
    p.add_argument("action", choices=("status", "resume", "abort"))
    p.add_argument("node_pool", metavar="NODEPOOL")
    p.add_argument("--reason", default="from the command line")
    add_temporal_flags(p)
    p.set_defaults(func=handle_rollout)

    a = subparsers.add_parser("approve", help="ack the pre-disruption hook of NODE's disruption",
                              description="Approve the disruption that includes NODE while it waits for its "
                                          "DisruptionPolicy's pre-disruption ack (hooks.preDisruption.ack: Required).")
    a.add_argument("node")
    a.add_argument("--reason", default="approved from the command line")
    add_temporal_flags(a)
    a.set_defaults(func=handle_approve)


def handle_rollout(args: argparse.Namespace) -> int:
    return asyncio.run(_rollout(args))


async def _rollout(args: argparse.Namespace) -> int:
    from client.rollout import ControlRejected, control_rollout, rollout_status
    from starter.temporal import connect_from_args

    client = await connect_from_args(args)
    if args.action == "status":
        status = await rollout_status(client, args.node_pool)
        if status is None:
            raise CliError(f"NodePool {args.node_pool} has no drift rollout")
        print(format_status(status))
        return 0
    try:
        message = await control_rollout(client, args.node_pool, args.action, args.reason)
    except ControlRejected as exc:
        raise CliError(f"rejected: {exc}") from exc
    if message is None:
        raise CliError(f"NodePool {args.node_pool} has no running drift rollout")
    print(message)
    return 0


def format_status(st: Any) -> str:
    lines = [f"NodePool {st.node_pool}: {st.phase.value}, wave {st.wave}/{st.waves} (targets {st.targets}), "
             f"{st.disrupted} node(s) replaced, {st.failed_replacements} failed replacement(s)"]
    if st.bake_until is not None:
        lines.append(f"baking until {rfc3339_utc(st.bake_until)}")
    if st.halted is not None:
        lines.append(f"halted ({st.halted.value}): {st.halt_reason}")
        lines.append(f"  resume: nodeflow rollout resume {st.node_pool}   abort: nodeflow rollout abort {st.node_pool}")
    if st.message:
        lines.append(st.message)
    return "\n".join(lines)


def handle_approve(args: argparse.Namespace) -> int:
    return asyncio.run(_approve(args))


async def _approve(args: argparse.Namespace) -> int:
    from client.rollout import ControlRejected, approve_disruption
    from starter.temporal import connect_from_args

    try:
        message = await approve_disruption(await connect_from_args(args), args.node, args.reason)
    except ControlRejected as exc:
        raise CliError(f"rejected: {exc}") from exc
    if message is None:
        raise CliError(f"no disruption in flight includes node {args.node}")
    print(message)
    return 0
