"""Leader election for the in-worker controllers over a coordination.k8s.io/v1 Lease, as client-go's
leaderelection package does it (and Karpenter, which runs one leader).

Every replica serves Temporal tasks; only the leader runs the controllers that watch the cluster and act on their
own (NodeClaim lifecycle and garbage collection, NodePool status, the deletion watcher, the pending-pod intake and
Karpenter's state gauges), so each of their decisions and cloud calls is made once (docs/decisions.md §22).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import random
import socket
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kubernetes.client import CoordinationV1Api, V1Lease, V1LeaseSpec, V1ObjectMeta
from kubernetes.client.exceptions import ApiException

from telemetry.metrics import LEADER, LEADER_TRANSITIONS

log = logging.getLogger(__name__)
Clock = Callable[[], datetime]
Stop = Callable[[], Awaitable[Any]]
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
DEFAULT_LEASE_NAME = "nodeflow-controllers"


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class ElectionSettings:
    """client-go's defaults (LeaseDuration 15 s, RenewDeadline 10 s, RetryPeriod 2 s). The leader stops its
    controllers once no renewal succeeded for `renew_deadline_seconds`; the others take over only after
    `lease_duration_seconds` without a renewal: the gap between the two is the margin against two leaders."""

    name: str = DEFAULT_LEASE_NAME
    namespace: str | None = None  # None: the worker's own (worker_namespace())
    lease_duration_seconds: int = 15
    renew_deadline_seconds: float = 10.0
    retry_period_seconds: float = 2.0
    release_on_stop: bool = True  # client-go's ReleaseOnCancel: hand the lease back at a graceful stop

    def __post_init__(self) -> None:
        if not self.lease_duration_seconds > self.renew_deadline_seconds > self.retry_period_seconds > 0:
            raise ValueError("leader election needs lease duration > renew deadline > retry period > 0, got "
                             f"{self.lease_duration_seconds}, {self.renew_deadline_seconds}, "
                             f"{self.retry_period_seconds}")


def worker_namespace() -> str:
    """The pod's namespace (its service account's, as client-go reads it in-cluster), else `default`."""
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or "default"
    except OSError:
        return "default"


def new_identity() -> str:
    """The pod name (HOSTNAME) and a random suffix: a restarted pod of the same name is a new candidate."""
    return f"{os.environ.get('HOSTNAME') or socket.gethostname()}_{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class LeaseRecord:
    """What a Lease says about its holder (client-go's LeaderElectionRecord)."""

    holder: str
    duration_seconds: int
    renew_time: datetime | None
    acquire_time: datetime | None
    transitions: int

    @classmethod
    def of(cls, lease: V1Lease) -> LeaseRecord:
        spec = lease.spec or V1LeaseSpec()
        return cls(spec.holder_identity or "", spec.lease_duration_seconds or 0, _aware(spec.renew_time),
                   _aware(spec.acquire_time), spec.lease_transitions or 0)

    def expired(self, now: datetime) -> bool:
        """renewTime + leaseDurationSeconds is past (a lease never renewed has expired)."""
        return self.renew_time is None or self.renew_time + timedelta(seconds=self.duration_seconds) < now


def _aware(t: datetime | None) -> datetime | None:
    return t.replace(tzinfo=UTC) if t is not None and t.tzinfo is None else t


class LeaderElector:
    """One candidate for one Lease. `run()` acquires, starts the leader's work, renews, and stops that work as soon
    as leadership is lost; `stop()` ends it and hands the lease back."""

    def __init__(self, coordination: CoordinationV1Api, identity: str, settings: ElectionSettings,
                 clock: Clock = utcnow) -> None:
        self.coordination = coordination
        self.identity = identity
        self.settings = settings
        self.namespace = settings.namespace or worker_namespace()
        self.clock = clock
        self.is_leader = False
        self.observed_holder = ""
        self.last_renew: datetime | None = None  # our last successful acquire or renew, by `clock`
        self._stopping = asyncio.Event()
        self._timeout = max(1.0, settings.renew_deadline_seconds / 2)  # one API call
        # Threads of its own, as client-go's elector has its own goroutine: on the loop's default executor a
        # burst of 500 launches queued the renewal behind them, and the leader lost its lease 20 s in.
        self._threads = ThreadPoolExecutor(max_workers=2, thread_name_prefix="leader-election")

    async def try_acquire_or_renew(self) -> bool:
        """One attempt (client-go's tryAcquireOrRenew): create the lease when absent; take it when its holder's
        renewal has expired, it was released, or it is ours; a 409 on create or replace means another won."""
        now = self.clock()
        name, ns = self.settings.name, self.namespace
        try:
            lease = await self._call(self.coordination.read_namespaced_lease, name, ns)
        except ApiException as exc:
            if exc.status != 404:
                raise
            body = V1Lease(metadata=V1ObjectMeta(name=name, namespace=ns), spec=self._spec(None, now))
            return await self._write(self.coordination.create_namespaced_lease, ns, body, now=now)
        record = LeaseRecord.of(lease)
        self.observed_holder = record.holder
        if record.holder and record.holder != self.identity and not record.expired(now):
            return False
        lease.spec = self._spec(record, now)  # lease.metadata keeps its resourceVersion: a stale one answers 409
        return await self._write(self.coordination.replace_namespaced_lease, name, ns, lease, now=now)

    def _spec(self, record: LeaseRecord | None, now: datetime) -> V1LeaseSpec:
        ours = record is not None and record.holder == self.identity
        transitions = 0 if record is None else record.transitions + (0 if ours else 1)
        acquired = record.acquire_time if ours and record is not None else now
        return V1LeaseSpec(holder_identity=self.identity, lease_duration_seconds=self.settings.lease_duration_seconds,
                           acquire_time=acquired, renew_time=now, lease_transitions=transitions)

    async def _write(self, call: Callable[..., Any], *args: Any, now: datetime) -> bool:
        try:
            await self._call(call, *args)
        except ApiException as exc:
            if exc.status != 409:  # AlreadyExists on create, Conflict on a stale resourceVersion
                raise
            if not await self._landed(now):
                return False
        self.observed_holder, self.last_renew = self.identity, now
        return True

    async def _landed(self, now: datetime) -> bool:
        """After a 409: whether the lease holds our own write of `now`. The client retries a PUT whose answer timed
        out; when the first one landed, the retry's stale resourceVersion answers 409 for a write that succeeded."""
        try:
            record = LeaseRecord.of(await self._call(self.coordination.read_namespaced_lease, self.settings.name,
                                                     self.namespace))
        except ApiException:
            return False
        self.observed_holder = record.holder
        return record.holder == self.identity and record.renew_time == now

    async def _call(self, call: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(
            self._threads, functools.partial(call, *args, _request_timeout=self._timeout))

    async def _attempt(self, timeout: float) -> bool:
        """An attempt that neither raises nor outlasts `timeout` (a failed attempt is retried, not fatal)."""
        try:
            return await asyncio.wait_for(self.try_acquire_or_renew(), timeout)
        except Exception as exc:
            log.warning("leader election: lease %s/%s not acquired or renewed: %s", self.namespace,
                        self.settings.name, str(exc) or type(exc).__name__)  # a timeout's text is empty
            return False

    async def run(self, on_started: Callable[[], Awaitable[Any]], on_stopped: Callable[[], Awaitable[Any]]) -> None:
        """Until stop(): wait to acquire, then lead (on_started) until a renewal fails past the renew deadline or
        another holder shows, then stop leading at once (on_stopped) and wait again. A stop releases the lease."""
        try:
            while await self._acquire():
                self._lead(True)
                try:
                    await on_started()
                    await self._renew_until_lost()
                finally:
                    self._lead(False)
                    await on_stopped()
        finally:
            if self.settings.release_on_stop and self.last_renew is not None:
                await self.release()
            self._threads.shutdown(wait=False)

    def stop(self) -> None:
        self._stopping.set()

    async def _acquire(self) -> bool:
        """Retry every retry period (jittered, so candidates spread out) until acquired (True) or stopped."""
        while not self._stopping.is_set():
            if await self._attempt(self._timeout):
                return True
            if await self._sleep(self.settings.retry_period_seconds * (1 + 0.2 * random.random())):
                break
        return False

    async def _renew_until_lost(self) -> None:
        """Renew every retry period; return when stopped, when another holder shows, or at the renew deadline."""
        deadline = timedelta(seconds=self.settings.renew_deadline_seconds)
        while not await self._sleep(self.settings.retry_period_seconds):
            assert self.last_renew is not None
            remaining = (self.last_renew + deadline - self.clock()).total_seconds()
            if remaining > 0 and await self._attempt(min(remaining, self._timeout)):
                continue
            other = self.observed_holder not in ("", self.identity)
            if other or self.clock() >= self.last_renew + deadline:
                log.warning("leader election: lost lease %s/%s (%s)", self.namespace, self.settings.name,
                            f"held by {self.observed_holder}" if other else "no renewal within the renew deadline")
                LEADER_TRANSITIONS.labels(transition="lost").inc()
                return

    async def _sleep(self, seconds: float) -> bool:
        """Sleep, or wake early when stopped; True when stopped."""
        try:
            await asyncio.wait_for(self._stopping.wait(), seconds)
        except TimeoutError:
            return False
        return True

    def _lead(self, leading: bool) -> None:
        self.is_leader = leading
        LEADER.set(1 if leading else 0)
        if leading:
            LEADER_TRANSITIONS.labels(transition="acquired").inc()
            log.info("leader election: %s leads (lease %s/%s)", self.identity, self.namespace, self.settings.name)

    async def release(self) -> bool:
        """Hand the lease back (client-go's ReleaseOnCancel: no holder, duration 1 s) so another replica takes
        over at its next retry instead of after the lease duration; only if it is still ours."""
        now = self.clock()
        try:
            lease = await self._call(self.coordination.read_namespaced_lease, self.settings.name, self.namespace)
            record = LeaseRecord.of(lease)
            if record.holder != self.identity:
                return False
            lease.spec = V1LeaseSpec(holder_identity="", lease_duration_seconds=1, acquire_time=now, renew_time=now,
                                     lease_transitions=record.transitions)
            await self._call(self.coordination.replace_namespaced_lease, self.settings.name, self.namespace, lease)
        except Exception as exc:  # it expires on its own within the lease duration
            log.warning("leader election: lease %s/%s not released: %s", self.namespace, self.settings.name, exc)
            return False
        self.last_renew = None
        LEADER_TRANSITIONS.labels(transition="released").inc()
        return True


def gate_controllers(deps: Any, start: Callable[[], list[Stop]]) -> list[Stop]:
    """Start the in-worker controllers (`start`) on every replica when election is off (settings.leader_election
    None), else only while this replica leads; returns how to stop them (and hand the lease back)."""
    election: ElectionSettings | None = deps.settings.leader_election
    if election is None:
        LEADER.set(1)  # every replica runs the controllers: each counts as leading (NodeflowNoLeader stays quiet)
        return start()
    elector = LeaderElector(CoordinationV1Api(deps.kube_api), new_identity(), election)
    deps._cache["leader_elector"] = elector  # for tests and diagnostics
    running: list[Stop] = []

    async def started() -> None:
        running[:] = start()

    async def stopped() -> None:
        parts, running[:] = list(running), []
        for stop_part in parts:
            await stop_part()

    task = asyncio.create_task(elector.run(started, stopped), name="leader-election")
    task.add_done_callback(_log_failure)

    async def stop_all() -> None:
        elector.stop()
        await asyncio.gather(task, return_exceptions=True)

    return [stop_all]


def _log_failure(task: asyncio.Task[None]) -> None:
    """A controller that failed to start ends the election (the lease is released, another replica leads): say why."""
    if not task.cancelled() and task.exception() is not None:
        log.error("leader election ended: %s", task.exception(), exc_info=task.exception())
