"""kube-scheduler's scheduling queue for the emulator: which pending pods the next scheduling pass attempts.

A new pod is active at once. A pod that fails an attempt parks in the unschedulable queue; a cluster event moves
every parked pod back (to active when its backoff ran out, else to the backoff queue until it does), and the
periodic flush moves a pod parked for `unschedulable_flush`. With `retry_after` set, a failed pod comes back
exactly that long after its attempt and nothing else moves it. Gated pods wait outside every queue until their
spec changes. Times are simulated seconds on the caller's clock; backoff and retry deadlines sit on a heap (stale
entries are skipped through a per-pod token) and the unschedulable queue is kept in entry order, so a pass costs
the pods it moves and attempts, not every pending pod.
"""

from __future__ import annotations

import heapq
import itertools
from collections import OrderedDict
from enum import Enum

from simulator.scheduler_timing import SchedulerTiming

Key = tuple[str, str]


class Where(Enum):
    ACTIVE = "active"
    BACKOFF = "backoff"
    UNSCHEDULABLE = "unschedulable"
    RETRY = "retry"  # the retry_after timing's wait
    GATED = "gated"
    BINDING = "binding"  # planned onto a node, its bind in flight


class SchedulingQueue:
    """Queue state of every pending pod the scheduler knows (`Key` = namespace, name)."""

    def __init__(self, timing: SchedulerTiming) -> None:
        self.timing = timing
        # the active queue in arrival order: kube-scheduler's activeQ pops pods of one priority by the time they were
        # (last) added, so the pods a drain evicted first are attempted first (a set kept them in hash order)
        self.active: dict[Key, None] = {}
        self.where: dict[Key, tuple[Where, int]] = {}  # pod -> (queue, token of its heap entry)
        self.attempts: dict[Key, int] = {}
        self.last_attempt: dict[Key, float] = {}
        # the unschedulable queue, oldest entry first (times only grow, so the flush reads it from the front)
        self.parked_since: OrderedDict[Key, float] = OrderedDict()
        self._due: list[tuple[float, int, Key]] = []  # backoff and retry deadlines
        self._tokens = itertools.count(1)
        self._moved = False  # a cluster event since the last pass

    # ---- entries ---------------------------------------------------------------------------------------
    def add(self, key: Key) -> None:
        """A new pending pod (or one whose bind failed before it was ever attempted): active now."""
        if key not in self.where:
            self._set(key, Where.ACTIVE)

    def forget(self, key: Key) -> None:
        """The pod was bound, deleted or finished."""
        self.active.pop(key, None)
        self.where.pop(key, None)
        self.attempts.pop(key, None)
        self.last_attempt.pop(key, None)
        self.parked_since.pop(key, None)

    def binding(self, key: Key) -> None:
        self._set(key, Where.BINDING)

    def gated(self, key: Key) -> None:
        """A pod with scheduling gates (kube's PreEnqueue keeps it out of the queues; no attempt counted)."""
        self._set(key, Where.GATED)

    def failed(self, key: Key, now: float) -> None:
        """An attempt found no node (or its bind failed)."""
        self.attempts[key] = self.attempts.get(key, 0) + 1
        self.last_attempt[key] = now
        retry = self.timing.retry_after
        if retry is not None:
            self._push(key, Where.RETRY, now + retry)
            return
        self._set(key, Where.UNSCHEDULABLE)
        self.parked_since.pop(key, None)
        self.parked_since[key] = now

    def updated(self, key: Key, now: float) -> None:
        """The pod's own spec changed: a gated pod enters the queue; a parked one moves as on a cluster event."""
        state = self.where.get(key)
        if state is None:
            return
        if state[0] is Where.GATED:
            self._set(key, Where.ACTIVE)
        elif state[0] is Where.UNSCHEDULABLE and self._moves_on_events:
            self._move(key, now)

    def cluster_event(self) -> None:
        """A node added or changed, an assigned pod gone, a volume change: parked pods move at the next pass."""
        if self._moves_on_events:
            self._moved = True

    # ---- a pass ----------------------------------------------------------------------------------------
    def pop_active(self, now: float) -> list[Key]:
        """The pods to attempt now: the active ones, with every backoff, retry or flush that fell due."""
        if self._moved:
            self._moved = False
            for key in list(self.parked_since):
                self._move(key, now)
        if self.timing.retry_after is None:
            while self.parked_since:
                key, since = next(iter(self.parked_since.items()))
                if self.timing.flush_due(since) > now:
                    break
                self._move(key, now)
        while self._due and self._due[0][0] <= now:
            _, token, key = heapq.heappop(self._due)
            state = self.where.get(key)
            if state is not None and state[1] == token:  # its backoff or retry_after wait ended
                self._set(key, Where.ACTIVE)
        out = list(self.active)
        self.active.clear()
        for key in out:
            self.where.pop(key, None)
        return out

    def counts(self) -> dict[str, int]:
        out = {w.value: 0 for w in Where}
        for where, _ in self.where.values():
            out[where.value] += 1
        return out

    # ---- internals -------------------------------------------------------------------------------------
    @property
    def _moves_on_events(self) -> bool:
        return self.timing.retry_after is None and self.timing.requeue_on_events

    def _move(self, key: Key, now: float) -> None:
        """Out of the unschedulable queue: active when the pod's backoff ran out, else backoff until it does."""
        self.parked_since.pop(key, None)
        due = self.last_attempt.get(key, now) + self.timing.backoff(self.attempts.get(key, 0))
        if due <= now:
            self._set(key, Where.ACTIVE)
        else:
            self._push(key, Where.BACKOFF, due)

    def _set(self, key: Key, where: Where) -> int:
        token = next(self._tokens)
        self.active.pop(key, None)
        if where is Where.ACTIVE:
            self.active[key] = None  # (re-)added: at the back, as kube-scheduler refreshes its queue timestamp
        if where is not Where.UNSCHEDULABLE:
            self.parked_since.pop(key, None)
        self.where[key] = (where, token)
        return token

    def _push(self, key: Key, where: Where, due: float) -> None:
        token = self._set(key, where)
        heapq.heappush(self._due, (due, token, key))
