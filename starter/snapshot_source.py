"""The flags `nodeflow plan` and `nodeflow budgets` share: where the cluster comes from, and when to evaluate."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from api.timestamps import parse_timestamp
from starter.output import CliError


def add_source_flags(parser: Any, file_help: str, kubeconfig_help: str, at_help: str) -> None:
    """`-f SNAPSHOT` or `--kubeconfig FILE` (exactly one), `--context`, `--at RFC3339`."""
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("-f", "--filename", metavar="SNAPSHOT", help=file_help)
    src.add_argument("--kubeconfig", metavar="FILE", help=kubeconfig_help)
    parser.add_argument("--context", help="kubeconfig context (with --kubeconfig)")
    parser.add_argument("--at", metavar="RFC3339", help=at_help)


def parse_at(text: str | None) -> datetime:
    """RFC3339 time (a missing offset means UTC); `now` or nothing is the current time."""
    if text is None or not text.strip() or text.strip().lower() == "now":
        return datetime.now(UTC).replace(microsecond=0)
    try:
        at = parse_timestamp(text)
    except ValueError:
        raise CliError(f"--at {text!r} is not an RFC3339 time (e.g. 2026-11-23T09:00:00Z)", 2) from None
    if not 1970 <= at.year <= 9000:
        raise CliError(f"--at {text!r} is out of range: use a time between 1970 and 9000", 2)
    return at
