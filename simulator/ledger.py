"""The safety ledger: every pod removal with its cause, and whether it took a PDB below desiredHealthy.

Causes: `eviction` (Eviction API), `delete` (a DELETE of the pod or of its owner), `grace-deadline` (a
DELETE that cut the pod's own terminationGracePeriodSeconds short, as a node's drain deadline does),
`node-gone` (the pod's node left the cluster while the pod was still on it).
"""

from __future__ import annotations

import threading
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


class Ledger:
    """Append-only record of pod removals and eviction answers (thread-safe)."""

    def __init__(self, keep: int = 200_000) -> None:
        self._lock = threading.Lock()
        self.removals: list[Removal] = []
        self.evictions: Counter[str] = Counter()
        self.violations: Counter[str] = Counter()
        self.removals_by_cause: Counter[str] = Counter()
        self._keep = keep

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

    def summary(self) -> dict:
        with self._lock:
            return {
                "evictions": dict(self.evictions),
                "pdbViolations": {c: self.violations.get(c, 0) for c in CAUSES},
                "pdbViolationsTotal": sum(self.violations.values()),
                "podRemovals": {c: self.removals_by_cause.get(c, 0) for c in CAUSES},
            }
