"""Which nodes may be disrupted at all (docs/semantics.md §3), in Karpenter's order and with its messages.

A node that fails a check gets the message Karpenter would put in its `DisruptionBlocked` event; the
planner lists the blocking ones (do-not-disrupt, PDBs, pool paused, an operator's cancel hold) as `blocked`.
Also: eviction and disruption costs (the v1.14 sort and emptiness), and consolidateAfter from the NodeClaim.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import NamedTuple

from api import events
from api import labels as L
from api.duration import DurationError, parse_duration
from api.timestamps import format_seconds, parse_time
from planning.cluster import Cluster, NodeInfo, PodInfo, PoolInfo
from planning.disruption.exclusions import NO_POOL_LABEL, NOT_INITIALIZED, NOT_MANAGED, pool_not_found
from planning.disruption.nomination import NOMINATED, is_nominated
from planning.policies.pod_annotations import consolidation_block
from planning.selectors import tolerates

GRACEFUL = "graceful"
# Karpenter's PerNodeBaseDisruptionCost: what draining a node costs before any pod is counted.
BASE_DISRUPTION_COST = 1.0
EVENTUAL = "eventual"
# How long a node stays held after an operator cancelled its disruption, when its annotation says only when
# (the worker writes held-until from its setting, docs/configuration.md).
DEFAULT_CANCEL_HOLD = timedelta(minutes=30)


class NodeRefusal(StrEnum):
    """Typed reasons a node is no candidate that callers branch on (the message is for people)."""

    CANCEL_HOLD = "CancelHold"  # an operator cancelled its disruption; held until the cool-down ends
    NOMINATED = "Nominated"  # the provisioner planned pending pods onto it (planning/disruption/nomination.py)


@dataclass(slots=True)
class Candidate:
    """A node that passed every candidacy check of a disruption class."""

    node: NodeInfo
    pool: PoolInfo
    reschedulable: list[PodInfo]
    disruption_cost: float
    price: float
    cost: float | None = None  # reschedule_cost when it is known already (the node's NodePods)

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def reschedule_cost(self) -> float:
        """Karpenter v1.14's RescheduleDisruptionCost: 1 + the positive eviction costs of the reschedulable pods."""
        return reschedule_disruption_cost(self.reschedulable) if self.cost is None else self.cost

    @property
    def empty(self) -> bool:
        """v1.14 emptiness (IsEmpty): no reschedulable pod has a positive eviction cost (docs/semantics.md §3.3)."""
        return self.reschedule_cost <= BASE_DISRUPTION_COST

    @property
    def savings_ratio(self) -> float:
        """Price per unit of disruption, the v1.14 consolidation sort key (higher goes first)."""
        return self.price / self.reschedule_cost


@dataclass(slots=True)
class NotCandidate:
    """Why a node is not a candidate; `blocking` marks reasons worth listing as `blocked`."""

    node: NodeInfo
    message: str
    blocking: bool
    event: bool = True
    refusal: NodeRefusal | None = None
    # nodeflow.dev/do-not-consolidate (§15.9): only consolidation refuses it, so it is reported (`Unconsolidatable`)
    # after the pass's methods ran, and a drift or expiry block of the same node is the one `blocked` shows
    consolidation_only: bool = False


@dataclass
class CandidateSet:
    candidates: list[Candidate] = field(default_factory=list)
    rejected: list[NotCandidate] = field(default_factory=list)


def eviction_cost(pod: PodInfo) -> float:
    """1 + pod-deletion-cost/2^27 + priority/2^25, clamped to [-10, 10] (Karpenter EvictionCost). A pod-deletion-cost
    nodeflow wrote itself (PodDeletionCostManagement, docs/semantics.md §3.3) is ignored, so the plan does not feed
    on its own ranking."""
    cost = 1.0
    raw = pod.annotations.get(L.POD_DELETION_COST_ANNOTATION)
    if raw is not None and raw != pod.annotations.get(L.MANAGED_DELETION_COST_ANNOTATION):
        try:
            value = float(raw)
            if math.isfinite(value):
                cost += value / 2**27
        except ValueError:
            pass
    if pod.priority is not None:
        cost += pod.priority / 2**25
    return max(-10.0, min(10.0, cost))


def reschedule_disruption_cost(pods: Iterable[PodInfo]) -> float:
    """1 (the cost of draining any node) + sum of max(0, eviction cost): Karpenter v1.14's per-node disruption cost,
    for the sort (§3.3), emptiness and the Balanced score (§5.10)."""
    return BASE_DISRUPTION_COST + sum(max(0.0, eviction_cost(p)) for p in pods)


def lifetime_remaining(node: NodeInfo, pool: PoolInfo, at: datetime) -> float:
    """Share of the node's expireAfter still ahead of it, in [0, 1]; 1 when it never expires."""
    claim = node.claim
    expire = claim.expire_after if claim is not None and claim.has_expire_after else pool.expire_after
    created = claim.created if claim is not None else node.created
    if expire is None or created is None or expire.total_seconds() <= 0:
        return 1.0
    age = (at - created).total_seconds()
    return max(0.0, min(1.0, (expire.total_seconds() - age) / expire.total_seconds()))


class NodePods(NamedTuple):
    """What a node's pods alone decide, read several times a pass: derived once per pass, or carried from the last
    while the node holds the very same pods (planning/node_pods_memo.py)."""

    reschedulable: list[PodInfo]
    eviction_sum: float  # the sum of every pod's eviction cost (DisruptionCost before the lifetime factor)
    reschedule_cost: float  # RescheduleDisruptionCost of the reschedulable pods
    pinned: str | None  # why consolidation leaves it alone (do-not-consolidate), or None
    dnd_valued: list[PodInfo]  # active pods whose do-not-disrupt is other than "true" (a duration or invalid)


def _node_pods(pods: list[PodInfo], node: NodeInfo) -> NodePods:
    reschedulable = [p for p in pods if p.reschedulable]
    dnd = L.DO_NOT_DISRUPT_ANNOTATION
    return NodePods(reschedulable, sum(map(eviction_cost, pods)), reschedule_disruption_cost(reschedulable),
                    consolidation_block(node),
                    [p for p in pods if p.annotations.get(dnd, "true") != "true" and p.active])


def node_pods(node: NodeInfo) -> NodePods:
    """The node's NodePods for this pass."""
    got = node.pod_values
    if got is None:
        pods, memo = node.pods, node.pods_memo
        got = _node_pods(pods, node) if memo is None else memo.get("pods", node.name, pods,
                                                                   lambda: _node_pods(pods, node))
        node.pod_values = got
        node.reschedulable_pods, node.eviction_sum = got.reschedulable, got.eviction_sum
    return got  # type: ignore[no-any-return]


def reschedulable_of(node: NodeInfo) -> list[PodInfo]:
    """The node's reschedulable pods, computed once per pass (each disruption class and expiration ask)."""
    return node_pods(node).reschedulable


def disruption_cost(node: NodeInfo, pool: PoolInfo, at: datetime) -> float:
    """Karpenter's DisruptionCost: sum of eviction costs of all pods times lifetime remaining (the v1.9.1 sort key;
    static pools still pick which node to remove by it)."""
    return node_pods(node).eviction_sum * lifetime_remaining(node, pool, at)


def do_not_disrupt_active(pod: PodInfo, at: datetime) -> bool:
    """`"true"`, or a positive Go duration still running since the pod started (nil start: active). The start
    time is parsed only for a pod that has the annotation: this runs for every pod of every node each pass."""
    value = pod.annotations.get(L.DO_NOT_DISRUPT_ANNOTATION)
    return value is not None and do_not_disrupt_value_active(value, pod.start_time, at)


def do_not_disrupt_value_active(value: str | None, start: datetime | None, at: datetime) -> bool:
    """Karpenter's IsDoNotDisruptActive (v1.12, kubernetes-sigs/karpenter#2874) on an annotation value and the pod's
    status.startTime: candidacy (§3.2) and the drain (§9.2) share it."""
    if value is None:
        return False
    if value == "true":
        return True
    try:
        d = parse_duration(value)
    except DurationError:
        return False
    if d <= timedelta(0):
        return False
    if start is None:
        return True
    return at - start < d


def pod_block(cluster: Cluster, node: NodeInfo, at: datetime) -> str | None:
    """Pod-level blocks: an active do-not-disrupt pod (reported first, whichever pod has it), or a PDB that
    allows no eviction of an evictable pod. This runs for every node each pass: with the cluster's memo (the worker's
    cache) the answer is carried while the node holds the same pods and their namespaces the same PDBs, unless a
    do-not-disrupt other than "true" made it depend on the time."""
    memo = cluster.pods_memo
    if memo is None:
        return _walk_pod_block(cluster, node, at)[0]
    hit, block = memo.found("block", node.name, node.pods, cluster.pdb_tokens)
    if hit:
        return block  # type: ignore[no-any-return]
    block, timeless = _walk_pod_block(cluster, node, at)
    if timeless:
        memo.keep("block", node.name, node.pods, {p.namespace for p in node.pods}, cluster.pdb_tokens, block)
    return block


def _walk_pod_block(cluster: Cluster, node: NodeInfo, at: datetime) -> tuple[str | None, bool]:
    """`pod_block` by one walk over the pods, and whether the answer holds at any time. What a pod's own fields
    decide is kept on its PodInfo and the PDB answer per label set for the pass."""
    pdb_block: str | None = None
    timeless = True
    for pod in node.pods:
        if not pod.active:
            continue
        value = pod.annotations.get(L.DO_NOT_DISRUPT_ANNOTATION)
        if value is not None:
            timeless = timeless and value == "true"  # a duration's answer ends with time
            if do_not_disrupt_value_active(value, pod.start_time, at):
                return f'pod has "{L.DO_NOT_DISRUPT_ANNOTATION}" annotation (Pod={pod.key})', timeless
        if pdb_block is None:
            evictable = pod.pdb_evictable
            if evictable is None:
                evictable = pod.pdb_evictable = not pod.is_mirror and not tolerates(pod.tolerations,
                                                                                    L.DISRUPTED_TAINT)
            if evictable and pod.namespace in cluster.pdbs_by_ns:
                pdb_block = _pdb_block_of(cluster, pod)
    return pdb_block, timeless


def _pdb_block_of(cluster: Cluster, pod: PodInfo) -> str | None:
    """`_pdb_block` of an evictable pod in a namespace with PDBs, once for the pods whose labels the PDB selectors
    read are the same (the replicas of a workload, whatever other labels they carry): for the pass, or with the
    cluster's memo while the namespace's PDBs are the same objects (planning/node_pods_memo.py). Looked up first by
    the pod's whole label set, which is kept on its PodInfo and hashed once."""
    if pod.label_set is None:
        pod.label_set = frozenset(pod.labels.items())
    answers = cluster.pdb_answers(pod.namespace)
    whole = (pod.label_set, pod.ready)
    hit, found = answers.get(whole)
    if hit:
        return found
    labels = pod.labels
    read = (tuple([(k, labels[k]) for k in cluster.pdb_label_keys(pod.namespace) if k in labels]), pod.ready)
    hit, found = answers.get_read(read)
    if not hit:
        found = _pdb_block(cluster, pod)
        answers.put_read(read, found)
    answers.put(whole, found)
    return found


def _pdb_block(cluster: Cluster, pod: PodInfo) -> str | None:
    """Why the PDBs of an evictable pod stop its eviction now, or None."""
    pdbs = cluster.pdbs_for(pod)
    if len(pdbs) > 1:
        names = " ".join(sorted(p.key for p in pdbs))
        return f"eviction does not support multiple PDBs (PodDisruptionBudget(s)=[{names}])"
    if len(pdbs) == 1:
        pdb = pdbs[0]
        if pdb.always_allow_unhealthy and not pod.ready:
            return None
        if pdb.disruptions_allowed <= 0:
            return f"pdb {pdb.key} prevents pod evictions"
    return None


def currently_reschedulable(cluster: Cluster, pods: Iterable[PodInfo], at: datetime) -> list[PodInfo]:
    """The pods a what-if must find room for now, Karpenter's "currently reschedulable" (docs/semantics.md §3.4).

    A pod with an active do-not-disrupt, or under a PDB that never allows an eviction (maxUnavailable 0 or
    "0%", minAvailable "100%"), stays where it is until the node's terminationGracePeriod, so a replacement
    is not sized for it. A PDB that merely has no disruption left right now does not exclude its pods.
    """
    return [p for p in pods
            if not do_not_disrupt_active(p, at) and not any(pdb.fully_blocking for pdb in cluster.pdbs_for(p))]


def in_flight(node: NodeInfo, busy: set[str] | frozenset[str]) -> bool:
    """A node already being disrupted or deleted: in the pass's `busy` set, tainted karpenter.sh/disrupted, or
    marked for deletion."""
    return node.name in busy or node.marked_for_deletion or node.tainted_disrupted


def in_flight_pods(cluster: Cluster, busy: set[str], at: datetime) -> list[PodInfo]:
    """Pods of nodes already being disrupted or deleted (in `busy`, tainted karpenter.sh/disrupted, or deleting)
    that will need room elsewhere: their currently reschedulable pods, as Karpenter's SimulateScheduling adds the
    pods of deleting nodes (docs/semantics.md §2)."""
    pods: list[PodInfo] = []
    for node in cluster.nodes:
        if in_flight(node, busy):
            pods += reschedulable_of(node)
    return currently_reschedulable(cluster, pods, at) if pods else pods


def cancel_hold(node: NodeInfo, at: datetime) -> tuple[datetime | None, datetime] | None:
    """(cancelled at, held until) while an operator's cancel of the node's disruption holds it from re-planning:
    until the held-until annotation, else the cancel time plus DEFAULT_CANCEL_HOLD; unparsable times count as
    absent."""
    notes = node.annotations
    if L.DISRUPTION_CANCELLED_AT_ANNOTATION not in notes and L.DISRUPTION_HELD_UNTIL_ANNOTATION not in notes:
        return None  # asked of every node each pass; few have either
    cancelled = parse_time(notes.get(L.DISRUPTION_CANCELLED_AT_ANNOTATION))
    until = parse_time(notes.get(L.DISRUPTION_HELD_UNTIL_ANNOTATION))
    if until is None and cancelled is not None:
        until = cancelled + DEFAULT_CANCEL_HOLD
    if until is None or at >= until:
        return None
    return cancelled, until


def hold_check(node: NodeInfo, at: datetime) -> NotCandidate | None:
    hold = cancel_hold(node, at)
    if hold is None:
        return None
    cancelled, until = hold
    message = events.cancel_hold(format_seconds(cancelled) if cancelled else "?", format_seconds(until), node.name)
    return NotCandidate(node, message, blocking=True, refusal=NodeRefusal.CANCEL_HOLD)


def node_check(node: NodeInfo, cluster: Cluster, exclude: set[str], at: datetime | None = None) -> NotCandidate | None:
    """ValidateNodeDisruptable and the NodePool lookup (docs/semantics.md §3.1); with `at`, the nomination (in
    Karpenter's place, after deletion) and nodeflow's own cancel hold last."""
    if node.name in exclude:
        return NotCandidate(node, "candidate is already being disrupted", blocking=False, event=False)
    # these membership tests are also `nodeflow plan`'s `excluded` (planning/disruption/exclusions.py)
    if node.claim is None:
        return NotCandidate(node, NOT_MANAGED, blocking=False, event=False)
    if not node.initialized and not node.claim.condition_true("Initialized"):
        return NotCandidate(node, NOT_INITIALIZED, blocking=False)
    if node.marked_for_deletion or node.tainted_disrupted:
        return NotCandidate(node, "node is deleting or marked for deletion", blocking=False)
    if at is not None and is_nominated(node.annotations, node.claim.annotations, at):
        return NotCandidate(node, NOMINATED, blocking=True, refusal=NodeRefusal.NOMINATED)
    key = L.DO_NOT_DISRUPT_ANNOTATION
    value = node.annotations[key] if key in node.annotations else node.claim.annotations.get(key)
    if value == "true":
        return NotCandidate(node, f'disruption is blocked through the "{L.DO_NOT_DISRUPT_ANNOTATION}" annotation',
                            blocking=True)
    if not node.labels.get(L.NODEPOOL_LABEL):
        return NotCandidate(node, NO_POOL_LABEL, blocking=True)
    pool = cluster.pools.get(node.pool)
    if pool is None:
        return NotCandidate(node, pool_not_found(node.pool), blocking=True)
    if pool.paused:
        return NotCandidate(node, f"nodepool {pool.name} is paused ({L.PAUSED_ANNOTATION})", blocking=True)
    return hold_check(node, at) if at is not None else None


def build_candidates(cluster: Cluster, at: datetime, exclude: set[str], disruption_class: str,
                     pod_blocks: dict[str, str | None] | None = None,
                     checks: dict[str, NotCandidate | None] | None = None) -> CandidateSet:
    """Candidates of one disruption class; pod blocks are ignored for `eventual` with a NodeClaim TGP.
    `pod_blocks` and `checks` cache the pod-level and node-level answers across the classes of one pass (at
    5,000 nodes each is a noticeable share of a steady pass)."""
    out = CandidateSet()
    pod_blocks = {} if pod_blocks is None else pod_blocks
    checks = {} if checks is None else checks
    for node in cluster.nodes:
        if node.name not in checks:
            checks[node.name] = node_check(node, cluster, exclude, at)
        problem = checks[node.name]
        if problem is None:
            assert node.claim is not None
            ignore_pods = disruption_class == EVENTUAL and node.claim.termination_grace_period is not None
            if ignore_pods:
                message = None
            else:
                if node.name not in pod_blocks:
                    pod_blocks[node.name] = pod_block(cluster, node, at)
                message = pod_blocks[node.name]
            if message is not None:
                problem = NotCandidate(node, message, blocking=True)
            elif disruption_class == GRACEFUL and (pinned := node_pods(node).pinned) is not None:
                problem = NotCandidate(node, pinned, blocking=True, consolidation_only=True)
        if problem is not None:
            out.rejected.append(problem)
            continue
        pool = cluster.pools[node.pool]
        values = node_pods(node)
        out.candidates.append(Candidate(
            node=node, pool=pool, reschedulable=values.reschedulable,
            disruption_cost=values.eviction_sum * lifetime_remaining(node, pool, at), price=node.price,
            cost=values.reschedule_cost,
        ))
    return out


def consolidatable(c: Candidate, at: datetime) -> bool:
    """consolidateAfter has passed since the last pod event (or since the NodeClaim initialized)."""
    after = c.pool.consolidate_after
    if after is None:
        return False
    claim = c.node.claim
    if claim is not None and claim.condition_true("Consolidatable"):
        return True
    t = claim.last_pod_event if claim is not None else None
    if t is None and claim is not None:
        t = claim.condition_time("Initialized") or claim.created
    t = t or c.node.created
    if t is None:
        return True
    return at - t >= after


def under_consolidate_after(node: NodeInfo, pool: PoolInfo, at: datetime) -> bool:
    """Karpenter v1.14's IsUnderConsolidateAfter (kubernetes-sigs/karpenter#3006): an initialized NodeClaim whose
    last pod event (else its initialization) is less than a non-zero consolidateAfter ago. Such a node takes no pod
    of a consolidation's candidates (docs/semantics.md §5.1); `Never` and `0s` pools never hold one back."""
    after, claim = pool.consolidate_after, node.claim
    if after is None or after <= timedelta(0) or claim is None or not claim.condition_true("Initialized"):
        return False
    t = claim.last_pod_event or claim.condition_time("Initialized") or claim.created
    return t is not None and at - t < after


def sort_for_consolidation(cands: list[Candidate]) -> list[Candidate]:
    """v1.14 order (kubernetes-sigs/karpenter#2962): savings ratio (price / RescheduleDisruptionCost) descending, so a
    budget-limited pass takes the moves worth most per unit of disruption first; ties by name, for a stable answer
    (docs/semantics.md §3.3)."""
    return sorted(cands, key=lambda c: (-c.savings_ratio, c.name))


def sentence(message: str) -> str:
    """pretty.Sentence: first letter upper-cased, as Karpenter's event messages."""
    return message[:1].upper() + message[1:]
