"""A DisruptionPolicy's calendar (docs/semantics.md §15.4): may a voluntary disruption start at `at`?

Exclusions are whole days, both ends inclusive, in the calendar's time zone: from local midnight of `from` to
local midnight after `to`. Allow windows open at each hit of their cron schedule (wall clock of the zone, the
budgets' robfig semantics, api/cron.py) and last `duration` of real time. An exclusion wins over a window; with
allow windows, nothing starts outside them. The answer says until when, so `nodeflow plan` can tell the operator.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from enum import StrEnum

from api import events
from api.cron import load_zone, parse_schedule
from api.disruption_policy import CalendarPolicy, DateRange


class CalendarHold(StrEnum):
    EXCLUSION = "Exclusion"
    OUTSIDE_WINDOW = "OutsideAllowWindow"
    # Not the calendar: two policies select the pool, so no one knows its calendar; held until that is fixed, as
    # Karpenter holds every reason of a pool with an invalid budget (planning/policies/view.py).
    CONFLICT = "PolicyConflict"


@dataclass(frozen=True)
class CalendarBlock:
    """Why no voluntary disruption starts now, and when that ends (None: not within five years)."""

    hold: CalendarHold
    until: datetime | None
    message: str


def _midnight(d: date, zone: tzinfo) -> datetime:
    return datetime.combine(d, time(0), tzinfo=zone).astimezone(UTC)


def _local(at: datetime, zone: tzinfo) -> str:
    return at.astimezone(zone).isoformat(timespec="minutes")


def _exclusion_at(exclusions: list[DateRange], day: date) -> DateRange | None:
    return next((r for r in exclusions if r.from_ <= day <= r.last), None)


def _exclusion_block(cal: CalendarPolicy, zone: tzinfo, at: datetime) -> CalendarBlock | None:
    ranges = cal.exclusions or []
    hit = _exclusion_at(ranges, at.astimezone(zone).date())
    if hit is None:
        return None
    last = hit.last
    while (more := _exclusion_at(ranges, last + timedelta(days=1))) is not None:  # back-to-back ranges join
        last = more.last
    until = _midnight(last + timedelta(days=1), zone)
    message = events.calendar_exclusion(hit.from_.isoformat(), last.isoformat(), cal.time_zone or "UTC",
                                        _local(until, zone))
    return CalendarBlock(CalendarHold.EXCLUSION, until, message)


def window_open(cal: CalendarPolicy, at: datetime) -> bool:
    """Some allow window has a hit H with H <= at < H + duration (always True without windows)."""
    windows = cal.allow_windows or []
    if not windows:
        return True
    for w in windows:
        hit = parse_schedule(w.schedule, cal.time_zone).next_after(at - w.length)
        if hit is not None and hit <= at:
            return True
    return False


def next_window(cal: CalendarPolicy, at: datetime) -> datetime | None:
    """When the next allow window opens after `at` (None when none does within five years)."""
    hits = [h for w in cal.allow_windows or [] if (h := parse_schedule(w.schedule, cal.time_zone).next_after(at))]
    return min(hits, default=None)


def calendar_block(cal: CalendarPolicy | None, at: datetime) -> CalendarBlock | None:
    """None when a voluntary disruption may start at `at`; else the hold, until when, and the message."""
    if cal is None:
        return None
    at = at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
    zone = load_zone(cal.time_zone)
    block = _exclusion_block(cal, zone, at)
    if block is not None:
        return block
    if window_open(cal, at):
        return None
    until = _next_allowed(cal, zone, at)
    return CalendarBlock(CalendarHold.OUTSIDE_WINDOW, until,
                         events.outside_allow_window(_local(until, zone) if until else None))


MAX_HOPS = 400  # window openings skipped because they fall on excluded days (more than a year of daily windows)


def _next_allowed(cal: CalendarPolicy, zone: tzinfo, at: datetime) -> datetime | None:
    """The first instant after `at` inside an allow window and outside every exclusion: a window opening on an
    excluded day does not count, but a window still open when an exclusion ends does, from that end on."""
    t = next_window(cal, at)
    for _ in range(MAX_HOPS):
        if t is None:
            return None
        block = _exclusion_block(cal, zone, t)
        if block is None:
            return t
        end = block.until
        if end is not None and window_open(cal, end):
            return end
        t = next_window(cal, end) if end is not None else None
    return None
