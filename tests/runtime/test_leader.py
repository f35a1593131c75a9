"""Leader election over a coordination.k8s.io/v1 Lease (runtime/leader.py), against the emulated API server through
the real kubernetes client: one candidate leads, the others wait for its lease to expire or be released, a
concurrent acquire has one winner (409 for the rest), and a leader that cannot renew stops its controllers."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes.client import CoordinationV1Api
from kubernetes.client.exceptions import ApiException

from runtime.leader import ElectionSettings, LeaderElector, LeaseRecord, gate_controllers
from runtime.settings import Deps, Settings
from telemetry.metrics import REGISTRY

FAST = ElectionSettings(namespace="default", lease_duration_seconds=2, renew_deadline_seconds=1.5,
                        retry_period_seconds=0.2)
# For the loops' timing: the same 0.2 s retry, but seconds between it, the renew deadline and the lease, so a bound
# that tells one from the other holds on a loaded machine (FAST's 0.78 s bound, under a load of 7 and more, did not
# leave a call's 1 s timeout room)
SPACED = ElectionSettings(namespace="default", lease_duration_seconds=6, renew_deadline_seconds=3,
                          retry_period_seconds=0.2)


class Clock:
    """Wall time plus an offset the test moves forward: the loops keep running while expiry is jumped to."""

    def __init__(self) -> None:
        self.offset = timedelta()

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += timedelta(seconds=seconds)


class Flaky(CoordinationV1Api):
    """The real client, whose writes fail while `broken` (an API server the leader cannot reach)."""

    broken = False

    def replace_namespaced_lease(self, *args: Any, **kwargs: Any) -> Any:
        if self.broken:
            raise ApiException(status=503, reason="Service Unavailable")
        return super().replace_namespaced_lease(*args, **kwargs)


class Retried(CoordinationV1Api):
    """The real client, whose replace is sent twice as urllib3 resends a PUT whose answer timed out: the first
    lands, the second carries the old resourceVersion and is answered 409 Conflict."""

    def replace_namespaced_lease(self, *args: Any, **kwargs: Any) -> Any:
        super().replace_namespaced_lease(*args, **kwargs)
        return super().replace_namespaced_lease(*args, **kwargs)


def _elector(k8s: Any, name: str, clock: Clock, settings: ElectionSettings = FAST, api: Any = None) -> LeaderElector:
    return LeaderElector(api or CoordinationV1Api(k8s), name, settings, clock=clock)


def _record(k8s: Any, settings: ElectionSettings = FAST) -> LeaseRecord:
    return LeaseRecord.of(CoordinationV1Api(k8s).read_namespaced_lease(settings.name, "default"))


async def _until(cond: Any, timeout: float) -> float:
    """Seconds until `cond()` held; fails after `timeout`."""
    start = time.monotonic()
    while not cond():
        assert time.monotonic() - start < timeout, "condition not met in time"
        await asyncio.sleep(0.02)
    return time.monotonic() - start


class Controllers:
    """Stands for the leader-only controllers: running between on_started and on_stopped."""

    def __init__(self) -> None:
        self.running = False
        self.starts = 0

    async def started(self) -> None:
        self.running, self.starts = True, self.starts + 1

    async def stopped(self) -> None:
        self.running = False


def test_settings_keep_client_go_order() -> None:
    assert ElectionSettings().lease_duration_seconds == 15
    with pytest.raises(ValueError, match="renew deadline"):
        ElectionSettings(lease_duration_seconds=10, renew_deadline_seconds=10)


async def test_one_leads_the_other_waits_until_the_lease_expires(k8s: Any) -> None:
    # the test's clock moves the time, not the loops: a lease long enough that no call under the suite's load
    # runs into the per-call timeout (1 s with FAST's; once answered 409 to a resent renewal)
    clock, settings = Clock(), ElectionSettings(namespace="default", lease_duration_seconds=10,
                                                renew_deadline_seconds=8, retry_period_seconds=1)
    a, b = _elector(k8s, "a", clock, settings), _elector(k8s, "b", clock, settings)
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew() and b.observed_holder == "a"
    first = _record(k8s)
    assert (first.holder, first.duration_seconds, first.transitions) == ("a", 10, 0)
    assert first.acquire_time == first.renew_time
    clock.advance(1)
    assert await a.try_acquire_or_renew()  # a renews: same acquireTime, later renewTime
    renewed = _record(k8s)
    assert renewed.acquire_time == first.acquire_time and renewed.renew_time > first.renew_time  # type: ignore[operator]
    clock.advance(9.8)  # a stopped renewing: 9.8 s after its renewal the lease still holds ...
    assert not await b.try_acquire_or_renew()
    clock.advance(0.4)  # ... and past renewTime + leaseDurationSeconds b takes it
    assert await b.try_acquire_or_renew()
    taken = _record(k8s)
    assert (taken.holder, taken.transitions) == ("b", 1) and taken.acquire_time == taken.renew_time


async def test_a_renewal_whose_resent_write_answers_conflict_still_renews(k8s: Any) -> None:
    """A renewal that landed is not lost to the 409 its resend gets (a 409 for another's write still loses: the
    concurrent-acquire test below)."""
    clock = Clock()
    a = _elector(k8s, "a", clock, api=Retried(k8s))
    assert await _elector(k8s, "a", clock).try_acquire_or_renew()
    clock.advance(1)
    assert await a.try_acquire_or_renew()
    record = _record(k8s)
    assert record.holder == "a" and record.renew_time == a.last_renew
    clock.advance(5)  # expired: b takes it through the same resent write; a then sees b's lease
    b = _elector(k8s, "b", clock, api=Retried(k8s))
    assert await b.try_acquire_or_renew() and _record(k8s).holder == "b"
    assert not await a.try_acquire_or_renew() and a.observed_holder == "b"


def test_the_emulator_answers_lease_writes_as_kube_apiserver(k8s: Any) -> None:
    """What the election relies on: 409 AlreadyExists on a second create, 409 Conflict on a replace with a stale
    resourceVersion, and a new resourceVersion on every change."""
    api = CoordinationV1Api(k8s)
    body = {"metadata": {"name": "l", "namespace": "default"}, "spec": {"holderIdentity": "a"}}
    first = api.create_namespaced_lease("default", body)
    with pytest.raises(ApiException) as exists:
        api.create_namespaced_lease("default", body)
    assert exists.value.status == 409 and "AlreadyExists" in str(exists.value.body)
    first.spec.holder_identity = "b"
    second = api.replace_namespaced_lease("l", "default", first)
    assert second.metadata.resource_version != first.metadata.resource_version
    first.spec.holder_identity = "c"  # still at the first resourceVersion
    with pytest.raises(ApiException) as stale:
        api.replace_namespaced_lease("l", "default", first)
    assert stale.value.status == 409 and "Conflict" in str(stale.value.body)
    assert api.read_namespaced_lease("l", "default").spec.holder_identity == "b"


async def test_concurrent_acquires_have_exactly_one_winner(k8s: Any) -> None:
    """On an absent lease the creates race (409 AlreadyExists), on an expired one the replaces do (409 Conflict on
    the resourceVersion all of them read)."""
    clock = Clock()
    electors = [_elector(k8s, f"c{i}", clock) for i in range(6)]
    won = await asyncio.gather(*(e.try_acquire_or_renew() for e in electors))
    assert sum(won) == 1
    clock.advance(5)  # the winner's lease expired: all read the same resourceVersion and replace
    again = [_elector(k8s, f"d{i}", clock) for i in range(6)]
    won = await asyncio.gather(*(e.try_acquire_or_renew() for e in again))
    assert sum(won) == 1
    assert _record(k8s).holder == again[won.index(True)].identity


async def test_release_on_stop_lets_the_other_take_over_at_its_next_retry(k8s: Any) -> None:
    clock = Clock()
    a, b = _elector(k8s, "a", clock, SPACED), _elector(k8s, "b", clock, SPACED)
    ca, cb = Controllers(), Controllers()
    ta = asyncio.create_task(a.run(ca.started, ca.stopped))
    await _until(lambda: ca.running, 5)
    assert _gauge("nodeflow_leader") == 1
    tb = asyncio.create_task(b.run(cb.started, cb.stopped))
    await asyncio.sleep(0.5)
    assert not cb.running and b.observed_holder == "a"
    a.stop()
    await ta
    assert not ca.running and _record(k8s).holder in ("", "b")
    took = await _until(lambda: cb.running, SPACED.lease_duration_seconds)
    assert took < SPACED.lease_duration_seconds / 2  # at its next retry (0.2 s), not after the 6 s lease
    assert _record(k8s).transitions == 1
    b.stop()
    await tb


async def test_a_leader_that_cannot_renew_stops_its_controllers_at_the_renew_deadline(k8s: Any) -> None:
    clock = Clock()
    api = Flaky(k8s)
    a = _elector(k8s, "a", clock, SPACED, api=api)
    ca = Controllers()
    task = asyncio.create_task(a.run(ca.started, ca.stopped))
    await _until(lambda: ca.running, 5)
    api.broken = True
    await asyncio.sleep(1.0)
    assert ca.running and a.is_leader  # failed renewals within the renew deadline are retried
    lost = await _until(lambda: not ca.running, SPACED.lease_duration_seconds)
    # at the 3 s renew deadline (2 s after the sleep), well before the 6 s lease would let anyone else lead
    assert not a.is_leader and lost < (SPACED.renew_deadline_seconds + SPACED.lease_duration_seconds) / 2 - 1.0
    assert _gauge("nodeflow_leader") == 0
    # the lease expires only after leaseDurationSeconds: then (the clock moved there) another takes over
    b = _elector(k8s, "b", clock, SPACED)
    assert not await b.try_acquire_or_renew()
    clock.advance(SPACED.lease_duration_seconds)
    assert await b.try_acquire_or_renew()
    api.broken = False
    await asyncio.sleep(0.5)
    assert not ca.running and ca.starts == 1  # b holds a valid lease: a waits
    a.stop()
    await task


async def test_a_leader_that_sees_another_holder_stops_at_once(k8s: Any) -> None:
    """Its own clock was off, or it was paused past its lease: whoever holds the lease now leads."""
    clock = Clock()
    a = _elector(k8s, "a", clock, SPACED)
    ca = Controllers()
    task = asyncio.create_task(a.run(ca.started, ca.stopped))
    await _until(lambda: ca.running, 5)
    clock.advance(SPACED.lease_duration_seconds + 1)
    assert await _elector(k8s, "b", clock, SPACED).try_acquire_or_renew()
    took = await _until(lambda: not ca.running, SPACED.lease_duration_seconds)
    assert took < SPACED.lease_duration_seconds / 2  # at its next renewal (0.2 s)
    a.stop()
    await task
    assert _record(k8s).holder == "b"  # not released: it was not a's


def test_without_election_the_controllers_start_at_once() -> None:
    calls: list[str] = []
    stops = gate_controllers(Deps(kube_api=None, ec2=None, settings=Settings()), lambda: calls.append("start") or [])
    assert calls == ["start"] and stops == []
    assert _gauge("nodeflow_leader") == 1  # every replica runs them: NodeflowNoLeader stays quiet


def test_worker_flags_elect_by_default_and_refuse_a_renew_deadline_past_the_lease(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import worker

    monkeypatch.delenv("NODEFLOW_DISABLE_LEADER_ELECTION", raising=False)
    assert worker.election_settings(worker.parse_args([])) == ElectionSettings()
    assert worker.election_settings(worker.parse_args(["--disable-leader-election"])) is None
    short = worker.parse_args(["--leader-election-lease-duration", "4s", "--leader-election-renew-deadline", "3s",
                               "--leader-election-retry-period", "500ms", "--leader-election-namespace", "ops"])
    assert worker.election_settings(short) == ElectionSettings(namespace="ops", lease_duration_seconds=4,
                                                               renew_deadline_seconds=3, retry_period_seconds=0.5)
    with pytest.raises(SystemExit) as refused:
        worker.parse_args(["--leader-election-renew-deadline", "20s"])
    assert refused.value.code == 2


def _gauge(name: str) -> float | None:
    return REGISTRY.get_sample_value(name)


async def test_renewals_do_not_queue_behind_the_loops_other_blocking_calls(k8s: Any) -> None:
    """The activities' blocking calls share the loop's default executor; a burst of launches filled it. The
    elector has threads of its own, so the leader keeps renewing while every default thread is taken."""
    loop = asyncio.get_running_loop()  # shared with later tests: they get a working default executor back
    busy = ThreadPoolExecutor(max_workers=1)
    loop.set_default_executor(busy)
    try:
        hog = asyncio.create_task(asyncio.to_thread(time.sleep, FAST.renew_deadline_seconds * 3))
        a = _elector(k8s, "a", Clock())
        ca = Controllers()
        task = asyncio.create_task(a.run(ca.started, ca.stopped))
        await _until(lambda: ca.running, 2)
        renewed = a.last_renew
        await asyncio.sleep(FAST.renew_deadline_seconds * 2)
        assert ca.running and a.is_leader and a.last_renew is not None and renewed is not None
        assert a.last_renew > renewed, "the lease was renewed while the default executor was busy"
        a.stop()
        await task
        await hog
    finally:
        loop.set_default_executor(ThreadPoolExecutor(thread_name_prefix="asyncio"))
        busy.shutdown(wait=False)
