"""Per-NodePool drift back-off (kubernetes-sigs/karpenter#3080, RFC kubernetes-sigs/karpenter#3128, PR
kubernetes-sigs/karpenter#3178): a pool whose drift replacements keep failing is held, so it neither burns launches
nor keeps taking the pass from other pools' drift. Pure.

After a drift command of the pool rolls back because its replacement failed (launch failed, never Ready, deleted
before Ready), its drift is held for 1 min, doubling per consecutive failure up to 10 min, less a deterministic
jitter of up to 10% seeded by pool name and failure count (so `nodeflow plan`, every worker replica and the
workflow that wrote it agree). A success (a drift replacement became Ready) clears it. A failure while the pool is
still held does not count again: commands started before the back-off, failing during it, are one failure.

The record is the NodePool's `nodeflow.dev/drift-backoff` annotation (JSON `{"failures": N, "until": RFC 3339}`),
like the nomination mark (planning/disruption/nomination.py): on the object, so every replica and a snapshot see it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from api import events
from api import labels as L
from api.timestamps import format_seconds, parse_time

BASE = timedelta(minutes=1)
CEILING = timedelta(minutes=10)
JITTER = 0.1  # up to this fraction of the delay is taken off, so pools that failed together do not retry together


@dataclass(frozen=True, slots=True)
class DriftBackoff:
    """`failures` consecutive failed drift replacements; the pool's drift is held until `until`."""

    failures: int
    until: datetime

    def value(self) -> str:
        """The annotation's text."""
        return json.dumps({"failures": self.failures, "until": format_seconds(self.until)}, separators=(",", ":"))

    def held(self, at: datetime) -> bool:
        return at < self.until

    def message(self, pool: str) -> str:
        return events.drift_backoff(pool, self.failures, format_seconds(self.until))


def parse_backoff(text: str | None) -> DriftBackoff | None:
    """The annotation's record; None when absent or malformed (a bad writer must not hold drift for ever)."""
    if not text:
        return None
    try:
        data = json.loads(text)
        failures = int(data["failures"])
    except (ValueError, TypeError, KeyError):
        return None
    until = parse_time(data.get("until"))
    return DriftBackoff(failures, until) if until is not None and failures > 0 else None


def backoff_of(annotations: Mapping[str, str]) -> DriftBackoff | None:
    return parse_backoff(annotations.get(L.DRIFT_BACKOFF_ANNOTATION))


def delay(pool: str, failures: int) -> timedelta:
    """1 min doubling per failure to 10 min, less up to 10% jitter from sha256(pool/failures)."""
    base = min(BASE * 2 ** max(failures - 1, 0), CEILING)
    fraction = int(hashlib.sha256(f"{pool}/{failures}".encode()).hexdigest()[:8], 16) / 2**32
    return timedelta(seconds=round(base.total_seconds() * (1 - JITTER * fraction)))


def after_failure(pool: str, current: DriftBackoff | None, at: datetime) -> DriftBackoff | None:
    """The record after a failed drift replacement at `at`; None when it changes nothing (the pool is still held)."""
    if current is not None and current.held(at):
        return None
    failures = (current.failures if current is not None else 0) + 1
    return DriftBackoff(failures, at + delay(pool, failures))


def backoff_patch(record: DriftBackoff | None) -> dict[str, Any]:
    """The merge patch that writes `record` on the NodePool, or removes the annotation (None: a success)."""
    return {"metadata": {"annotations": {L.DRIFT_BACKOFF_ANNOTATION: record.value() if record else None}}}


def drift_held(annotations: Mapping[str, str], at: datetime) -> DriftBackoff | None:
    """The pool's back-off when it holds its drift at `at`, else None."""
    record = backoff_of(annotations)
    return record if record is not None and record.held(at) else None


def backoff_rows(pools: Iterable[tuple[str, Mapping[str, str]]], at: datetime) -> list[dict[str, Any]]:
    """`driftBackoffs` of `nodeflow plan` (docs/contracts.md §3.1): each pool (name, annotations) whose drift is
    held at `at`, whichever method wins the pass."""
    rows = []
    for name, notes in sorted(pools, key=lambda p: p[0]):
        held = drift_held(notes, at)
        if held is not None:
            rows.append({"nodePool": name, "failures": held.failures, "until": format_seconds(held.until),
                         "message": held.message(name)})
    return rows
