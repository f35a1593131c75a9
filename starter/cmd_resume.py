"""`nodeflow resume [NODE] [--nodepool NAME]`: resume voluntary disruption. Without NODE the same switch as
`nodeflow pause` (the planner schedule, or one NodePool); with NODE lift the cool-down hold a cancelled
disruption left on that node (the annotations nodeflow.dev/disruption-cancelled-at and -held-until), so the
planner may plan it again at its next pass."""

from __future__ import annotations

import argparse
from typing import Any

from api import labels
from starter.cmd_pause import add_flags, run
from starter.kubeconfig import api_client, resolve
from starter.output import CliError, print_output, render_table

HOLD_ANNOTATIONS = (labels.DISRUPTION_CANCELLED_AT_ANNOTATION, labels.DISRUPTION_HELD_UNTIL_ANNOTATION)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "resume", help="resume voluntary disruption (all, one NodePool, or one node held after a cancel)",
        description="Globally: unpause the nodeflow-planner schedule. With --nodepool: remove the NodePool's "
                    "nodeflow.dev/paused annotation. With NODE: lift the hold a cancelled disruption put on the "
                    "node (nodeflow.dev/disruption-held-until), so the planner may disrupt it again.")
    p.add_argument("node", nargs="?", help="a node held after its disruption was cancelled")
    add_flags(p)
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    if args.node is None:
        return run(args, paused=False)
    if args.nodepool:
        raise CliError("give either NODE or --nodepool, not both")
    held = lift_hold(api_client(resolve(args.kubeconfig), args.context), args.node)
    data = {"scope": "node", "node": args.node, "held": False, "wasHeldUntil": held}
    text = (f"node {args.node} resumed: the planner may disrupt it again (it was held until {held})" if held
            else f"node {args.node} resumed (no change: it was not held)")
    print_output(data, args.output, table=lambda d: render_table(["SCOPE", "NODE", "HELD"],
                                                                 [[d["scope"], d["node"], d["held"]]]) + text)
    return 0


def lift_hold(api: Any, name: str) -> str | None:
    """Remove a node's cancel-hold annotations; returns the held-until it had (None: it was not held)."""
    from kubernetes import client as k8s
    from kubernetes.client.exceptions import ApiException

    core = k8s.CoreV1Api(api)
    try:
        node = core.read_node(name)
    except ApiException as exc:
        if exc.status == 404:
            raise CliError(f"node {name!r} not found") from exc
        raise CliError(f"reading node {name!r}: {exc.status} {exc.reason}") from exc
    annotations = node.metadata.annotations or {}
    if not any(key in annotations for key in HOLD_ANNOTATIONS):
        return None
    core.patch_node(name, {"metadata": {"annotations": dict.fromkeys(HOLD_ANNOTATIONS)}})
    return annotations.get(labels.DISRUPTION_HELD_UNTIL_ANNOTATION) or \
        annotations.get(labels.DISRUPTION_CANCELLED_AT_ANNOTATION)
