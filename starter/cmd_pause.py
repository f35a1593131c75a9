"""`nodeflow pause|resume [--nodepool NAME]`: one switch for voluntary disruption, global (the planner schedule)
or per NodePool (the annotation nodeflow.dev/paused=true, which the planner skips). `resume` is registered by
starter/cmd_resume.py, which also resumes one node held after a cancel."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from api import labels
from starter.kubeconfig import api_client, resolve
from starter.output import CliError, add_output_flag, print_output, render_table

# Our modules that load pydantic, temporalio or kubernetes are imported inside the functions that use them:
# this module loads with `nodeflow --help` (starter/cli.py builds every command's parser), which takes 0.13 s
# without them and 0.83 s with them (farm-bench, median).


def add_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodepool", metavar="NAME", help="only this NodePool (annotation nodeflow.dev/paused)")
    parser.add_argument("--reason", default="", help="note recorded on the schedule")
    parser.add_argument("--kubeconfig",
                        help="kubeconfig for --nodepool and resume NODE (default: $KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--context", help="kubeconfig context")
    parser.add_argument("--address", help="Temporal host:port (default $NODEFLOW_TEMPORAL_ADDRESS or localhost:7233)")
    parser.add_argument("--namespace", help="Temporal namespace")
    parser.add_argument("--schedule-id", default=None, help="planner schedule id (default nodeflow-planner)")
    parser.add_argument("--task-queue", default=None,
                        help="the cluster's worker task queue in a fleet: its planner schedule is "
                             "nodeflow-planner-<queue> (default nodeflow: nodeflow-planner)")
    add_output_flag(parser)


def set_nodepool_paused(api_client: Any, name: str, paused: bool) -> bool:
    """Set or clear the pause annotation on a NodePool; returns the previous state."""
    from kubernetes import client as k8s
    from kubernetes.client.exceptions import ApiException

    custom = k8s.CustomObjectsApi(api_client)
    try:
        pool = custom.get_cluster_custom_object(labels.GROUP, "v1", "nodepools", name)
    except ApiException as exc:
        if exc.status == 404:
            raise CliError(f"NodePool {name!r} not found") from exc
        raise CliError(f"reading NodePool {name!r}: {exc.status} {exc.reason}") from exc
    was = ((pool.get("metadata") or {}).get("annotations") or {}).get(labels.PAUSED_ANNOTATION, "") == "true"
    patch = {"metadata": {"annotations": {labels.PAUSED_ANNOTATION: "true" if paused else None}}}
    custom.patch_cluster_custom_object(labels.GROUP, "v1", "nodepools", name, patch)
    return was


def _kube_api(args: argparse.Namespace) -> Any:
    return api_client(resolve(args.kubeconfig), args.context)


async def _global(args: argparse.Namespace, paused: bool) -> bool:
    from temporalio.service import RPCError, RPCStatusCode

    from client.connection import connect
    from client.planner_schedule import planner_schedule_id, set_planner_paused

    sid = args.schedule_id or planner_schedule_id(args.task_queue or "nodeflow")
    try:
        client = await connect(args.address, args.namespace)
    except Exception as exc:
        raise CliError(f"cannot reach Temporal at {args.address or 'the configured address'}: {exc}") from exc
    try:
        return await set_planner_paused(client, paused, note=args.reason, schedule_id=sid)
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise CliError(f"schedule {sid!r} not found: start the worker first (it creates the schedule)") from exc
        raise CliError(f"schedule {sid!r}: {exc}") from exc


def run(args: argparse.Namespace, paused: bool) -> int:
    verb = "paused" if paused else "resumed"
    if args.nodepool:
        was = set_nodepool_paused(_kube_api(args), args.nodepool, paused)
        data = {"scope": "nodepool", "nodePool": args.nodepool, "paused": paused, "wasPaused": was}
        text = f"NodePool {args.nodepool} {verb}" + ("" if was != paused else " (no change)")
    else:
        was = asyncio.run(_global(args, paused))
        data = {"scope": "global", "nodePool": None, "paused": paused, "wasPaused": was}
        text = f"planner {verb}: voluntary disruption is {'stopped' if paused else 'running'}" + \
            ("" if was != paused else " (no change)")
    print_output(data, args.output, table=lambda d: render_table(["SCOPE", "NODEPOOL", "PAUSED"],
                                                                 [[d["scope"], d["nodePool"] or "*", d["paused"]]])
                 + text)
    return 0


_COMMANDS = {
    "pause": (True, "stop voluntary disruption (all, or one NodePool)",
              "Globally: pause the nodeflow-planner schedule. With --nodepool: annotate the NodePool "
              "nodeflow.dev/paused=true; the planner skips it."),
}


def register(subparsers: Any) -> None:
    for name, (paused, help_text, description) in _COMMANDS.items():
        p = subparsers.add_parser(name, help=help_text, description=description)
        add_flags(p)
        p.set_defaults(func=lambda args, paused=paused: run(args, paused=paused))
