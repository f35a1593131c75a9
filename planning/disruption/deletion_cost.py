"""Pod deletion cost (Karpenter v1.15's PodDeletionCostManagement gate, kubernetes-sigs/karpenter#2894): rank the
nodes by how soon a pass would disrupt them and give each ReplicaSet pod a `controller.kubernetes.io/pod-deletion-cost`
from its node's rank, so a scale-down (the ReplicaSet controller deletes the lowest cost first) empties the nodes
nodeflow would take next. docs/semantics.md §3.6.

The order is the pass's own (§2), method by method with each method's own sort: nodes already being disrupted,
expired nodes (Expiration: earliest expiry first), drifted candidates (Drift: no reschedulable pod first, oldest
drift first), then consolidation candidates (`sort_for_consolidation`), those past consolidateAfter before the rest.
A node no method could take (do-not-disrupt, a PDB, a paused pool, not nodeflow's) is not ranked: its pods keep no
cost of nodeflow's, i.e. kube's default 0, which every ranked (negative) cost goes before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import IntEnum

from api import labels as L
from api.nodepool import POLICY_WHEN_EMPTY
from planning.cluster import Cluster, NodeInfo, PodInfo
from planning.disruption.candidates import (
    EVENTUAL,
    GRACEFUL,
    Candidate,
    NotCandidate,
    build_candidates,
    consolidatable,
    sort_for_consolidation,
)
from planning.disruption.drift import drift_reason, drifted_since
from planning.disruption.expiration import expiry_of
from planning.policies.view import PolicyView

OWNER_KIND = "ReplicaSet"  # only a ReplicaSet's scale-down reads the annotation
# Rank i's cost is i - RANK_BASE (or i - n past that many nodes): every ranked cost is negative, and a node joining the
# end of the order (a new node, still under consolidateAfter) changes no other pod's cost.
RANK_BASE = 100_000


class Tier(IntEnum):
    """Why a node is ranked where it is (lower goes first)."""

    DISRUPTING = 0  # tainted karpenter.sh/disrupted or marked for deletion
    EXPIRED = 1
    DRIFTED = 2
    CONSOLIDATABLE = 3  # a consolidation candidate past its pool's consolidateAfter
    CANDIDATE = 4  # a consolidation candidate still under consolidateAfter


@dataclass(frozen=True, slots=True)
class RankedNode:
    name: str
    tier: Tier


@dataclass(frozen=True, slots=True)
class PodPatch:
    """The annotations to merge-patch onto one pod (None removes one)."""

    namespace: str
    name: str
    annotations: dict[str, str | None]

    @property
    def removes(self) -> bool:
        return self.annotations.get(L.POD_DELETION_COST_ANNOTATION) is None


def disruption_order(cluster: Cluster, at: datetime, policies: PolicyView | None = None) -> list[RankedNode]:
    """The nodes a pass could disrupt, the one it would disrupt first first (module docstring)."""
    policies = policies if policies is not None else PolicyView()
    managed = [n for n in cluster.nodes if n.claim is not None]
    going = {n.name for n in managed if n.marked_for_deletion or n.tainted_disrupted}
    expiring = sorted((when, n.name) for n in managed if n.name not in going
                      and (when := expiry_of(n, cluster, policies)) is not None and when <= at)
    order = [RankedNode(name, Tier.DISRUPTING) for name in sorted(going)]
    order += [RankedNode(name, Tier.EXPIRED) for _, name in expiring]
    busy = frozenset(r.name for r in order)  # the pass's exclusions: both classes are built with the same
    checks: dict[str, NotCandidate | None] = {}
    pod_blocks: dict[str, str | None] = {}
    drifted = _drifted(cluster, at, build_candidates(cluster, at, set(busy), EVENTUAL, pod_blocks, checks).candidates)
    order += [RankedNode(c.name, Tier.DRIFTED) for c in drifted]
    taken = {c.name for c in drifted}
    graceful = [c for c in build_candidates(cluster, at, set(busy), GRACEFUL, pod_blocks, checks).candidates
                if c.name not in taken and _may_consolidate(c)]
    ordered = sort_for_consolidation(graceful)
    order += [RankedNode(c.name, Tier.CONSOLIDATABLE) for c in ordered if consolidatable(c, at)]
    order += [RankedNode(c.name, Tier.CANDIDATE) for c in ordered if not consolidatable(c, at)]
    return order


def _drifted(cluster: Cluster, at: datetime, cands: list[Candidate]) -> list[Candidate]:
    """Drift's candidates in Drift's order (planning/disruption/drift.py Drift.compute_commands)."""
    found = [c for c in cands if not c.pool.static and drift_reason(
        c.node, c.pool, cluster.node_classes.get(c.pool.node_class) if c.pool.node_class else None,
        cluster.catalog_for(c.pool.name), at) is not None]
    floor = datetime.min.replace(tzinfo=at.tzinfo)
    return sorted(found, key=lambda c: (bool(c.reschedulable), drifted_since(c.node) or floor, c.name))


def _may_consolidate(c: Candidate) -> bool:
    """The pool-level half of Consolidation.should_disrupt (§5.3), without its Events."""
    pool = c.pool
    if pool.static or pool.consolidate_after is None:
        return False
    return c.empty or pool.consolidation_policy != POLICY_WHEN_EMPTY


def deletion_costs(cluster: Cluster, order: list[RankedNode]) -> dict[str, int]:
    """pod key -> pod-deletion-cost for the active ReplicaSet pods of the ranked nodes: rank i gets i - RANK_BASE, so
    every ranked cost is below kube's default 0 and the first node's pods are deleted first (Karpenter's RFC counts
    up from -n, which rewrites every pod whenever a node joins)."""
    nodes: Mapping[str, NodeInfo] = {n.name: n for n in cluster.nodes}
    base = max(RANK_BASE, len(order))
    out: dict[str, int] = {}
    for i, ranked in enumerate(order):
        for pod in nodes[ranked.name].pods:
            if pod.active and pod.owner_kind == OWNER_KIND:
                out[pod.key] = i - base
    return out


def is_ours(pod: PodInfo) -> bool:
    """The pod's pod-deletion-cost is the one nodeflow wrote (its marker holds the same value)."""
    mine = pod.annotations.get(L.MANAGED_DELETION_COST_ANNOTATION)
    return mine is not None and pod.annotations.get(L.POD_DELETION_COST_ANNOTATION) == mine


def annotation_patches(pods: Iterable[PodInfo], costs: Mapping[str, int]) -> tuple[list[PodPatch], int]:
    """The patches that bring the pods to `costs` (set or changed first, lowest cost first; then removals of
    nodeflow's costs no longer wanted), and how many pods were left alone because someone else set their cost.
    A pod already at its cost gets no patch: a tick with nothing changed writes nothing."""
    sets: list[tuple[int, PodPatch]] = []
    removals: list[PodPatch] = []
    foreign = 0
    for pod in pods:
        if pod.terminating:
            continue
        current = pod.annotations.get(L.POD_DELETION_COST_ANNOTATION)
        if current is not None and not is_ours(pod):
            foreign += pod.key in costs
            continue
        want = costs.get(pod.key)
        if want is not None and current != str(want):
            value = str(want)
            sets.append((want, PodPatch(pod.namespace, pod.name, {L.POD_DELETION_COST_ANNOTATION: value,
                                                                  L.MANAGED_DELETION_COST_ANNOTATION: value})))
        elif want is None and L.MANAGED_DELETION_COST_ANNOTATION in pod.annotations:
            removals.append(PodPatch(pod.namespace, pod.name, {L.POD_DELETION_COST_ANNOTATION: None,
                                                               L.MANAGED_DELETION_COST_ANNOTATION: None}))
    sets.sort(key=lambda s: (s[0], s[1].namespace, s[1].name))
    return [p for _, p in sets] + removals, foreign
