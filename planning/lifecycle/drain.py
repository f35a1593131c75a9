"""Which pods a drain evicts, in which order, and when the deadline deletes them (Karpenter terminator.go and
eviction.go, v1.15.0: the deadline's deletions happen in the drain's rounds, kubernetes-sigs/karpenter#3063).

Pure functions over pod dicts as the API server returns them, so the rules are unit-testable without I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from api import labels
from api.policy_controls import WAIT_FOR_COMPLETION_ANNOTATION
from api.timestamps import parse_timestamp
from planning.disruption.candidates import do_not_disrupt_value_active
from planning.pod_requests import pod_requests

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


def is_statefulset_pod(pod: Pod) -> bool:
    owners = (pod.get("metadata") or {}).get("ownerReferences") or []
    return any(o.get("kind") == "StatefulSet" for o in owners)


def is_reschedulable(pod: Pod) -> bool:
    """Karpenter's pod.IsReschedulable, what karpenter_pods_disruption_initiated_total counts (v1.15,
    kubernetes-sigs/karpenter#3015): a pod that needs a place elsewhere when its node goes. Active (not terminal, not
    terminating) or a terminating StatefulSet pod (its successor waits for it); never a DaemonSet or mirror pod."""
    active = not is_terminal(pod) and deletion_time(pod) is None
    terminating_set = is_statefulset_pod(pod) and deletion_time(pod) is not None
    return (active or terminating_set) and not is_daemonset_pod(pod) and not is_mirror(pod)


def is_critical(pod: Pod) -> bool:
    return (pod.get("spec") or {}).get("priorityClassName") in labels.CRITICAL_PRIORITY_CLASSES


def tier_of(pod: Pod) -> Tier:
    critical, ds = is_critical(pod), is_daemonset_pod(pod)
    if critical:
        return Tier.CRITICAL_DAEMONSET if ds else Tier.CRITICAL
    return Tier.DAEMONSET if ds else Tier.PLAIN


def first_tier(pods: list[Pod]) -> list[Pod]:
    """The pods of the first non-empty tier, largest first (`eviction_order`); later tiers wait until these have
    left."""
    for tier in TIER_ORDER:
        group = [p for p in pods if tier_of(p) == tier]
        if group:
            return eviction_order(group)
    return []


def eviction_order(pods: list[Pod]) -> list[Pod]:
    """Largest requests first (cpu, then memory), as the planner placed them (planning/scheduling/simulation.py
    `simulate`), so their replacements reach kube-scheduler's queue in that order (docs/semantics.md §9.2).

    Evicted in any order, the small pods took the room the plan had kept for a large one (kube-scheduler binds
    each pod to the least allocated node that fits): in Karpenter's wide scenario a consolidation's 64 GiB pod found
    no node and got a new one of its own. Karpenter's eviction queue keeps no order within a tier."""
    return sorted(pods, key=_size_first)


def _size_first(pod: Pod) -> tuple[float, int, str]:
    meta = pod.get("metadata") or {}
    req = pod_requests(pod.get("spec") or {}, pod.get("status"))
    return -req.cpu, -req.mem, f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def grace_seconds(pod: Pod) -> int:
    value = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    return DEFAULT_GRACE_SECONDS if value is None else int(value)


def has_do_not_disrupt(pod: Pod, at: datetime | None = None) -> bool:
    """An active `karpenter.sh/do-not-disrupt`: the drain leaves the pod (docs/semantics.md §7, §9.2). With `at`, also
    Karpenter v1.12's duration form (kubernetes-sigs/karpenter#2874: a positive Go duration from the pod's
    status.startTime, none: active), as its terminator's IsEvictable; without, `"true"` only."""
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(labels.DO_NOT_DISRUPT_ANNOTATION)
    if at is None:
        return value == "true"
    try:
        start = parse_time((pod.get("status") or {}).get("startTime"))
    except ValueError:
        start = None
    return do_not_disrupt_value_active(value, start, at)


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


def earlier_deadline(current: datetime | None, new: datetime | None) -> datetime | None:
    """Karpenter v1.15's eviction queue keeps the earlier deadline of two (None: none, i.e. +infinity): a later one
    never loosens what a drain already promised, an interruption's earlier one tightens it."""
    if current is None or new is None:
        return new if current is None else current
    return min(current, new)


@dataclass(frozen=True, slots=True)
class DrainRound:
    """One round of a drain (Karpenter v1.15 terminator.Drain and its eviction queue)."""

    delete: list[Pod] = field(default_factory=list)  # past `deadline - grace`, whatever their tier: deleted now
    evict: list[Pod] = field(default_factory=list)  # the first non-empty tier of the rest: the Eviction API (PDBs)


def plan_round(waiting: list[Pod], deadline: datetime | None, at: datetime) -> DrainRound:
    """Split the pods a drain waits for (kubernetes-sigs/karpenter#3063): a pod whose own deletion would not end
    before the deadline is deleted now from any tier, bypassing PDBs and do-not-disrupt (the grace-period deadline
    path, §9.4); the others go through eviction tier by tier, so a PDB is never bypassed otherwise."""
    due = [p for p in waiting if needs_deadline_delete(p, deadline, at)]
    due_ids = {id(p) for p in due}
    return DrainRound(delete=due, evict=first_tier([p for p in waiting if id(p) not in due_ids]))


def next_deadline_delete(waiting: list[Pod], deadline: datetime | None, at: datetime) -> datetime | None:
    """The next instant after `at` a waiting pod falls due (`deadline - grace`), so a drain wakes for it instead of
    at its next poll; None: none falls due later (a terminating pod is due at once or never)."""
    if deadline is None:
        return None
    times = [deadline - timedelta(seconds=grace_seconds(p)) for p in waiting if deletion_time(p) is None]
    later = [t for t in times if t > at]
    return min(later) if later else None


# ---- drain.jobs: Wait (DisruptionPolicy, docs/semantics.md §15.8) -------------------------------------------------

JOB_OWNER_KINDS = ("Job",)  # a CronJob's pods are owned by the Job it made, so they count too
WAIT_FOR_COMPLETION_VALUE = "true"


def runs_to_completion(pod: Pod) -> bool:
    """A pod a `jobs: Wait` drain leaves to finish: owned by a Job (kubernetes-sigs/karpenter#701 and #1209), or
    annotated nodeflow.dev/wait-for-completion: "true" (a bare pod or another controller's run-to-completion pod)."""
    meta = pod.get("metadata") or {}
    if (meta.get("annotations") or {}).get(WAIT_FOR_COMPLETION_ANNOTATION) == WAIT_FOR_COMPLETION_VALUE:
        return True
    return any(o.get("kind") in JOB_OWNER_KINDS and str(o.get("apiVersion", "")).startswith("batch/")
               for o in meta.get("ownerReferences") or [])


def completion_hold_until(started: datetime, max_wait: timedelta | None, deadline: datetime | None
                          ) -> datetime | None:
    """Until when run-to-completion pods are left alone: `started + maxWait` or the grace-period deadline, whichever
    is first; None when neither bounds it (they wait like do-not-disrupt pods, until they finish or are forced)."""
    ends = [t for t in (started + max_wait if max_wait is not None else None, deadline) if t is not None]
    return min(ends) if ends else None


def completion_held(pod: Pod, waiting: bool) -> bool:
    """The drain skips this pod's eviction now: a run-to-completion pod while the hold lasts (`waiting`)."""
    return waiting and runs_to_completion(pod)


def pod_start(pod: Pod) -> datetime | None:
    """status.startTime (when the kubelet accepted the pod), else its creation time; None when neither parses."""
    raw = (pod.get("status") or {}).get("startTime") or (pod.get("metadata") or {}).get("creationTimestamp")
    try:
        return parse_time(raw)
    except ValueError:
        return None
