"""The one RFC 3339 parser: `Z`, offsets and naive text give aware UTC datetimes; a lenient form for optional fields."""

from datetime import UTC, datetime, timedelta, timezone

import pytest

from api.timestamps import format_seconds, format_timestamp, parse_time, parse_timestamp

NOON = datetime(2026, 1, 2, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize("text", ["2026-01-02T12:00:00Z", "2026-01-02T12:00:00z", "2026-01-02T14:00:00+02:00",
                                  "2026-01-02T12:00:00", " 2026-01-02T12:00:00Z "])
def test_rfc3339_forms_parse_to_the_same_utc_instant(text: str) -> None:
    parsed = parse_timestamp(text)
    assert parsed == NOON
    assert parsed.tzinfo == UTC


def test_a_datetime_passes_through_in_utc() -> None:
    plus_two = datetime(2026, 1, 2, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    assert parse_timestamp(plus_two).tzinfo == UTC
    assert parse_timestamp(plus_two) == NOON
    assert parse_timestamp(datetime(2026, 1, 2, 12, 0)) == NOON


@pytest.mark.parametrize("value", ["", "yesterday", "2026-13-01T00:00:00Z", 12])
def test_strict_parser_rejects_what_is_not_a_timestamp(value: object) -> None:
    with pytest.raises(ValueError):
        parse_timestamp(value)


@pytest.mark.parametrize("value", [None, "", "yesterday", "2026-13-01T00:00:00Z", 12])
def test_lenient_parser_says_none_instead_of_raising(value: object) -> None:
    assert parse_time(value) is None


def test_lenient_parser_parses_what_the_strict_one_does() -> None:
    assert parse_time("2026-01-02T12:00:00Z") == NOON


def test_formats_round_trip_in_kubernetes_style() -> None:
    assert format_timestamp(NOON) == "2026-01-02T12:00:00Z"
    assert format_timestamp(NOON + timedelta(milliseconds=250)) == "2026-01-02T12:00:00.25Z"
    assert format_seconds(NOON + timedelta(milliseconds=250)) == "2026-01-02T12:00:00Z"
    assert parse_timestamp(format_timestamp(NOON + timedelta(milliseconds=250))) == NOON + timedelta(milliseconds=250)
