"""Consolidation waits while the pods of in-flight disruptions are still moving (docs/semantics.md §5.11).

A consolidation command is planned on where pods are now and validated 15 s later (§5.8). While pods evicted by
commands already in flight are terminating, their successors are being created and kube-scheduler is binding them
to whichever nodes score best, so the room a command plans on moves before its validation: in
`bench.karpenter_suite`'s basic scenario every consolidation command that failed validation (34 of 34) was
planned while pods were terminating, and every one planned with none terminating passed (28 of 28). Karpenter
validates one command at a time and waits for its cluster state to be synced; nodeflow starts commands without
waiting for one another, so a pass skips multi- and single-node consolidation while the cluster settles.

Settling: a pod of an in-flight node (in the pass's busy set, tainted `karpenter.sh/disrupted` or marked for
deletion) whose deletion started less than `SETTLE_SECONDS` ago, or an unbound pod of the same owner as such a pod
(its successor, not yet placed). A pod still terminating longer than that (a long grace period, a finalizer, an
unreachable kubelet) no longer holds consolidation, so the hold always ends.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from api.timestamps import parse_time
from planning.cluster import Cluster, PodInfo
from planning.disruption.candidates import in_flight
from planning.disruption.method import Method
from planning.disruption.method_names import CONSOLIDATION_METHODS

SETTLE_SECONDS = 60.0
HELD_METHODS = CONSOLIDATION_METHODS  # the optimizer's name is Multi's


@dataclass(frozen=True, slots=True)
class Settling:
    """What is still moving: pods terminating on in-flight nodes and their unbound successors."""

    terminating: int = 0
    displaced: int = 0

    @property
    def held(self) -> bool:
        return bool(self.terminating or self.displaced)

    def message(self) -> str:
        return (f"consolidation waits for the pods of in-flight disruptions to settle ({self.terminating} "
                f"terminating, {self.displaced} displaced and unbound)")


def deletion_started(pod: PodInfo) -> datetime | None:
    """When the pod's deletion was asked for: deletionTimestamp less its grace period (None: not deleting)."""
    meta = pod.raw.get("metadata") or {}
    deadline = parse_time(meta.get("deletionTimestamp"))
    if deadline is None:
        return None
    grace = meta.get("deletionGracePeriodSeconds")
    return deadline - timedelta(seconds=grace if isinstance(grace, int | float) else 0)


def _moving(pods: Iterable[PodInfo], at: datetime, window: float) -> list[PodInfo]:
    """The pods (not DaemonSet's, not terminal) whose deletion started within `window` seconds of `at`."""
    out = []
    for pod in pods:
        if not pod.terminating or pod.terminal or pod.owner_kind == "DaemonSet":
            continue
        started = deletion_started(pod)
        if started is not None and (at - started).total_seconds() < window:
            out.append(pod)
    return out


def settling(cluster: Cluster, busy: set[str] | frozenset[str], at: datetime,
             window: float = SETTLE_SECONDS) -> Settling:
    """The pods of in-flight nodes still moving at `at` (Settling.held: consolidation waits this pass)."""
    moving = [p for node in cluster.nodes if in_flight(node, busy) for p in _moving(node.pods, at, window)]
    if not moving:
        return Settling()
    owners = {p.owner_uid for p in moving if p.owner_uid}
    displaced = sum(1 for p in cluster.pending if p.owner_uid in owners)
    return Settling(terminating=len(moving), displaced=displaced)


def without_consolidation(methods: list[Method], hold: Settling) -> list[Method]:
    """The pass's methods, without multi- and single-node consolidation while `hold` holds."""
    if not hold.held:
        return methods
    return [m for m in methods if m.name not in HELD_METHODS]
