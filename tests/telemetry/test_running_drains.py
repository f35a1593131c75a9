"""The running-drains gauge: a series per node while its drain runs, gone when it finishes or goes quiet."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from telemetry.drains import RunningDrains


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def samples(drains: RunningDrains) -> dict[tuple[str, str], float]:
    (family,) = list(drains.collect())
    return {(s.labels["node"], s.labels["reason"]): s.value for s in family.samples}


def test_a_drain_is_shown_from_its_first_round_until_it_finishes() -> None:
    clock = Clock()
    drains = RunningDrains("nodeflow_drain_started_timestamp_seconds", ttl=300, clock=clock)
    assert samples(drains) == {}
    drains.running("general-01", "Drifted", 900.0)
    clock.now += 60
    drains.running("general-01", "Drifted", 900.0)
    drains.running("general-02", "Expired", None)  # no start time given: the first round's time
    assert samples(drains) == {("general-01", "Drifted"): 900.0, ("general-02", "Expired"): 1_060.0}
    clock.now += 30
    drains.running("general-02", "Expired", None)
    assert samples(drains)[("general-02", "Expired")] == 1_060.0  # keeps its first time
    drains.finished("general-01")
    assert samples(drains) == {("general-02", "Expired"): 1_060.0}


def test_a_drain_not_seen_within_the_ttl_is_dropped() -> None:
    """Its activity moved to another worker (which now shows it) or its termination was cancelled."""
    clock = Clock()
    drains = RunningDrains("x_drain_started", ttl=300, clock=clock)
    drains.running("general-01", "Drifted", 900.0)
    clock.now += 299
    assert samples(drains)
    clock.now += 2
    assert samples(drains) == {}


def test_the_family_is_exposed_by_a_registry_with_its_labels() -> None:
    registry = CollectorRegistry()
    drains = RunningDrains("nodeflow_drain_started_timestamp_seconds")
    registry.register(drains)
    drains.running("general-01", "Drifted", 1_700_000_000.0)
    text = generate_latest(registry).decode()
    assert "# TYPE nodeflow_drain_started_timestamp_seconds gauge" in text
    assert 'nodeflow_drain_started_timestamp_seconds{node="general-01",reason="Drifted"} 1.7e+09' in text
