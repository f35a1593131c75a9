"""Cron schedules with the semantics Karpenter's budgets get from robfig/cron v3 (`cron.ParseStandard`).

Why not croniter alone: budget windows must match Karpenter to the minute, and robfig differs from
croniter in details that matter here — a field that starts with `*` switches day-of-month/day-of-week
matching to AND (except `*/N` with N > 1), day-of-week 7 is rejected, `?` means `*`, and when no time
matches within five years robfig returns the zero time (which makes a budget permanently active).

Time zones follow Kubernetes CronJob (which also uses robfig): a schedule hits every instant whose
wall-clock time in the zone matches the fields. A wall time skipped by a daylight-saving jump never
hits; a wall time that occurs twice (clocks going back) hits twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

SEARCH_YEARS = 5  # robfig gives up (zero time) after the year of the start + 5

_MONTH_NAMES = {
    n: i + 1
    for i, n in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"])
}
_DOW_NAMES = {n: i for i, n in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}

DESCRIPTORS: dict[str, str] = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


class CronError(ValueError):
    """A schedule robfig/cron would not parse, or an unknown time zone."""


@dataclass(frozen=True)
class _Bounds:
    name: str
    low: int
    high: int
    names: dict[str, int] | None = None


_FIELDS = (
    _Bounds("minute", 0, 59),
    _Bounds("hour", 0, 23),
    _Bounds("day of month", 1, 31),
    _Bounds("month", 1, 12, _MONTH_NAMES),
    _Bounds("day of week", 0, 6, _DOW_NAMES),
)


def _number(text: str, b: _Bounds, expr: str) -> int:
    if b.names and text.lower() in b.names:
        return b.names[text.lower()]
    if not (text.isascii() and text.isdigit()):
        raise CronError(f"{b.name}: failed to parse int from {text!r} in {expr!r}")
    return int(text)


def _parse_part(expr: str, b: _Bounds) -> tuple[set[int], bool]:
    """One comma-separated part: `*`, `?`, `N`, `N-M`, each optionally `/step`. Returns (values, star)."""
    range_and_step = expr.split("/")
    if len(range_and_step) > 2:
        raise CronError(f"{b.name}: too many slashes in {expr!r}")
    low_high = range_and_step[0].split("-")
    star = False
    if low_high[0] in ("*", "?"):
        start, end, star = b.low, b.high, True
    else:
        start = _number(low_high[0], b, expr)
        if len(low_high) == 1:
            end = start
        elif len(low_high) == 2:
            end = _number(low_high[1], b, expr)
        else:
            raise CronError(f"{b.name}: too many hyphens in {expr!r}")
    step = 1
    if len(range_and_step) == 2:
        if not (range_and_step[1].isascii() and range_and_step[1].isdigit()):
            raise CronError(f"{b.name}: failed to parse step {range_and_step[1]!r} in {expr!r}")
        step = int(range_and_step[1])
        if len(low_high) == 1:  # "N/step" means "N-max/step"
            end = b.high
        if step > 1:
            star = False
    if start < b.low:
        raise CronError(f"{b.name}: beginning of range ({start}) below minimum ({b.low}) in {expr!r}")
    if end > b.high:
        raise CronError(f"{b.name}: end of range ({end}) above maximum ({b.high}) in {expr!r}")
    if start > end:
        raise CronError(f"{b.name}: beginning of range ({start}) beyond end of range ({end}) in {expr!r}")
    if step == 0:
        raise CronError(f"{b.name}: step must be a positive number in {expr!r}")
    return set(range(start, end + 1, step)), star


def _parse_field(text: str, b: _Bounds) -> tuple[frozenset[int], bool]:
    values: set[int] = set()
    star = False
    for part in text.split(","):
        v, s = _parse_part(part, b)
        values |= v
        star = star or s
    return frozenset(values), star


def load_zone(name: str | None) -> tzinfo:
    """IANA zone by name; None means UTC. `Local` is refused, as Kubernetes CronJob refuses it."""
    if name is None:
        return UTC
    if not name or name.lower() == "local" or name.startswith("/") or ".." in name:
        raise CronError(f"time zone {name!r} is not an explicit IANA time zone name")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise CronError(f"unknown time zone {name!r}") from exc


@dataclass(frozen=True)
class CronSchedule:
    """A parsed five-field schedule in a time zone."""

    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    doms: frozenset[int]
    months: frozenset[int]
    dows: frozenset[int]
    dom_star: bool
    dow_star: bool
    zone: tzinfo = UTC

    def day_matches(self, d: date) -> bool:
        """robfig dayMatches: AND when either day field starts with `*`, OR otherwise."""
        dom = d.day in self.doms
        dow = (d.isoweekday() % 7) in self.dows
        if self.dom_star or self.dow_star:
            return dom and dow
        return dom or dow

    def matches_wall(self, wall: datetime) -> bool:
        """Does a wall-clock time (naive, in the schedule's zone) match, ignoring seconds?"""
        return (
            wall.minute in self.minutes
            and wall.hour in self.hours
            and wall.month in self.months
            and self.day_matches(wall.date())
        )

    def _day_offset(self, d: date) -> timedelta | None:
        """The zone's UTC offset on local day `d` when it is the same all day (no DST change), else None."""
        first = datetime(d.year, d.month, d.day, tzinfo=self.zone).utcoffset()
        last = datetime(d.year, d.month, d.day, 23, 59, tzinfo=self.zone, fold=1).utcoffset()
        return first if first == last else None

    def _walls(self, d: date, reverse: bool = False) -> Iterator[datetime]:
        for h in sorted(self.hours, reverse=reverse):
            for m in sorted(self.minutes, reverse=reverse):
                yield datetime(d.year, d.month, d.day, h, m)

    def _first_hit_on(self, d: date, after: datetime) -> datetime | None:
        """The earliest instant (UTC) after `after` on local day `d` whose wall time matches."""
        offset = self._day_offset(d)
        if offset is not None:  # fast path: wall time = instant + offset all day
            target = after.replace(tzinfo=None) + offset
            if datetime(d.year, d.month, d.day, 23, 59) <= target:
                return None
            for wall in self._walls(d):
                if wall > target:
                    return (wall - offset).replace(tzinfo=UTC)
            return None
        best: datetime | None = None
        best_wall = 0
        floor = after.astimezone(self.zone).replace(tzinfo=None) - timedelta(hours=3)
        for h in sorted(self.hours):
            if datetime(d.year, d.month, d.day, h, 59) < floor:
                continue
            for m in sorted(self.minutes):
                wall = h * 60 + m
                if best is not None and wall > best_wall + 180:  # DST shifts are far below 3 hours
                    return best
                for fold in (0, 1):
                    local = datetime(d.year, d.month, d.day, h, m, tzinfo=self.zone, fold=fold)
                    instant = local.astimezone(UTC)
                    if instant <= after or (best is not None and instant >= best):
                        continue
                    back = instant.astimezone(self.zone)
                    if (back.year, back.month, back.day, back.hour, back.minute) == (d.year, d.month, d.day, h, m):
                        best, best_wall = instant, wall
        return best

    def next_after(self, after: datetime) -> datetime | None:
        """The first hit strictly after `after` (aware), in UTC; None when none within robfig's 5 years."""
        try:
            return self._next_after(after)
        except (OverflowError, ValueError):  # the search ran past year 9999
            return None

    def _next_after(self, after: datetime) -> datetime | None:
        if after.tzinfo is None:
            after = after.replace(tzinfo=UTC)
        after = after.astimezone(UTC)
        # robfig starts at the next whole second; hits are whole minutes, so "strictly after" is the same.
        local = after.astimezone(self.zone)
        d = local.date() - timedelta(days=1)  # the previous local day may own instants after `after` (DST)
        limit_year = (after + timedelta(seconds=1)).astimezone(self.zone).year + SEARCH_YEARS
        while d.year <= limit_year:
            if d.month not in self.months:
                d = date(d.year + (d.month == 12), d.month % 12 + 1, 1)
                continue
            if self.day_matches(d):
                hit = self._first_hit_on(d, after)
                if hit is not None:
                    return hit
            d += timedelta(days=1)
        return None

    def _last_hit_on(self, d: date, before: datetime) -> datetime | None:
        """The latest instant (UTC) at or before `before` on local day `d` whose wall time matches."""
        offset = self._day_offset(d)
        if offset is not None:  # fast path: wall time = instant + offset all day
            target = before.replace(tzinfo=None) + offset
            if datetime(d.year, d.month, d.day) > target:
                return None
            for wall in self._walls(d, reverse=True):
                if wall <= target:
                    return (wall - offset).replace(tzinfo=UTC)
            return None
        best: datetime | None = None
        best_wall = 0
        ceiling = before.astimezone(self.zone).replace(tzinfo=None) + timedelta(hours=3)
        for h in sorted(self.hours, reverse=True):
            if datetime(d.year, d.month, d.day, h, 0) > ceiling:
                continue
            for m in sorted(self.minutes, reverse=True):
                wall = h * 60 + m
                if best is not None and wall < best_wall - 180:
                    return best
                for fold in (0, 1):
                    local = datetime(d.year, d.month, d.day, h, m, tzinfo=self.zone, fold=fold)
                    instant = local.astimezone(UTC)
                    if instant > before or (best is not None and instant <= best):
                        continue
                    back = instant.astimezone(self.zone)
                    if (back.year, back.month, back.day, back.hour, back.minute) == (d.year, d.month, d.day, h, m):
                        best, best_wall = instant, wall
        return best

    def last_at_or_before(self, before: datetime) -> datetime | None:
        """The latest hit at or before `before` (aware), in UTC; None when none within five years back."""
        try:
            return self._last_at_or_before(before)
        except (OverflowError, ValueError):  # the search ran past year 1
            return None

    def _last_at_or_before(self, before: datetime) -> datetime | None:
        if before.tzinfo is None:
            before = before.replace(tzinfo=UTC)
        before = before.astimezone(UTC)
        d = before.astimezone(self.zone).date() + timedelta(days=1)
        limit_year = d.year - SEARCH_YEARS - 1
        while d.year >= limit_year:
            if d.month not in self.months:
                d = date(d.year, d.month, 1) - timedelta(days=1)
                continue
            if self.day_matches(d):
                hit = self._last_hit_on(d, before)
                if hit is not None:
                    return hit
            d -= timedelta(days=1)
        return None


def parse_schedule(text: str, time_zone: str | None = None) -> CronSchedule:
    """Parse a standard five-field cron line or a descriptor (@daily, ...) as robfig ParseStandard does."""
    if not isinstance(text, str):
        raise CronError("schedule must be a string")
    zone = load_zone(time_zone)
    spec = text.strip()
    if spec.startswith(("TZ=", "CRON_TZ=")):
        raise CronError("time zone prefixes (TZ=, CRON_TZ=) are not allowed in the schedule; use timeZone")
    if spec.startswith("@"):
        if spec not in DESCRIPTORS:
            raise CronError(f"unrecognized descriptor {spec!r}")
        spec = DESCRIPTORS[spec]
    fields = spec.split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: {text!r}")
    parsed = [_parse_field(f, b) for f, b in zip(fields, _FIELDS, strict=True)]
    (minutes, _), (hours, _), (doms, dom_star), (months, _), (dows, dow_star) = parsed
    return CronSchedule(text, minutes, hours, doms, months, dows, dom_star, dow_star, zone)
