"""Which pods a drain evicts, in which order, and when the deadline deletes them (Karpenter terminator.go, v1.9.1).

Pure functions over pod dicts as the API server returns them, so the rules are unit-testable without I/O.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from api import labels
from api.timestamps import parse_timestamp

STUCK_TERMINATING_AFTER = timedelta(minutes=1)
DEFAULT_GRACE_SECONDS = 30  # what the API server defaults spec.terminationGracePeriodSeconds to

Pod = dict[str, Any]


class Tier(StrEnum):
    """Drain order (Karpenter terminator.go): later tiers wait until earlier ones have left the node."""

    PLAIN = "plain"
    DAEMONSET = "daemonset"
    CRITICAL = "critical"
    CRITICAL_DAEMONSET = "critical-daemonset"


TIER_ORDER = (Tier.PLAIN, Tier.DAEMONSET, Tier.CRITICAL, Tier.CRITICAL_DAEMONSET)


def parse_time(value: str | None) -> datetime | None:
    """An optional RFC 3339 field (deletionTimestamp, the termination annotation); a malformed one raises."""
    return parse_timestamp(value) if value else None


def is_terminal(pod: Pod) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def is_mirror(pod: Pod) -> bool:
    owners = (pod.get("metadata") or {}).get("ownerReferences") or []
    if any(o.get("kind") == "Node" and o.get("apiVersion") == "v1" for o in owners):
        return True
    return "kubernetes.io/config.mirror" in ((pod.get("metadata") or {}).get("annotations") or {})


def tolerates_disrupted_taint(pod: Pod) -> bool:
    for t in (pod.get("spec") or {}).get("tolerations") or []:
        effect = t.get("effect")
        if effect not in (None, "", labels.DISRUPTED_TAINT_EFFECT):
            continue
        op = t.get("operator") or "Equal"
        key = t.get("key")
        if op == "Exists" and key in (None, "", labels.DISRUPTED_TAINT_KEY):
            return True
        if op == "Equal" and key == labels.DISRUPTED_TAINT_KEY and not t.get("value"):
            return True
    return False


def deletion_time(pod: Pod) -> datetime | None:
    return parse_time((pod.get("metadata") or {}).get("deletionTimestamp"))


def is_stuck_terminating(pod: Pod, now: datetime) -> bool:
    dt = deletion_time(pod)
    return dt is not None and now - dt > STUCK_TERMINATING_AFTER


def is_waiting_eviction(pod: Pod, now: datetime) -> bool:
    """Keeps the node from being drained: not terminal, not mirror, not tolerating the taint, not stuck."""
    return not (is_terminal(pod) or is_mirror(pod) or tolerates_disrupted_taint(pod)
                or is_stuck_terminating(pod, now))


def is_daemonset_pod(pod: Pod) -> bool:
    owners = (pod.get("metadata") or {}).get("ownerReferences") or []
    return any(o.get("kind") == "DaemonSet" for o in owners)


def is_critical(pod: Pod) -> bool:
    return (pod.get("spec") or {}).get("priorityClassName") in labels.CRITICAL_PRIORITY_CLASSES


def tier_of(pod: Pod) -> Tier:
    critical, ds = is_critical(pod), is_daemonset_pod(pod)
    if critical:
        return Tier.CRITICAL_DAEMONSET if ds else Tier.CRITICAL
    return Tier.DAEMONSET if ds else Tier.PLAIN


def first_tier(pods: list[Pod]) -> list[Pod]:
    """The pods of the first non-empty tier; later tiers wait until these have left."""
    for tier in TIER_ORDER:
        group = [p for p in pods if tier_of(p) == tier]
        if group:
            return group
    return []


def grace_seconds(pod: Pod) -> int:
    value = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    return DEFAULT_GRACE_SECONDS if value is None else int(value)


def has_do_not_disrupt(pod: Pod) -> bool:
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    return ann.get(labels.DO_NOT_DISRUPT_ANNOTATION) == "true"


def needs_deadline_delete(pod: Pod, deadline: datetime | None, at: datetime) -> bool:
    """docs/semantics.md §9.4: delete so the pod's full grace ends at the deadline (at or after deadline - grace)."""
    if deadline is None:
        return False
    dt = deletion_time(pod)
    if dt is not None:
        return dt > deadline
    return at >= deadline - timedelta(seconds=grace_seconds(pod))


def deadline_grace(deadline: datetime, at: datetime) -> int:
    """Seconds of grace left until the deadline, truncated, at least 1 (0 would force-delete in etcd)."""
    return max(int((deadline - at).total_seconds()), 1)


