"""Cron parsing and next-hit search, robfig/cron v3 semantics (docs/semantics.md §1.2, §1.6), CronJob time zones."""

from datetime import UTC, datetime

import pytest

from api.cron import CronError, parse_schedule


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.mark.parametrize(
    ("descriptor", "expanded"),
    [
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        ("@monthly", "0 0 1 * *"),
        ("@weekly", "0 0 * * 0"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@hourly", "0 * * * *"),
    ],
)
def test_descriptors_expand_like_robfig(descriptor: str, expanded: str) -> None:
    a, b = parse_schedule(descriptor), parse_schedule(expanded)
    ta = tb = utc(2026, 11, 22, 13, 7)
    for _ in range(5):
        ta, tb = a.next_after(ta), b.next_after(tb)
        assert ta == tb
        assert ta is not None


@pytest.mark.parametrize(
    ("spec", "after", "expected"),
    [
        ("0 9 * * 1-5", utc(2026, 11, 21, 12), utc(2026, 11, 23, 9)),  # Saturday -> Monday
        ("*/15 * * * *", utc(2026, 1, 1, 0, 0, 0), utc(2026, 1, 1, 0, 15)),  # strictly after
        ("30 2 1 jan,JUL *", utc(2026, 2, 1), utc(2026, 7, 1, 2, 30)),  # names, any case
        ("0 0 * * sun", utc(2026, 11, 22, 0, 0, 1), utc(2026, 11, 29)),
        ("5/20 * * * *", utc(2026, 1, 1, 0, 6), utc(2026, 1, 1, 0, 25)),  # N/step means N-max/step
        ("0 0 29 2 *", utc(2026, 3, 1), utc(2028, 2, 29)),  # leap day, 2 years on
        ("? ? ? ? ?", utc(2026, 1, 1, 0, 0, 30), utc(2026, 1, 1, 0, 1)),  # ? is *
    ],
)
def test_next_after(spec: str, after: datetime, expected: datetime) -> None:
    assert parse_schedule(spec).next_after(after) == expected


def test_dom_and_dow_are_ored_when_both_restricted() -> None:
    s = parse_schedule("0 0 13 * 5")  # * in month does not matter; DOM and DOW both restricted
    # the 13th (any weekday) or any Friday
    assert s.next_after(utc(2026, 11, 13, 0, 0)) == utc(2026, 11, 20)  # Friday 20th
    assert s.next_after(utc(2026, 12, 11, 0, 0)) == utc(2026, 12, 13)  # Sunday 13th


def test_star_in_either_day_field_means_and() -> None:
    assert parse_schedule("0 0 * * 5").next_after(utc(2026, 11, 13)) == utc(2026, 11, 20)
    assert parse_schedule("0 0 13 * *").next_after(utc(2026, 11, 13)) == utc(2026, 12, 13)
    # "*/1" keeps the star bit (AND), "*/2" drops it (OR), as robfig does
    and_ = parse_schedule("0 0 */1 * 5")
    assert and_.dom_star and and_.next_after(utc(2026, 11, 14)) == utc(2026, 11, 20)
    or_ = parse_schedule("0 0 */2 * 5")
    assert not or_.dom_star and or_.next_after(utc(2026, 11, 14)) == utc(2026, 11, 15)


def test_impossible_date_has_no_hit_within_five_years() -> None:
    assert parse_schedule("0 0 30 2 *").next_after(utc(2026, 1, 1)) is None
    assert parse_schedule("0 0 31 4,6,9,11 *").next_after(utc(2026, 1, 1)) is None


@pytest.mark.parametrize(
    "spec",
    [
        "* * * *",  # 4 fields
        "0 0 * * * *",  # seconds field is not standard
        "60 * * * *",
        "* 24 * * *",
        "* * 0 * *",
        "* * * 13 *",
        "* * * * 7",  # robfig's day of week is 0-6
        "5-1 * * * *",
        "*/0 * * * *",
        "1-2-3 * * * *",
        "1/2/3 * * * *",
        "x * * * *",
        "@every 1h",
        "@hourly foo",
        "TZ=UTC 0 0 * * *",
        "CRON_TZ=Europe/Berlin 0 0 * * *",
    ],
)
def test_invalid_schedules(spec: str) -> None:
    with pytest.raises(CronError):
        parse_schedule(spec)


@pytest.mark.parametrize("zone", ["Mars/Olympus", "Local", "", "../etc/passwd"])
def test_invalid_time_zones(zone: str) -> None:
    with pytest.raises(CronError):
        parse_schedule("0 0 * * *", zone)


def test_time_zone_follows_the_wall_clock_across_dst() -> None:
    s = parse_schedule("0 9 * * *", "America/New_York")
    assert s.next_after(utc(2026, 3, 7, 15)) == utc(2026, 3, 8, 13)  # EDT from March 8
    assert s.next_after(utc(2026, 3, 6, 15)) == utc(2026, 3, 7, 14)  # EST before
    assert s.next_after(utc(2026, 11, 1, 0)) == utc(2026, 11, 1, 14)  # EST again from November 1


def test_skipped_wall_time_never_hits_and_repeated_one_hits_twice() -> None:
    spring = parse_schedule("30 2 * * *", "America/New_York")  # 02:30 does not exist on 2026-03-08
    assert spring.next_after(utc(2026, 3, 8, 0)) == utc(2026, 3, 9, 6, 30)
    fall = parse_schedule("30 1 * * *", "America/New_York")  # 01:30 happens twice on 2026-11-01
    first = fall.next_after(utc(2026, 11, 1, 0))
    second = fall.next_after(first)
    assert (first, second) == (utc(2026, 11, 1, 5, 30), utc(2026, 11, 1, 6, 30))
    assert fall.next_after(second) == utc(2026, 11, 2, 6, 30)


def test_half_hour_dst_zone() -> None:
    # Lord Howe moves its clocks by 30 minutes; 02:15 is skipped on 2026-10-04 (02:00 -> 02:30)
    s = parse_schedule("15 2 * * *", "Australia/Lord_Howe")
    hit = s.next_after(utc(2026, 10, 3, 12))
    assert hit is not None and hit.astimezone(s.zone).day == 5


def test_searches_stop_at_the_ends_of_the_calendar() -> None:
    s = parse_schedule("0 0 30 2 *")
    assert s.next_after(datetime(9998, 6, 1, tzinfo=UTC)) is None
    assert s.last_at_or_before(datetime(3, 6, 1, tzinfo=UTC)) is None
