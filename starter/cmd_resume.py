"""`nodeflow resume [--nodepool NAME]`: undo `nodeflow pause`."""

from __future__ import annotations

import argparse
from typing import Any

from starter import pause_common


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("resume", help="resume voluntary disruption (all, or one NodePool)",
                              description="Globally: unpause the nodeflow-planner schedule. With --nodepool: "
                                          "remove the NodePool's nodeflow.dev/paused annotation.")
    pause_common.add_flags(p)
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    return pause_common.run(args, paused=False)
