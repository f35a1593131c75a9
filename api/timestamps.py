"""RFC 3339 timestamps as Kubernetes and AWS write them (`2026-11-22T19:55:00Z`), in one place.

Every reader of `deletionTimestamp`, `timeAdded`, annotations or event times goes through `parse_timestamp`
(strict) or `parse_time` (lenient), so they agree on `Z`, offsets and naive text: the result is always an
aware datetime in UTC, which makes any two parsed instants comparable.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def parse_timestamp(value: Any) -> datetime:
    """RFC 3339 text (or a datetime, as YAML may give) -> aware UTC datetime; ValueError when it is neither.

    Naive text or datetimes are taken as UTC (Kubernetes never writes local times).
    """
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, str):
        text = value.strip()
        if text[-1:] in ("Z", "z"):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError as exc:
            raise ValueError(f"{value!r} is not an RFC3339 timestamp") from exc
    else:
        raise ValueError(f"timestamp must be an RFC3339 string, got {type(value).__name__}")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def parse_time(value: Any) -> datetime | None:
    """Like `parse_timestamp`, but None when the value is absent or unparsable: for optional fields that a
    bad writer must not turn into a crash loop (a taint's `timeAdded`, a status time)."""
    if value is None or value == "":
        return None
    try:
        return parse_timestamp(value)
    except ValueError:
        return None


def format_timestamp(dt: datetime) -> str:
    """Aware datetime -> RFC3339 in UTC with `Z`, second precision unless there are fractions (like Kubernetes)."""
    dt = dt.astimezone(UTC)
    if dt.microsecond:
        return dt.strftime("%Y-%m-%dT%H:%M:%S.%f").rstrip("0") + "Z"
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def format_seconds(dt: datetime) -> str:
    """Aware datetime -> RFC3339 in UTC at whole seconds (`metav1.Time` as Events and taints carry it)."""
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
