"""The safety ledger: every pod removal with its cause, and whether it took a PDB below desiredHealthy.

Causes: `eviction` (Eviction API), `delete` (a DELETE of the pod or of its owner), `grace-deadline` (a
DELETE that cut the pod's own terminationGracePeriodSeconds short, as a node's drain deadline does),
`node-gone` (the pod's node left the cluster while the pod was still on it).

It also times how long each pod waits unbound: from its creation (or its scheduling gates' removal)
to its bind, in real seconds on the caller's clock. `pods_pending_past(bound)` names the pods that waited longer
than `bound`, bound since or still pending; a pod deleted or finished while pending is not counted, nor a
DaemonSet pod or a gated one (the scheduler, simulator/scheduler.py, decides what it reports).
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field

from simulator.store import now_rfc3339

CAUSES = ("eviction", "delete", "grace-deadline", "node-gone")


@dataclass
class Removal:
    pod: str  # namespace/name
    node: str | None
    cause: str
    healthy: bool
    violated: list[str] = field(default_factory=list)  # PDBs (namespace/name) left below desiredHealthy
    at: str = field(default_factory=now_rfc3339)


@dataclass(frozen=True)
class PendingWait:
    pod: str  # namespace/name
    seconds: float  # real seconds unbound
    bound: bool  # False: still pending when asked


class Ledger:
    """Append-only record of pod removals and eviction answers (thread-safe)."""

    def __init__(self, keep: int = 200_000) -> None:
        self._lock = threading.Lock()
        self.removals: list[Removal] = []
        self.evictions: Counter[str] = Counter()
        self.violations: Counter[str] = Counter()
        self.removals_by_cause: Counter[str] = Counter()
        self._keep = keep
        self.pending_bound_seconds: float | None = None  # the summary counts waits past this (None: not counted)
        self._pending: dict[str, tuple[str, float]] = {}  # pod uid -> (namespace/name, since when it waits)
        self._waits: list[tuple[float, str]] = []  # the `keep` longest finished waits (a min-heap)
        self.binds = 0

    def pod_pending(self, uid: str, pod: str, at: float) -> None:
        """`pod` waits for a node from `at` on (a no-op while its wait is already running)."""
        with self._lock:
            self._pending.setdefault(uid, (pod, at))

    def pod_bound(self, uid: str, at: float) -> None:
        with self._lock:
            entry = self._pending.pop(uid, None)
            if entry is None:
                return
            self.binds += 1
            wait = (at - entry[1], entry[0])
            if len(self._waits) < self._keep:
                heapq.heappush(self._waits, wait)
            else:
                heapq.heappushpop(self._waits, wait)

    def pod_dropped(self, uid: str) -> None:
        """The pod stopped waiting without a bind (deleted, finished, gated): its wait does not count."""
        with self._lock:
            self._pending.pop(uid, None)

    def pods_pending_past(self, bound: float, now: float | None = None) -> list[PendingWait]:
        """The pods that waited unbound longer than `bound` real seconds, longest first: bound after such a wait,
        or pending for longer than that at `now` (default: the monotonic clock the world uses)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            out = [PendingWait(pod, wait, True) for wait, pod in self._waits if wait > bound]
            out.extend(PendingWait(pod, now - since, False) for pod, since in self._pending.values()
                       if now - since > bound)
        return sorted(out, key=lambda w: -w.seconds)

    def longest_wait(self, now: float | None = None) -> float:
        """The longest unbound wait so far, finished or running (real seconds)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            finished = max((w for w, _ in self._waits), default=0.0)
            running = max((now - since for _, since in self._pending.values()), default=0.0)
        return max(finished, running)

    def record_removal(self, removal: Removal) -> None:
        with self._lock:
            self.removals_by_cause[removal.cause] += 1
            if removal.violated:
                self.violations[removal.cause] += 1
            if len(self.removals) < self._keep:
                self.removals.append(removal)

    def record_eviction(self, code: int) -> None:
        with self._lock:
            self.evictions[str(code)] += 1

    def entries(self) -> list[dict]:
        with self._lock:
            return [asdict(r) for r in self.removals]

    def summary(self, now: float | None = None) -> dict:
        bound = self.pending_bound_seconds
        past = len(self.pods_pending_past(bound, now)) if bound is not None else None
        longest = self.longest_wait(now)
        with self._lock:
            return {
                "evictions": dict(self.evictions),
                "pdbViolations": {c: self.violations.get(c, 0) for c in CAUSES},
                "pdbViolationsTotal": sum(self.violations.values()),
                "podRemovals": {c: self.removals_by_cause.get(c, 0) for c in CAUSES},
                "podPendingLongestSeconds": round(longest, 3),
                "podsPendingPastBound": past,  # None until a caller sets pending_bound_seconds
                "pendingBoundSeconds": bound,
            }
