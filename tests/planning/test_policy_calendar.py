"""A DisruptionPolicy's calendar: exclusions (whole local days, inclusive) and allow windows (cron + duration)."""

from __future__ import annotations

from datetime import UTC, datetime

from api.disruption_policy import CalendarPolicy
from planning.policies.calendar import CalendarHold, calendar_block, next_window, window_open

BERLIN_XMAS = CalendarPolicy.model_validate({"timeZone": "Europe/Berlin",
                                             "exclusions": [{"from": "2026-12-20", "to": "2027-01-02"}]})
WEEKDAY_NIGHTS = CalendarPolicy.model_validate({"timeZone": "Europe/Berlin",
                                                "allowWindows": [{"schedule": "0 1 * * 1-5", "duration": "4h"}]})


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def test_no_calendar_or_empty_calendar_never_blocks():
    assert calendar_block(None, utc(2026, 12, 24)) is None
    assert calendar_block(CalendarPolicy(), utc(2026, 12, 24)) is None


def test_exclusion_days_are_inclusive_in_the_zone():
    # 2026-12-19 23:30 UTC is already 2026-12-20 00:30 in Berlin: excluded
    block = calendar_block(BERLIN_XMAS, utc(2026, 12, 19, 23, 30))
    assert block is not None and block.hold is CalendarHold.EXCLUSION
    assert block.until == utc(2027, 1, 2, 23, 0)  # Berlin midnight after 2027-01-02
    assert block.message == ("calendar exclusion 2026-12-20..2027-01-02 (Europe/Berlin) until "
                             "2027-01-03T00:00+01:00")
    assert calendar_block(BERLIN_XMAS, utc(2026, 12, 19, 22, 59)) is None
    assert calendar_block(BERLIN_XMAS, utc(2027, 1, 2, 22, 59)) is not None  # last day, 23:59 local
    assert calendar_block(BERLIN_XMAS, utc(2027, 1, 2, 23, 0)) is None


def test_single_day_and_back_to_back_ranges_join():
    cal = CalendarPolicy.model_validate({"exclusions": [{"from": "2026-05-01"},
                                                        {"from": "2026-05-02", "to": "2026-05-03"}]})
    block = calendar_block(cal, utc(2026, 5, 1, 12))
    assert block is not None and block.until == utc(2026, 5, 4)
    assert "2026-05-01..2026-05-03 (UTC)" in block.message


def test_allow_window_open_and_closed():
    # Monday 2026-11-23 01:00 Berlin = 00:00 UTC; the window lasts until 05:00 Berlin = 04:00 UTC
    assert window_open(WEEKDAY_NIGHTS, utc(2026, 11, 23, 0, 0))
    assert window_open(WEEKDAY_NIGHTS, utc(2026, 11, 23, 3, 59))
    assert not window_open(WEEKDAY_NIGHTS, utc(2026, 11, 23, 4, 0))
    block = calendar_block(WEEKDAY_NIGHTS, utc(2026, 11, 23, 12, 0))
    assert block is not None and block.hold is CalendarHold.OUTSIDE_WINDOW
    assert block.until == utc(2026, 11, 24, 0, 0)
    assert block.message == "outside allow window until 2026-11-24T01:00+01:00"


def test_weekend_waits_for_monday():
    # Friday 2026-11-27 12:00 UTC: the next window is Monday 01:00 Berlin
    assert next_window(WEEKDAY_NIGHTS, utc(2026, 11, 27, 12)) == utc(2026, 11, 30, 0, 0)


def test_exclusion_wins_over_an_open_window():
    cal = CalendarPolicy.model_validate({"timeZone": "Europe/Berlin",
                                         "exclusions": [{"from": "2026-11-23", "to": "2026-11-23"}],
                                         "allowWindows": [{"schedule": "0 1 * * 1-5", "duration": "4h"}]})
    block = calendar_block(cal, utc(2026, 11, 23, 1))
    assert block is not None and block.hold is CalendarHold.EXCLUSION


def test_window_across_daylight_saving_lasts_real_time():
    # 2026-03-29: Berlin goes from +01:00 to +02:00 at 02:00 local. A 01:00 window of 4h ends at 06:00 local.
    cal = CalendarPolicy.model_validate({"timeZone": "Europe/Berlin",
                                         "allowWindows": [{"schedule": "0 1 * * *", "duration": "4h"}]})
    assert window_open(cal, utc(2026, 3, 29, 3, 59))
    assert not window_open(cal, utc(2026, 3, 29, 4, 0))


def test_the_next_window_skips_excluded_days():
    cal = CalendarPolicy.model_validate({"timeZone": "Europe/Berlin",
                                         "exclusions": [{"from": "2026-11-24", "to": "2026-11-25"}],
                                         "allowWindows": [{"schedule": "0 1 * * 1-5", "duration": "4h"}]})
    block = calendar_block(cal, utc(2026, 11, 23, 12))  # Monday noon: Tue and Wed are excluded
    assert block is not None and block.hold is CalendarHold.OUTSIDE_WINDOW
    assert block.until == utc(2026, 11, 26, 0, 0)  # Thursday 01:00 Berlin
    assert block.message == "outside allow window until 2026-11-26T01:00+01:00"


def test_a_window_open_when_the_exclusion_ends_counts_from_that_end():
    cal = CalendarPolicy.model_validate({"exclusions": [{"from": "2026-11-24"}],
                                         "allowWindows": [{"schedule": "0 22 * * *", "duration": "4h"}]})
    block = calendar_block(cal, utc(2026, 11, 24, 12))  # excluded now
    assert block is not None and block.hold is CalendarHold.EXCLUSION
    block = calendar_block(cal, utc(2026, 11, 23, 12))  # window at 22:00 on the 23rd is allowed
    assert block is not None and block.until == utc(2026, 11, 23, 22)
    cal2 = CalendarPolicy.model_validate({"exclusions": [{"from": "2026-11-23"}],
                                          "allowWindows": [{"schedule": "0 22 * * *", "duration": "4h"}]})
    block = calendar_block(cal2, utc(2026, 11, 22, 23))  # open now: 22:00-02:00 but the 23rd is excluded
    assert block is None
    block = calendar_block(cal2, utc(2026, 11, 23, 12))
    assert block is not None and block.hold is CalendarHold.EXCLUSION and block.until == utc(2026, 11, 24)
    # outside the window on the 24th at noon: the window that opened on the excluded 23rd ended at 02:00
    assert calendar_block(cal2, utc(2026, 11, 24, 12)).until == utc(2026, 11, 24, 22)


def test_a_window_that_is_still_open_when_the_exclusion_ends():
    cal = CalendarPolicy.model_validate({"exclusions": [{"from": "2026-11-23"}],
                                         "allowWindows": [{"schedule": "0 20 23 * *", "duration": "6h"}]})
    # the only opening (23rd 20:00) is on the excluded day, but its window is still open when the exclusion ends
    block = calendar_block(cal, utc(2026, 11, 22, 12))
    assert block.hold is CalendarHold.OUTSIDE_WINDOW and block.until == utc(2026, 11, 24)
    assert calendar_block(cal, utc(2026, 11, 24, 1)) is None
