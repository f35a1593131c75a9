"""The `nodeflow` command line: one module per subcommand (`starter/cmd_*.py`), each with `register()`."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from starter.cmd_completion import answer
from starter.output import CliError

# Each module defines `register(subparsers) -> None`, adding a parser whose `func(args) -> int` runs it.
COMMAND_MODULES: tuple[str, ...] = (
    "starter.cmd_status", "starter.cmd_force", "starter.cmd_cancel",
    "starter.cmd_pause",  # pause
    "starter.cmd_resume",  # resume: the planner, a NodePool, or a node held after a cancel
    "starter.cmd_plan",
    "starter.cmd_demo",
    "starter.cmd_validate",
    "starter.cmd_budgets",
    "starter.cmd_instance_types",  # instance-types: what a NodePool may launch, discovered from the region
    "starter.cmd_sim",
    "starter.cmd_rollout",  # rollout status|resume|abort, approve
    "starter.cmd_fleet",  # fleet rollout start|status|pause|resume|abort
    "starter.cmd_completion",  # and the hidden `__complete` the scripts call
)


PLUGIN_EXECUTABLE = "kubectl-nodeflow"  # kubectl runs it for `kubectl nodeflow ...` when it is on PATH


def program_name(argv0: str | None = None) -> str:
    """`kubectl nodeflow` when run as the kubectl plugin, else `nodeflow`: what --help and usage errors show."""
    name = os.path.basename(argv0 if argv0 is not None else (sys.argv[0] if sys.argv else ""))
    return "kubectl nodeflow" if name.removesuffix(".exe") == PLUGIN_EXECUTABLE else "nodeflow"


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog or program_name(),
        description="Karpenter-style node disruption and graceful termination as durable Temporal workflows.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def run(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["__complete"]:  # what the completion scripts call on TAB (starter/cmd_completion.py)
        sys.stdout.write(answer(build_parser(), argv[1:]))
        return 0
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(func(args) or 0)
    except CliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def kubectl_complete() -> None:
    """`kubectl_complete-nodeflow WORDS...`: kubectl runs it to complete `kubectl nodeflow WORDS`."""
    sys.stdout.write(answer(build_parser("kubectl nodeflow"), sys.argv[1:]))
    sys.stdout.flush()


def main(argv: Sequence[str] | None = None) -> None:
    code = run(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    # os._exit avoids the Temporal SDK's interpreter-exit crash (temporalio/sdk-python#300) in short-lived commands.
    os._exit(code)


if __name__ == "__main__":
    main()
