"""Printing results the kubectl way (`-o json|yaml|table`) and reporting actionable errors."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Any, TextIO

import yaml

OUTPUT_FORMATS = ("table", "json", "yaml")
# libyaml's emitter when PyYAML was built with it: the same safe YAML, several times faster than the pure-Python one
# (`nodeflow instance-types -o yaml` prints over a thousand types)
class YamlDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Safe YAML that also writes a `StrEnum` member (a method's or a phase's name) as its string."""


YamlDumper.add_multi_representer(StrEnum, lambda dumper, value: dumper.represent_str(str(value)))
YAML_DUMPER = YamlDumper


class CliError(Exception):
    """An error the user can act on: printed as `error: <message>` with exit code `code`, no traceback."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def add_output_flag(parser: Any, default: str = "table") -> None:
    parser.add_argument("-o", "--output", choices=OUTPUT_FORMATS, default=default,
                        help=f"output format (default {default})")


def print_output(data: Any, fmt: str, table: Callable[[Any], str] | None = None,
                 out: TextIO | None = None) -> None:
    """Print `data` as JSON, YAML, or through `table` (a function returning text) for people."""
    out = out or sys.stdout
    if fmt == "json":
        out.write(json.dumps(data, indent=2, default=str) + "\n")
    elif fmt == "yaml":
        out.write(yaml.dump(data, Dumper=YAML_DUMPER, sort_keys=False, default_flow_style=False))
    elif fmt == "table":
        if table is None:
            out.write(json.dumps(data, indent=2, default=str) + "\n")
        else:
            text = table(data)
            out.write(text if text.endswith("\n") else text + "\n")
    else:
        raise CliError(f"unknown output format {fmt!r}; use one of {', '.join(OUTPUT_FORMATS)}")
    out.flush()


def render_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Left-aligned columns separated by three spaces, like `kubectl get`."""
    cells = [[str(h) for h in headers]] + [["<none>" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["   ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    return "\n".join(lines) + "\n"
