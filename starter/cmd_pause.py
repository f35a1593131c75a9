"""`nodeflow pause [--nodepool NAME]`: stop voluntary disruption globally or for one NodePool."""

from __future__ import annotations

import argparse
from typing import Any

from starter import pause_common


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("pause", help="stop voluntary disruption (all, or one NodePool)",
                              description="Globally: pause the nodeflow-planner schedule. With --nodepool: "
                                          "annotate the NodePool nodeflow.dev/paused=true; the planner skips it.")
    pause_common.add_flags(p)
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    return pause_common.run(args, paused=True)
