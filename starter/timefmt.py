"""The one way the CLI prints a point in time: RFC 3339 in UTC to the second (`2026-11-23T12:10:00Z`), as
`status`, `budgets` and `fleet rollout status` print deadlines; JSON output keeps the full timestamps."""

from __future__ import annotations

from datetime import UTC, datetime


def rfc3339_utc(value: datetime | str | None) -> str | None:
    """`2026-11-23T12:10:00Z` for a datetime or an ISO 8601 string (a naive one is UTC); None stays None."""
    if value is None or value == "":
        return None
    at = datetime.fromisoformat(value) if isinstance(value, str) else value
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
