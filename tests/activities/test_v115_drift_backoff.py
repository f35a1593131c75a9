"""The drift back-off's record on the NodePool (activities/candidates.py drift_outcome, kubernetes-sigs/karpenter#3080):
a failed drift replacement advances it and counts `karpenter_voluntary_disruption_drift_backoffs_total`, a retry
or a second failure during the hold changes nothing, a Ready replacement clears it. A fake gateway, no cluster."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from activities.candidates import CandidateActivities
from api import labels as L
from contracts.disruption import DriftOutcomeInput
from planning.policies.drift_backoff import backoff_of, delay
from telemetry import karpenter_metrics as km

AT = datetime(2026, 11, 29, 4, 0, tzinfo=UTC)


class PoolStore:
    """get_node_pool / patch_node_pool of the Kubernetes gateway over one NodePool (merge patch of annotations)."""

    def __init__(self) -> None:
        self.pool: dict[str, Any] = {"metadata": {"name": "a", "annotations": {}}}
        self.patches = 0

    def get_node_pool(self, name: str) -> dict[str, Any] | None:
        return self.pool if name == "a" else None

    def patch_node_pool(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        self.patches += 1
        notes = self.pool["metadata"]["annotations"]
        for key, value in body["metadata"]["annotations"].items():
            if value is None:
                notes.pop(key, None)
            else:
                notes[key] = value
        return self.pool


async def _no_start(_inp: Any, _tq: str) -> str:
    raise AssertionError("not used")


def _outcome(acts: CandidateActivities, failed: bool, at: datetime, pool: str = "a") -> str:
    return asyncio.run(acts.drift_outcome(DriftOutcomeInput(node_pool=pool, failed=failed, at=at)))


def _count() -> float:
    return km.DRIFT_BACKOFFS.labels(nodepool="a")._value.get()


def test_v115_a_failed_drift_replacement_backs_the_pool_off_and_a_ready_one_clears_it() -> None:
    store = PoolStore()
    acts = CandidateActivities(store, _no_start)  # type: ignore[arg-type]
    before = _count()
    assert "backs off until" in _outcome(acts, True, AT)
    record = backoff_of(store.pool["metadata"]["annotations"])
    assert record is not None and (record.failures, record.until) == (1, AT + delay("a", 1))
    _outcome(acts, True, AT + timedelta(seconds=5))  # a retry, or a second command failing during the hold
    assert backoff_of(store.pool["metadata"]["annotations"]) == record and store.patches == 1
    _outcome(acts, True, record.until)
    assert backoff_of(store.pool["metadata"]["annotations"]).failures == 2  # type: ignore[union-attr]
    assert _count() == before + 2
    assert _outcome(acts, False, record.until + timedelta(minutes=1)) == ""
    assert L.DRIFT_BACKOFF_ANNOTATION not in store.pool["metadata"]["annotations"]
    patches = store.patches
    _outcome(acts, False, AT)  # nothing to clear: no write
    assert store.patches == patches and _outcome(acts, True, AT, pool="gone") == ""
