"""Kubernetes Events that explain disruption decisions, and the outcome counters.

Events are deduplicated per worker like Karpenter's recorder (Unconsolidatable 15 min, DisruptionBlocked
1 min, others 2 min), since a planner pass every 10 s would otherwise repeat the same explanation.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from datetime import UTC, datetime
from typing import Any

from temporalio import activity

from activities.kube_client import KubeClient
from activities.kube_client import event_body as kube_event_body
from api.events import DEDUPE_SECONDS, DEFAULT_DEDUPE_SECONDS
from telemetry import metrics
from workflows.disruption_models import EventsInput, EventSpec

EVENT_NAMESPACE = "default"


def event_body(ev: EventSpec, now: datetime, component: str = "nodeflow") -> dict[str, Any]:
    """The Event of a planner explanation, named by its content and time so a retried activity records it once."""
    digest = hashlib.sha1(f"{ev.kind}/{ev.name}/{ev.reason}/{ev.message}/{now.isoformat()}".encode()).hexdigest()
    return kube_event_body(ev.kind, ev.name, ev.reason, ev.message, now, uid=ev.uid, type_=ev.type,
                           namespace=EVENT_NAMESPACE, component=component, event_name=f"{ev.name}.{digest[:16]}")


class EventActivities:
    """Records Events through the Kubernetes gateway; counts disruption outcomes in telemetry.metrics."""

    def __init__(self, kube: KubeClient, clock: Any = time.monotonic) -> None:
        self._kube = kube
        self._clock = clock
        self._last: dict[tuple[str, str, str, str], float] = {}

    def fresh(self, events: list[EventSpec]) -> list[EventSpec]:
        """Drop events recorded within their dedupe window (and duplicates inside the batch)."""
        now = self._clock()
        out = []
        for ev in events:
            key = (ev.kind, ev.name, ev.reason, ev.message)
            window = DEDUPE_SECONDS.get(ev.reason, DEFAULT_DEDUPE_SECONDS)
            last = self._last.get(key)
            if last is not None and now - last < window:
                continue
            self._last[key] = now
            out.append(ev)
        return out

    @activity.defn(name="disruption_record_events")
    async def record_events(self, inp: EventsInput) -> int:
        if inp.outcome and inp.reason:
            metrics.DISRUPTION_OUTCOMES.labels(reason=inp.reason, outcome=inp.outcome).inc()
        events = self.fresh(inp.events)
        if events:
            await asyncio.to_thread(self._create_all, events)
        return len(events)

    def _create_all(self, events: list[EventSpec]) -> None:
        now = datetime.now(UTC)
        for ev in events:
            self._kube.create_event(event_body(ev, now))
