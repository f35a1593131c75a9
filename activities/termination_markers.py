"""What a terminating NodeClaim shows, as Karpenter's termination controller writes it (docs/semantics.md §9.1, §9.4).

The annotation `karpenter.sh/nodeclaim-termination-timestamp` (deletion time + `spec.terminationGracePeriod`,
RFC 3339, set once and never overwritten) and the status condition `Drained` (Unknown/Draining while the
drain runs, True once it is done). Both are markers for users and tools; the workflow keeps its own deadline.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubernetes.client.rest import ApiException
from temporalio import activity

from activities.cached_copies import CacheReads, deleting_copy
from activities.events import recorder_for
from api import events, labels
from api.duration import parse_optional_duration
from api.events import EventReason
from api.timestamps import format_seconds, parse_time
from contracts.disruption import EventSpec
from contracts.termination import DrainedStatus, TerminationMarkersInput
from gateways.kube import Conflict, KubeClient

log = logging.getLogger(__name__)

Obj = dict[str, Any]
DRAINED = "Drained"
DRAINING_REASON = "Draining"
ATTEMPTS = 5
# Answers retrying cannot change (no permission, invalid patch): log them, never block the termination.
PERMANENT = (403, 422)


def termination_timestamp(claim: Obj, since: datetime | None) -> str | None:
    """Deletion time (else `since`) + terminationGracePeriod as RFC 3339; None without a grace period."""
    grace = parse_optional_duration((claim.get("spec") or {}).get("terminationGracePeriod"))
    start = parse_time((claim.get("metadata") or {}).get("deletionTimestamp")) or since
    if grace is None or start is None:
        return None
    return format_seconds(start + grace)


def with_drained(conditions: list[Obj], status: DrainedStatus, now: datetime) -> list[Obj] | None:
    """`conditions` with `Drained` set to `status`; None when it already is (nothing to write)."""
    current = next((c for c in conditions if c.get("type") == DRAINED), None)
    if current is not None and current.get("status") == status.value:
        return None
    reason = DRAINING_REASON if status is DrainedStatus.DRAINING else DRAINED
    cond = {"type": DRAINED, "status": status.value, "reason": reason, "message": "",
            "lastTransitionTime": format_seconds(now)}
    return [c for c in conditions if c.get("type") != DRAINED] + [cond]


class TerminationMarkerActivities:
    """Writes the termination markers on NodeClaims through the Kubernetes gateway."""

    def __init__(self, kube: KubeClient, cached: CacheReads | None = None) -> None:
        self.kube = kube
        self.cached = cached  # the claim's first attempt, when the watch cache shows it deleting (cached_copies.py)

    @activity.defn(name="termination.mark_nodeclaim")
    async def mark_nodeclaim(self, inp: TerminationMarkersInput) -> bool:
        """Annotation (first call only writes it) and `Drained` condition; False when the claim is gone."""
        current = deleting_copy(self.cached, "NodeClaim", inp.node_claim_name)
        return await asyncio.to_thread(self._best_effort, self._mark, inp, current)

    def _best_effort(self, fn: Callable[[TerminationMarkersInput, Obj | None], bool], inp: TerminationMarkersInput,
                     current: Obj | None = None) -> bool:
        try:
            return fn(inp, current)
        except ApiException as exc:
            if exc.status not in PERMANENT:
                raise
            log.warning("markers of NodeClaim %s not written: %s %s", inp.node_claim_name, exc.status, exc.reason)
            return False

    def mark_now(self, inp: TerminationMarkersInput, current: Obj | None = None) -> bool:
        """What the activity does, called from another activity's thread (prepare, with the claim as the API server
        last answered it: no fresh read); True: the claim is marked."""
        return self._best_effort(self._mark, inp, current)

    def _mark(self, inp: TerminationMarkersInput, current: Obj | None = None) -> bool:
        """Each write starts from the claim as last answered (`current`, then the annotation PATCH's answer); a
        stale copy costs a 409 and a fresh read (resourceVersion), and the timestamp is computed again from it."""
        claim = current or self.kube.get_node_claim(inp.node_claim_name)
        if claim is None:
            return False
        held = ((claim.get("metadata") or {}).get("annotations") or {}).get(labels.TERMINATION_TIMESTAMP_ANNOTATION)
        if termination_timestamp(claim, inp.since) is not None:
            held, claim = self.kube.annotate_claim(inp.node_claim_name, labels.TERMINATION_TIMESTAMP_ANNOTATION,
                                                   lambda obj: termination_timestamp(obj, inp.since), current=claim)
            if claim is None:
                return False
        if held:
            self._grace_period_expiring(claim, held)
        return self._set_drained(inp.node_claim_name, inp.drained, claim)

    def _grace_period_expiring(self, claim: dict[str, Any], at: str) -> None:
        """Karpenter's TerminationGracePeriodExpiring on the NodeClaim (lifecycle) and its Node (termination), while
        the claim carries the termination-timestamp annotation; the Recorder keeps one per object per 2 min."""
        node = (claim.get("status") or {}).get("nodeName")
        message = events.grace_period_expiring(at)
        specs = [EventSpec(kind="NodeClaim", name=claim["metadata"]["name"], uid=claim["metadata"].get("uid"),
                           reason=EventReason.TERMINATION_GRACE_PERIOD_EXPIRING, message=message, type="Warning")]
        if node:
            specs.append(EventSpec(kind="Node", name=node, reason=EventReason.TERMINATION_GRACE_PERIOD_EXPIRING,
                                   message=message, type="Warning"))
        recorder_for(self.kube).publish(*specs)

    def _set_drained(self, name: str, status: DrainedStatus | None, current: Obj | None = None) -> bool:
        """Read-modify-patch of status.conditions (a merge patch replaces the whole list) under resourceVersion;
        the first attempt patches `current` when the caller just read it (a stale one is a 409 and a fresh read)."""
        if status is None:
            return True
        for _ in range(ATTEMPTS):
            claim, current = current or self.kube.get_node_claim(name), None
            if claim is None:
                return False
            conditions = with_drained((claim.get("status") or {}).get("conditions") or [], status, datetime.now(UTC))
            if conditions is None:
                return True
            body = {"metadata": {"resourceVersion": claim["metadata"].get("resourceVersion")},
                    "status": {"conditions": conditions}}
            try:
                return self.kube.patch_node_claim_status(name, body) is not None
            except Conflict:
                continue
        raise Conflict(f"could not update the conditions of NodeClaim {name}: too many conflicts")

    def all(self) -> list[Callable[..., Any]]:
        return [self.mark_nodeclaim]
