"""`did you mean` for a misspelt field, kind or enum value: the closest allowed name, when one is close enough."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

CUTOFF = 0.75  # difflib ratio; "consolidateAftr" -> "consolidateAfter" is 0.97, "Like" -> "Lt" 0.33


def closest(word: object, choices: Iterable[str]) -> str | None:
    """The allowed name nearest to `word` (case-insensitive), or None when none is close."""
    if not isinstance(word, str) or not word:
        return None
    by_lower = {c.lower(): c for c in choices}
    match = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=CUTOFF)
    return by_lower[match[0]] if match else None


def did_you_mean(word: object, choices: Iterable[str]) -> str:
    """`; did you mean 'X'?` to append to a problem, or "" when nothing is close."""
    match = closest(word, choices)
    return f"; did you mean {match!r}?" if match is not None else ""
