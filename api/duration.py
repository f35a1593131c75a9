"""Go-style durations as Karpenter writes them ("720h", "1h30m", "30s", "Never").

Karpenter stores durations as strings and checks each field against its own CRD pattern, so parsing
(`parse_duration`) and field rules (`DURATION_PATTERNS`, `check_duration`) are kept apart: the
parser accepts anything Go's `time.ParseDuration` accepts, the patterns say what each field allows.
"""

from __future__ import annotations

import re
from datetime import timedelta

NEVER = "Never"

# CRD patterns of karpenter.sh/v1 (docs/semantics.md §1.1), keyed by the field's camelCase name.
NILLABLE_DURATION_PATTERN = r"^(([0-9]+(s|m|h))+|Never)$"
TERMINATION_GRACE_PERIOD_PATTERN = r"^([0-9]+(s|m|h))+$"
BUDGET_DURATION_PATTERN = r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$"

DURATION_PATTERNS: dict[str, str] = {
    "consolidateAfter": NILLABLE_DURATION_PATTERN,
    "expireAfter": NILLABLE_DURATION_PATTERN,
    "terminationGracePeriod": TERMINATION_GRACE_PERIOD_PATTERN,
    "duration": BUDGET_DURATION_PATTERN,
}

# Go time.ParseDuration units, in nanoseconds.
_UNITS_NS: dict[str, int] = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "μs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_COMPONENT = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")


class DurationError(ValueError):
    """A duration string that Go would not parse, or that a field's pattern rejects."""


def parse_duration(text: str) -> timedelta:
    """Parse a Go duration ("1h30m", "1.5h", "300ms", "-2m", "0"), as `time.ParseDuration` does."""
    if not isinstance(text, str):
        raise DurationError(f"duration must be a string, got {type(text).__name__}")
    s = text
    sign = 1
    if s[:1] in ("+", "-"):
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    if s == "0":
        return timedelta(0)
    if not s:
        raise DurationError(f"invalid duration {text!r}")
    total_ns = 0
    pos = 0
    while pos < len(s):
        m = _COMPONENT.match(s, pos)
        if m is None or m.group(1) in ("", "."):
            raise DurationError(f"invalid duration {text!r}")
        number, unit = m.group(1), m.group(2)
        whole, _, frac = number.partition(".")
        scale = _UNITS_NS[unit]
        total_ns += int(whole or "0") * scale
        if frac:
            total_ns += int(frac) * scale // (10 ** len(frac))
        pos = m.end()
    return timedelta(microseconds=sign * total_ns / 1000)


def parse_nillable_duration(text: str) -> timedelta | None:
    """Parse a Karpenter NillableDuration: "Never" is None (disabled), anything else a Go duration."""
    if text == NEVER:
        return None
    return parse_duration(text)


def parse_optional_duration(text: str | None) -> timedelta | None:
    """An optional Go duration field (e.g. a NodeClaim's `terminationGracePeriod`): absent or "" is None."""
    if not text:
        return None
    return parse_duration(text)


def format_duration(value: timedelta | None) -> str:
    """Format back in the compact form Karpenter users write: 720h, 1h30m, 45s, 1h0m5s -> "1h5s"; None -> Never."""
    if value is None:
        return NEVER
    total = value.total_seconds()
    sign = "-" if total < 0 else ""
    total = abs(total)
    whole = int(total)
    frac = round(total - whole, 9)
    hours, rest = divmod(whole, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = []
    if hours:
        parts.append(f"{hours}h")
    if minutes:
        parts.append(f"{minutes}m")
    if seconds or frac:
        if frac:
            parts.append(f"{seconds + frac:.9f}".rstrip("0").rstrip(".") + "s")
        else:
            parts.append(f"{seconds}s")
    if not parts:
        return "0s"
    return sign + "".join(parts)


def matches_pattern(pattern: str, text: str) -> bool:
    """Does `text` match a CRD `pattern` as the API server tests it (ECMA-262 search: `$` is the end of the text,
    not also the place before a final newline as in Python)?"""
    return re.search(pattern.replace("$", r"\Z"), text) is not None


def check_duration(field: str, text: object) -> str | None:
    """Check `text` against the CRD pattern of `field` (a key of DURATION_PATTERNS); a problem text or None."""
    pattern = DURATION_PATTERNS[field]
    if not isinstance(text, str):
        return f"must be a string matching {pattern}, got {type(text).__name__}"
    if not matches_pattern(pattern, text):
        return f"{text!r} does not match {pattern}"
    return None
