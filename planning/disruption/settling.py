"""Consolidation waits while pods are still moving: the pods of in-flight disruptions, and pending pods while
capacity is launching (docs/semantics.md §5.11).

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

Launching: a pending pod (not a DaemonSet's, mirror or CapacityBuffer placeholder) while a NodeClaim created less
than `LAUNCH_HOLD_SECONDS` ago is not yet initialized. Those pods are about to be bound wherever kube-scheduler
scores best once the capacity is Ready, a command's pre-spun replacement included, and a replacement evicts pods
while others still wait: in `bench.karpenter_suite`'s basic scale-out, commands taken while the last pods waited
for two launches kept pods moving minutes past the scale-out. A launch that never initializes stops holding once
the claim is that old, so this hold ends too.
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
LAUNCH_HOLD_SECONDS = 300.0  # a NodeClaim launching longer than this no longer holds consolidation
HELD_METHODS = CONSOLIDATION_METHODS  # the optimizer's name is Multi's


@dataclass(frozen=True, slots=True)
class Settling:
    """What is still moving: pods terminating on in-flight nodes and their unbound successors; pending pods while
    NodeClaims launch."""

    terminating: int = 0
    displaced: int = 0
    launching: int = 0  # NodeClaims not yet initialized, younger than LAUNCH_HOLD_SECONDS, while pods wait
    waiting: int = 0  # pending pods while NodeClaims launch

    @property
    def evicted(self) -> bool:
        return bool(self.terminating or self.displaced)

    @property
    def landing(self) -> bool:
        return bool(self.launching and self.waiting)

    @property
    def held(self) -> bool:
        return self.evicted or self.landing

    def message(self) -> str:
        why = []
        if self.evicted:
            why.append(f"the pods of in-flight disruptions to settle ({self.terminating} terminating, "
                       f"{self.displaced} displaced and unbound)")
        if self.landing:
            why.append(f"{self.waiting} pending pod(s) to land while {self.launching} NodeClaim(s) launch")
        return "consolidation waits for " + " and for ".join(why)


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


def launching(cluster: Cluster, at: datetime, window: float = LAUNCH_HOLD_SECONDS) -> int:
    """NodeClaims not deleting, not yet initialized, created less than `window` seconds before `at`."""
    return sum(1 for c in cluster.claims
               if not c.deleting and c.created is not None and (at - c.created).total_seconds() < window
               and not c.condition_true("Initialized"))


def waiting(cluster: Cluster) -> int:
    """Pending pods a launch can be for: not a DaemonSet's, not mirror pods, not CapacityBuffer placeholders."""
    return sum(1 for p in cluster.pending if not (p.is_daemonset or p.is_mirror or p.virtual))


def settling(cluster: Cluster, busy: set[str] | frozenset[str], at: datetime,
             window: float = SETTLE_SECONDS) -> Settling:
    """What is still moving at `at` (Settling.held: consolidation waits this pass)."""
    moving = [p for node in cluster.nodes if in_flight(node, busy) for p in _moving(node.pods, at, window)]
    owners = {p.owner_uid for p in moving if p.owner_uid}
    displaced = sum(1 for p in cluster.pending if p.owner_uid in owners) if owners else 0
    pods = waiting(cluster)
    claims = launching(cluster, at) if pods else 0
    return Settling(terminating=len(moving), displaced=displaced, launching=claims, waiting=pods if claims else 0)


def without_consolidation(methods: list[Method], hold: Settling) -> list[Method]:
    """The pass's methods, without multi- and single-node consolidation while `hold` holds."""
    if not hold.held:
        return methods
    return [m for m in methods if m.name not in HELD_METHODS]
