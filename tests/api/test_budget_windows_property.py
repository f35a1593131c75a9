"""Property tests: the budget window logic against a brute-force, minute-by-minute evaluation.

The brute force is written independently of api/cron.py: it knows each field's value set from the way
the schedule was generated, matches robfig's day rule itself, and walks every whole minute of
(at - duration, at] converted to the zone's wall clock, so skipped and repeated wall times come out of
the conversion rather than from the code under test.
"""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api.budgets import is_active, next_transition
from api.nodepool import Budget

ZONES = [None, "America/New_York", "Europe/London", "Australia/Lord_Howe"]
# instants near DST changes of those zones, and ordinary ones
ANCHORS = [
    datetime(2026, 3, 8, 7, tzinfo=UTC),  # New York springs forward
    datetime(2026, 11, 1, 6, tzinfo=UTC),  # New York falls back
    datetime(2026, 3, 29, 1, tzinfo=UTC),  # London springs forward
    datetime(2026, 10, 25, 1, tzinfo=UTC),  # London falls back
    datetime(2026, 10, 3, 15, 30, tzinfo=UTC),  # Lord Howe +30 min
    datetime(2026, 4, 4, 15, tzinfo=UTC),  # Lord Howe -30 min
    datetime(2026, 6, 15, 12, tzinfo=UTC),
    datetime(2027, 2, 28, 23, tzinfo=UTC),
]


@dataclass
class Field:
    text: str
    values: frozenset[int]
    star: bool


def field(low: int, high: int) -> st.SearchStrategy[Field]:
    """A cron field as text plus the set it denotes (computed here, not by the parser)."""
    every = st.just(Field("*", frozenset(range(low, high + 1)), True))
    step = st.integers(2, max(2, (high - low) // 2)).map(
        lambda k: Field(f"*/{k}", frozenset(range(low, high + 1, k)), False))
    values = st.sets(st.integers(low, high), min_size=1, max_size=4).map(
        lambda vs: Field(",".join(map(str, sorted(vs))), frozenset(vs), False))
    span = st.tuples(st.integers(low, high), st.integers(low, high)).map(sorted).map(
        lambda ab: Field(f"{ab[0]}-{ab[1]}", frozenset(range(ab[0], ab[1] + 1)), False))
    return st.one_of(every, step, values, span)


@dataclass
class Spec:
    minute: Field
    hour: Field
    dom: Field
    month: Field
    dow: Field

    @property
    def text(self) -> str:
        return " ".join(f.text for f in (self.minute, self.hour, self.dom, self.month, self.dow))

    def matches(self, wall: datetime) -> bool:
        dom = wall.day in self.dom.values
        dow = (wall.weekday() + 1) % 7 in self.dow.values
        day = (dom and dow) if (self.dom.star or self.dow.star) else (dom or dow)
        return (wall.minute in self.minute.values and wall.hour in self.hour.values
                and wall.month in self.month.values and day)


specs = st.builds(Spec, field(0, 59), field(0, 23), field(1, 31), field(1, 12), field(0, 6))
# keep the hits dense enough that windows are often open near the anchors
dense_specs = st.builds(Spec, field(0, 59), field(0, 23), st.just(Field("*", frozenset(range(1, 32)), True)),
                        st.just(Field("*", frozenset(range(1, 13)), True)), field(0, 6))


def brute_force_active(spec: Spec, duration: timedelta, at: datetime, zone: str | None) -> bool:
    tz = ZoneInfo(zone) if zone else UTC
    minute = at.replace(second=0, microsecond=0)
    while minute > at - duration:  # hits H with at - duration < H <= at
        if spec.matches(minute.astimezone(tz).replace(tzinfo=None)):
            return True
        minute -= timedelta(minutes=1)
    return False


instants = st.tuples(st.sampled_from(ANCHORS), st.integers(-3 * 24 * 60, 3 * 24 * 60), st.integers(0, 59)).map(
    lambda t: t[0] + timedelta(minutes=t[1], seconds=t[2]))
durations = st.integers(1, 8 * 60).map(lambda m: timedelta(minutes=m))


def to_budget(spec: Spec, duration: timedelta, zone: str | None) -> Budget:
    minutes = int(duration.total_seconds() // 60)
    return Budget(nodes="0", schedule=spec.text, duration=f"{minutes // 60}h{minutes % 60}m", time_zone=zone)


SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(spec=st.one_of(specs, dense_specs), duration=durations, at=instants)
def test_window_matches_brute_force_in_utc(spec: Spec, duration: timedelta, at: datetime) -> None:
    assert is_active(to_budget(spec, duration, None), at) == brute_force_active(spec, duration, at, None)


@SETTINGS
@given(spec=dense_specs, duration=durations, at=instants, zone=st.sampled_from(ZONES[1:]))
def test_window_matches_brute_force_with_time_zone(spec: Spec, duration: timedelta, at: datetime, zone: str) -> None:
    assert is_active(to_budget(spec, duration, zone), at) == brute_force_active(spec, duration, at, zone)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=dense_specs, duration=st.integers(1, 3 * 60).map(lambda m: timedelta(minutes=m)), at=instants,
       zone=st.sampled_from(ZONES))
def test_next_transition_is_the_first_change(spec: Spec, duration: timedelta, at: datetime, zone: str | None) -> None:
    budget = to_budget(spec, duration, zone)
    change = next_transition(budget, at)
    now = brute_force_active(spec, duration, at, zone)
    if change is None:
        return
    assert change.opens is (not now)
    assert change.at > at
    assert brute_force_active(spec, duration, change.at, zone) is change.opens
    assert brute_force_active(spec, duration, change.at - timedelta(seconds=1), zone) is now
    # nothing changes before it: probe 10 instants spread over (at, change)
    span = change.at - at
    for i in range(1, 11):
        t = at + span * i / 11
        assert brute_force_active(spec, duration, t, zone) is now, t


@settings(max_examples=100, deadline=None)
@given(spec=specs, at=instants, zone=st.sampled_from(ZONES))
def test_previous_and_next_hit_agree(spec: Spec, at: datetime, zone: str | None) -> None:
    from api.cron import parse_schedule

    sched = parse_schedule(spec.text, zone)
    nxt, prev = sched.next_after(at), sched.last_at_or_before(at)
    if nxt is not None:
        assert nxt > at and sched.last_at_or_before(nxt) == nxt
        assert sched.last_at_or_before(nxt - timedelta(seconds=1)) == prev
    if prev is not None:
        assert prev <= at and sched.next_after(prev) == nxt
