"""Kubernetes Events that explain nodeflow's decisions, recorded as Karpenter's recorder records them.

Karpenter's recorder (`pkg/events/recorder.go`) drops an Event whose key (reason + the involved object, and
for some reasons the message) it published within the reason's window (2 min unless api/events.py says
otherwise: Unconsolidatable 15 min, NodePool DisruptionBlocked 1 min, FailedScheduling 5 min), and rate-limits
Nominated. One `Recorder` per KubeClient, i.e. per worker process, in memory as Karpenter's is: the planner
pass every 10 s, a drain round every second and a redelivered interruption do not repeat themselves.
docs/semantics.md §10.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
import time
import weakref
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from temporalio import activity

from activities.fan_out import each
from api import events
from api.events import EventReason, dedupe_key, spec_of
from contracts.disruption import EventsInput, EventSpec
from gateways.kube import KubeClient
from gateways.kube import event_body as kube_event_body
from gateways.rate_limit import TokenBucket
from telemetry import metrics

log = logging.getLogger(__name__)

EVENT_NAMESPACE = "default"
PRUNE_AT = 20_000  # keys held before expired ones are dropped (Karpenter's go-cache janitor runs every 10 s)


def event_body(ev: EventSpec, now: datetime, component: str = "nodeflow") -> dict[str, Any]:
    """The Event of `ev`, named by its content and time so a retried activity records it once."""
    namespace = ev.namespace or EVENT_NAMESPACE
    digest = hashlib.sha1(f"{ev.kind}/{namespace}/{ev.name}/{ev.reason}/{ev.message}/{now.isoformat()}".encode()
                          ).hexdigest()
    return kube_event_body(ev.kind, ev.name, ev.reason, ev.message, now, uid=ev.uid, type_=ev.type,
                           namespace=namespace, component=component, event_name=f"{ev.name}.{digest[:16]}")


def nominated_spec(pod: str, node_claim: str | None = None, node: str | None = None,
                   uid: str | None = None) -> EventSpec:
    """Nominated on the pending Pod `namespace/name` the provisioner placed on a NodeClaim and/or Node
    (provisioner.go, scheduler.go: NominatePodEvent)."""
    namespace, _, name = pod.rpartition("/")
    return EventSpec(kind="Pod", name=name, namespace=namespace or EVENT_NAMESPACE, uid=uid,
                     reason=EventReason.NOMINATED, message=events.nominated(node_claim, node))


class Recorder:
    """Publishes EventSpecs through the Kubernetes gateway after Karpenter's dedupe and rate limits; a listed
    reason always gets its table's type (one reason, one type)."""

    def __init__(self, kube: KubeClient, clock: Callable[[], float] = time.monotonic) -> None:
        self._kube = kube
        self._clock = clock
        self._until: dict[tuple[str, ...], float] = {}  # dedupe key -> when a repeat may be published again
        self._buckets: dict[str, TokenBucket] = {}
        self._lock = threading.Lock()

    def fresh(self, events: list[EventSpec]) -> list[EventSpec]:
        """The events to publish now, typed as their reason's table says; repeats within their window (and
        within the batch) and rate-limited ones are dropped."""
        now = self._clock()
        out = []
        with self._lock:
            if len(self._until) > PRUNE_AT:
                self._until = {k: t for k, t in self._until.items() if t > now}
            for ev in events:
                spec = spec_of(ev.reason, ev.kind)
                key = dedupe_key(ev.reason, ev.kind, ev.namespace or "", ev.name, ev.uid, ev.message)
                if self._until.get(key, 0.0) > now:
                    continue
                self._until[key] = now + spec.dedupe_seconds
                if spec.per_second is not None and not self._bucket(ev.reason, spec.per_second, spec.burst):
                    continue
                out.append(ev if not spec.type or ev.type == spec.type else ev.model_copy(update={"type": spec.type}))
        return out

    def _bucket(self, reason: str, rate: float, burst: int) -> bool:
        bucket = self._buckets.get(reason)
        if bucket is None:
            bucket = self._buckets[reason] = TokenBucket(rate, burst, clock=self._clock)
        return bucket.try_accept()

    def publish(self, *events: EventSpec) -> int:
        """Best effort (blocking): each fresh event is created; a failure is logged, never raised."""
        fresh = self.fresh(list(events))
        now = datetime.now(UTC)
        for ev in fresh:
            try:
                self._kube.create_event(event_body(ev, now, self._kube.component))
            except Exception as exc:  # an explanation never fails the work it explains
                log.warning("event %s on %s %s not recorded: %s", ev.reason, ev.kind, ev.name, exc)
        return len(fresh)


_RECORDERS: weakref.WeakKeyDictionary[KubeClient, Recorder] = weakref.WeakKeyDictionary()
_RECORDERS_LOCK = threading.Lock()


def recorder_for(kube: KubeClient) -> Recorder:
    """The worker's one Recorder (one KubeClient per worker process), so every activity shares its windows."""
    with _RECORDERS_LOCK:
        rec = _RECORDERS.get(kube)
        if rec is None:
            rec = _RECORDERS[kube] = Recorder(kube)
        return rec


class EventActivities:
    """Records Events through the worker's Recorder; counts disruption outcomes in telemetry.metrics."""

    def __init__(self, kube: KubeClient, clock: Callable[[], float] | None = None) -> None:
        self._kube = kube
        self.recorder = recorder_for(kube) if clock is None else Recorder(kube, clock)

    def fresh(self, events: list[EventSpec]) -> list[EventSpec]:
        """Drop events recorded within their dedupe window (and duplicates inside the batch)."""
        return self.recorder.fresh(events)

    @activity.defn(name="disruption_record_events")
    async def record_events(self, inp: EventsInput) -> int:
        if inp.outcome and inp.reason:
            metrics.DISRUPTION_OUTCOMES.labels(reason=inp.reason, outcome=inp.outcome).inc()
        events = self.fresh(inp.events)
        if events:
            await asyncio.to_thread(self._create_all, events)
        return len(events)

    def _create_all(self, events: list[EventSpec]) -> None:
        """A few one after another; many several at a time (activities/fan_out.py): a provisioning batch of 1,000
        launches records 1,000 Launched events, which one at a time outlasted the activity's 30 s timeout."""
        now = datetime.now(UTC)
        bodies = [event_body(ev, now) for ev in events]
        each(self._kube.create_event, bodies)  # the first failure is raised, as one by one
