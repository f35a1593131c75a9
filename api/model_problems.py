"""A pydantic ValidationError as `nodeflow validate` prints problems: one `path: problem` line per error, the path
as kubectl writes it (`spec.budgets[1].nodes`), the message without pydantic's "Value error, " prefix, unknown and
missing fields in the words of the hand-written rules (api/validation.py). One place, so every document kind the
CLI validates reads the same."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

_WORDS = {"extra_forbidden": "unknown field", "missing": "required field is missing"}


def field_path(loc: Sequence[int | str], empty: str = "(document)") -> str:
    """("spec", "budgets", 1, "nodes") -> "spec.budgets[1].nodes"; `empty` for the document itself."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or empty


def error_message(err: Any) -> str:
    return _WORDS.get(err["type"]) or str(err["msg"]).removeprefix("Value error, ")


def model_problems(exc: ValidationError, empty: str = "(document)") -> list[str]:
    """Every error of `exc` as `path: problem`, each line once, in pydantic's order."""
    return list(dict.fromkeys(f"{field_path(err['loc'], empty)}: {error_message(err)}" for err in exc.errors()))
