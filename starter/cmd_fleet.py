"""`nodeflow fleet rollout start|status|pause|resume|abort`: one change carried through many clusters in stages
(docs/fleet.md)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from starter.output import CliError, add_output_flag, print_output
from starter.temporal_flags import add_temporal_flags

# Our modules that load pydantic, temporalio or kubernetes are imported inside the functions that use them:
# this module loads with `nodeflow --help` (starter/cli.py builds every command's parser), which takes 0.13 s
# without them and 0.83 s with them (farm-bench, median).

ACTIONS = ("start", "status", "pause", "resume", "abort")


def register(subparsers: Any) -> None:
    fleet = subparsers.add_parser("fleet", help="a change rolled out across many clusters, in stages",
                                  description="Fleet rollouts: a FleetRollout document (nodeflow.dev/v1alpha1) names "
                                              "a change, stages of clusters and NodePools, bake times and gates.")
    sub = fleet.add_subparsers(dest="fleet_command", metavar="COMMAND", required=True)
    p = sub.add_parser("rollout", help="start, show or steer a fleet rollout",
                       description="start -f FILE starts the rollout (again: finds the running one); status, pause, "
                                   "resume and abort take its id (fleet-<hash>) or -f FILE.")
    p.add_argument("action", choices=ACTIONS)
    p.add_argument("rollout_id", nargs="?", metavar="ID", help="the rollout's id, as `start` printed it")
    p.add_argument("-f", "--filename", help="the FleetRollout document (YAML or JSON)")
    p.add_argument("--reason", default="from the command line")
    p.add_argument("--fleet-task-queue", default="nodeflow-fleet",
                   help="where fleet rollouts run (a worker started with --fleet-task-queue polls it)")
    add_output_flag(p)
    add_temporal_flags(p)
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))


def load_document(path: str) -> Any:
    """The one FleetRollout in FILE, with the field and rule of every problem on failure."""
    import yaml
    from pydantic import ValidationError

    from api.fleet import KIND, load_fleet_rollout

    try:
        docs = [d for d in yaml.safe_load_all(Path(path).read_text()) if d]
    except (OSError, yaml.YAMLError) as exc:
        raise CliError(f"{path}: {exc}") from exc
    found = [d for d in docs if isinstance(d, dict) and d.get("kind") == KIND]
    if len(found) != 1:
        raise CliError(f"{path}: expected one {KIND} document, found {len(found)}")
    try:
        return load_fleet_rollout(found[0])
    except ValidationError as exc:
        lines = [f"  {'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        raise CliError(f"{path}: not a valid {KIND}:\n" + "\n".join(lines)) from exc


def _rollout_id(args: argparse.Namespace) -> str:
    if args.filename:
        return load_document(args.filename).rollout_id
    if not args.rollout_id:
        raise CliError(f"`fleet rollout {args.action}` needs the rollout's ID or -f FILE")
    return args.rollout_id


async def _run(args: argparse.Namespace) -> int:
    from client.fleet import FleetConflict, FleetNotFound, FleetRejected, control_fleet, fleet_status
    from starter.temporal import connect_from_args

    if args.action == "start":
        if not args.filename:
            raise CliError("`fleet rollout start` needs -f FILE")
        rollout = load_document(args.filename)
    rid = rollout.rollout_id if args.action == "start" else _rollout_id(args)
    client = await connect_from_args(args)
    try:
        if args.action == "start":
            return await _start(client, rollout, args)
        if args.action == "status":
            _print_status(await fleet_status(client, rid), args.output)
            return 0
        print(await control_fleet(client, rid, args.action, args.reason))
        return 0
    except (FleetConflict, FleetNotFound) as exc:
        raise CliError(str(exc)) from exc
    except FleetRejected as exc:
        raise CliError(f"rejected: {exc}") from exc


async def _start(client: Any, rollout: Any, args: argparse.Namespace) -> int:
    from client.fleet import start_fleet_rollout

    handle, started = await start_fleet_rollout(client, rollout, task_queue=args.fleet_task_queue)
    verb = "started" if started else "already running"
    print(f"fleet rollout {handle.id} {verb}: {len(rollout.spec.stages)} stage(s), "
          f"{len(rollout.targets())} NodePool(s) in {sum(len(s.clusters) for s in rollout.spec.stages)} cluster(s)")
    print(f"  status: nodeflow fleet rollout status {handle.id}")
    return 0


def _print_status(st: Any, fmt: str) -> None:
    print_output(st.model_dump(mode="json", by_alias=True), fmt, table=lambda _: format_status(st))


def format_status(st: Any) -> str:
    """Per stage, cluster and pool: where each is, the bake deadline, and why the fleet halted."""
    runs = f" (Temporal run {st.runs}: it continued as new)" if st.runs > 1 else ""
    lines = [f"fleet rollout {st.id} ({st.name or 'unnamed'}): {st.phase.value}, stage {st.stage}/{len(st.stages)}"
             f"{runs}"]
    if st.halted_reason:
        lines += [f"halted: {st.halted_reason}", f"  fix it, then: nodeflow fleet rollout resume {st.id}   "
                                                  f"or: nodeflow fleet rollout abort {st.id}"]
    if st.paused_reason:
        lines.append(f"paused: {st.paused_reason}   (nodeflow fleet rollout resume {st.id})")
    for stage in st.stages:
        bake = f", baking until {stage.bake_until:%Y-%m-%dT%H:%M:%SZ}" if stage.phase == "Baking" else ""
        lines.append(f"stage {stage.name}: {stage.phase}{bake}")
        for c in stage.clusters:
            lines.append(f"  {c.name} ({c.task_queue}): {c.phase.value}" + (f" - {c.message}" if c.message else ""))
            for p in c.pools:
                wave = f", wave {p.wave}/{p.waves} {p.rollout_phase}" if p.waves else ""
                bake_pool = f" until {p.bake_until:%H:%M:%SZ}" if p.bake_until else ""
                halt = f", halted: {p.halt_reason}" if p.halt_reason else ""
                lines.append(f"    {p.name}: {p.updated}/{p.nodes} nodes updated, {p.drifted} drifted"
                             f"{wave}{bake_pool}{halt}")
    return "\n".join(lines)
