"""Go-style durations and the per-field CRD patterns (docs/semantics.md §1.1)."""

from datetime import timedelta

import pytest

from api.duration import (
    DurationError,
    check_duration,
    format_duration,
    parse_duration,
    parse_nillable_duration,
    parse_optional_duration,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("720h", timedelta(hours=720)),
        ("30s", timedelta(seconds=30)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("2h20m0s", timedelta(hours=2, minutes=20)),
        ("1.5h", timedelta(minutes=90)),
        ("300ms", timedelta(milliseconds=300)),
        ("-2m", timedelta(minutes=-2)),
        ("0", timedelta(0)),
        ("0s", timedelta(0)),
    ],
)
def test_parse_go_durations(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "h", "30", "1d", "1h 30m", "Never", "1.h.5", "."])
def test_parse_rejects_what_go_rejects(text: str) -> None:
    with pytest.raises(DurationError):
        parse_duration(text)


def test_never_is_none() -> None:
    assert parse_nillable_duration("Never") is None
    assert parse_nillable_duration("10m") == timedelta(minutes=10)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "Never"),
        (timedelta(hours=720), "720h"),
        (timedelta(hours=1, minutes=30), "1h30m"),
        (timedelta(seconds=45), "45s"),
        (timedelta(hours=1, seconds=5), "1h5s"),
        (timedelta(0), "0s"),
        (timedelta(milliseconds=1500), "1.5s"),
    ],
)
def test_format_round_trips(value: timedelta | None, text: str) -> None:
    assert format_duration(value) == text
    assert parse_nillable_duration(text) == value


@pytest.mark.parametrize(
    ("field", "good", "bad"),
    [
        ("consolidateAfter", ["0s", "30s", "1h30m", "Never"], ["1.5h", "30", "never", "1d", "-1m"]),
        ("expireAfter", ["720h", "Never", "10m5s"], ["", "720 h", "30d", "720h\n"]),
        ("terminationGracePeriod", ["48h", "30s"], ["Never", "1.5h"]),
        # budget durations: h and m only; Duration.String() adds a trailing 0s
        ("duration", ["10m", "8h", "8h0m", "2h20m", "20m0s", "2h20m0s"], ["30s", "1h30s", "1h2m3s", "10m30s", "Never"]),
    ],
)
def test_field_patterns(field: str, good: list[str], bad: list[str]) -> None:
    for text in good:
        assert check_duration(field, text) is None, text
    for text in bad:
        assert check_duration(field, text) is not None, text
    assert "must be a string" in (check_duration(field, 5) or "")


@pytest.mark.parametrize(("text", "expected"), [(None, None), ("", None), ("48h", timedelta(hours=48)),
                                                ("1h30m", timedelta(minutes=90)), ("300s", timedelta(seconds=300))])
def test_optional_duration_is_none_when_unset(text: str | None, expected: timedelta | None) -> None:
    assert parse_optional_duration(text) == expected


def test_optional_duration_still_rejects_garbage() -> None:
    with pytest.raises(DurationError):
        parse_optional_duration("2 days")
