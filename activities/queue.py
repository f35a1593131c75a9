"""The SQS interruption queue: a long-polling, heartbeating activity that hands messages to the dispatcher.

A message is deleted only after its workflows were started or signalled (or it was understood to need
nothing). If handling raises, the message is left alone and SQS redelivers it after the visibility timeout;
after `max_receives` deliveries it is logged, counted and deleted, so nothing is retried forever.
Malformed and unknown messages are logged, counted and deleted at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from typing import Any, Protocol

from temporalio import activity

from activities.karpenter_metrics import message_type
from api.interruption import InterruptionEvent, Malformed, Unknown, parse_message
from contracts.interruption import PollCounts, PollInput
from gateways.sqs import QueueMessage, SqsQueue
from telemetry import karpenter_metrics as km
from telemetry import metrics

log = logging.getLogger(__name__)

HEARTBEAT_EVERY = 1.0  # seconds (the SDK throttles sends); heartbeats run beside the blocking long poll


class Dispatcher(Protocol):
    """What the queue hands messages to (runtime/interruption.py's InterruptionDispatcher): its index of the
    cluster's nodes, loaded once per poll and passed back with each message (the queue never reads it)."""

    async def load_nodes(self) -> dict[str, Any]: ...

    async def dispatch(self, event: InterruptionEvent, nodes: dict[str, Any]) -> list[str]: ...


class InterruptionQueueActivities:
    """Clients come in: the queue (boto3 SQS) and the dispatcher (Kubernetes + Temporal starters)."""

    def __init__(self, queue: SqsQueue, dispatcher: Dispatcher) -> None:
        self._queue = queue
        self._dispatcher = dispatcher

    @activity.defn(name="interruption_poll_queue")
    async def poll_interruption_queue(self, inp: PollInput) -> PollCounts:
        """Long-poll for `inp.run_seconds`, handling each batch as it arrives; heartbeats all along."""
        counts = _Tally()
        ticker = asyncio.create_task(_heartbeat_forever(counts))
        try:
            end = time.monotonic() + inp.run_seconds
            while time.monotonic() < end and not activity.is_worker_shutdown():
                wait = int(max(0, min(inp.wait_seconds, end - time.monotonic())))
                batch = await asyncio.get_running_loop().run_in_executor(
                    self._queue.poll_executor, self._queue.receive, wait, inp.max_messages,
                    inp.visibility_timeout_seconds)
                if batch:
                    await self.handle_batch(batch, inp, counts)
        finally:
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker
        return counts.result()

    async def handle_batch(self, batch: list[QueueMessage], inp: PollInput, counts: _Tally | None = None) -> PollCounts:
        """Parse, dispatch and delete one batch; messages are handled concurrently."""
        counts = counts or _Tally()
        parsed = [(m, parse_message(m.body)) for m in batch]
        for _, p in parsed:  # counted on receipt, before any lookup that could hang or fail
            kind = _kind(p)
            counts.received += 1
            counts.by_kind[kind] += 1
            metrics.INTERRUPTION_MESSAGES.labels(kind=kind).inc()
            if isinstance(p, InterruptionEvent):  # the provider counts the messages it parsed, by its kinds
                km.INTERRUPTION_RECEIVED.labels(message_type=message_type(p)).inc()
        nodes: dict[str, Any] = {}
        if any(isinstance(p, InterruptionEvent) for _, p in parsed):
            nodes = await self._dispatcher.load_nodes()
        await asyncio.gather(*(self._handle(m, p, nodes, inp, counts) for m, p in parsed))
        return counts.result()

    async def _handle(self, msg: QueueMessage, parsed: InterruptionEvent | Unknown | Malformed,
                      nodes: dict[str, Any], inp: PollInput, counts: _Tally) -> None:
        extra = {"sqs_message_id": msg.message_id, "kind": _kind(parsed)}
        if isinstance(parsed, Malformed):
            log.warning("dropping malformed interruption message %s: %s", msg.message_id, parsed.reason, extra=extra)
        elif isinstance(parsed, Unknown):
            log.info("dropping interruption message %s that needs no action: %s", msg.message_id, parsed.reason,
                     extra=extra)
        else:
            try:
                actions = await self._dispatcher.dispatch(parsed, nodes)
            except Exception as exc:
                if msg.receive_count < inp.max_receives:
                    counts.failed += 1
                    metrics.INTERRUPTION_FAILURES.labels(outcome="retry").inc()
                    log.warning("interruption message %s failed (delivery %d of %d), left for redelivery: %s",
                                msg.message_id, msg.receive_count, inp.max_receives, exc, extra=extra)
                    return
                counts.dropped += 1
                metrics.INTERRUPTION_FAILURES.labels(outcome="dropped").inc()
                log.error("dropping interruption message %s after %d deliveries: %s", msg.message_id,
                          msg.receive_count, exc, extra=extra)
            else:
                for action in actions:
                    counts.by_action[action] += 1
                    metrics.INTERRUPTION_ACTIONS.labels(action=action).inc()
                if msg.sent_at is not None:
                    metrics.INTERRUPTION_MESSAGE_AGE.observe(max(0.0, time.time() - msg.sent_at))
                    km.INTERRUPTION_LATENCY.observe(max(0.0, time.time() - msg.sent_at))
        await asyncio.to_thread(self._queue.delete, msg.receipt_handle)
        km.INTERRUPTION_DELETED.inc()
        counts.deleted += 1


def _kind(parsed: InterruptionEvent | Unknown | Malformed) -> str:
    return parsed.kind.value if isinstance(parsed, InterruptionEvent) else parsed.outcome.capitalize()


class _Tally:
    def __init__(self) -> None:
        self.received = self.deleted = self.failed = self.dropped = 0
        self.by_kind: Counter[str] = Counter()
        self.by_action: Counter[str] = Counter()

    def result(self) -> PollCounts:
        return PollCounts(received=self.received, deleted=self.deleted, failed=self.failed, dropped=self.dropped,
                          by_kind=dict(self.by_kind), by_action=dict(self.by_action))


async def _heartbeat_forever(counts: _Tally) -> None:
    while True:
        activity.heartbeat(counts.result().model_dump())
        await asyncio.sleep(HEARTBEAT_EVERY)
