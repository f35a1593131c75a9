"""Static NodePools (Karpenter's StaticCapacity, docs/semantics.md §14): keep exactly `spec.replicas` nodes. Pure.

Per static pool and pass, from its NodeClaims:
- running: neither deleting nor taken by a disruption or termination in flight (NodeClaims still launching count);
- pending disruption: taken by one in flight (a drift replacing it, an expiration, a scale-down), not deleting yet;
- deleting: the NodeClaim or its Node is being deleted.

Scale-up (Karpenter's static provisioning): launch `replicas - (running + pending + deleting)` NodeClaims from the
pool's template, no more than `limits.nodes` allows; a pool held below its replicas gets a NodePoolLimitsReached
Event. Scale-down (Karpenter's static deprovisioning): `running - replicas` nodes go, empty ones first (no pods but
DaemonSet pods, none do-not-disrupt), then those without do-not-disrupt, then the cheapest to disrupt. Not budgeted
(as Karpenter): each goes through its TerminationWorkflow, which respects PDBs and do-not-disrupt. StaticDrift is
planning/disruption/static_drift.py; every other disruption method leaves static pools alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from api import events
from api import labels as L
from api.events import EventReason
from planning.cluster import Cluster, NodeInfo, PoolInfo
from planning.disruption.candidates import disruption_cost, do_not_disrupt_active
from planning.disruption.commands import Replacement, StaticPool, StaticRemoval, TerminateFirst
from planning.disruption.method import PassContext
from planning.pricing.replacements import launch_replacement
from planning.scheduling.sim_state import NewNode
from planning.scheduling.simulation import Scheduler


@dataclass(frozen=True, slots=True)
class PoolCounts:
    """A static pool's NodeClaims by state (module docstring)."""

    running: int = 0
    launching: int = 0
    pending_disruption: int = 0
    deleting: int = 0

    @property
    def total(self) -> int:
        """Every NodeClaim the pool has: what its replicas and `limits.nodes` are measured against."""
        return self.running + self.pending_disruption + self.deleting


def count_pools(cluster: Cluster, busy: set[str] | frozenset[str]) -> dict[str, PoolCounts]:
    """PoolCounts of every static pool; `busy`: nodes a disruption, termination or repair already has."""
    static = {name for name, pool in cluster.pools.items() if pool.static}
    node_of = {n.claim.name: n for n in cluster.nodes if n.claim is not None}
    tallies: dict[str, list[int]] = {name: [0, 0, 0, 0] for name in static}
    for claim in cluster.claims:
        tally = tallies.get(claim.node_pool)
        if tally is None:
            continue
        node = node_of.get(claim.name)
        if claim.deleting or claim.condition_true("InstanceTerminating") or (node is not None and node.deleting):
            tally[3] += 1
        elif node is not None and (node.name in busy or node.tainted_disrupted):
            tally[2] += 1
        else:
            tally[0] += 1
            tally[1] += node is None or not (node.ready and node.initialized)
    return {name: PoolCounts(*t) for name, t in tallies.items()}


def node_limit(pool: PoolInfo) -> int | None:
    """`limits.nodes` (the only limit a static pool may have); None when unset or not a count."""
    value = pool.limits.get("nodes")
    return int(value) if value is not None and value.isdigit() else None


def terminate_first(pool: PoolInfo, counts: PoolCounts, launches: int = 0) -> TerminateFirst | None:
    """Whether the pool's drift must delete before it replaces (v1.15, kubernetes-sigs/karpenter#3312; aws#8873):
    `limits.nodes` leaves no room for a replacement beside its NodeClaims and this pass's `launches`, and the pool
    is at its capacity (`min(replicas, limits.nodes)`, none deleting, launching or about to launch). A pool still
    refilling is None: its drift waits rather than take a second node away."""
    limit = node_limit(pool)
    if limit is None or limit - counts.total - launches > 0:
        return None
    at_capacity = counts.running + counts.pending_disruption >= min(pool.replicas or 0, limit)
    if launches or counts.launching or counts.deleting or not at_capacity:
        return None
    return TerminateFirst.AT_REPLICAS if limit >= (pool.replicas or 0) else TerminateFirst.AT_NODE_LIMIT


def launch_count(replicas: int, counts: PoolCounts, limit: int | None) -> tuple[int, str | None]:
    """How many NodeClaims to launch now, and why fewer than the pool lacks (its node limit) or None."""
    missing = replicas - counts.total
    if missing <= 0:
        return 0, None
    launch = missing if limit is None else max(min(missing, limit - counts.total), 0)
    if launch == missing:
        return launch, None
    return launch, events.static_limit_reached(limit or 0, counts.total, replicas)


def template_replacement(scheduler: Scheduler, pool: PoolInfo) -> Replacement | None:
    """A NodeClaim of the pool's template, no pods to size it for: every instance type its requirements allow,
    cheapest first, spot when allowed (Karpenter's launch choice). None when no offering is available."""
    options = scheduler.pool_options(pool)
    if not options:
        return None
    priced = launch_replacement(NewNode(0, pool, list(options), scheduler.pool_labels(pool)), options)
    return priced.replacement if priced is not None else None


def _empty(node: NodeInfo, at: datetime) -> bool:
    """No pods but DaemonSet (and mirror) pods, none of them do-not-disrupt."""
    pods = [p for p in node.pods if p.active]
    return all(p.is_daemonset or p.is_mirror for p in pods) and not any(do_not_disrupt_active(p, at) for p in pods)


def _protected(node: NodeInfo, at: datetime) -> bool:
    """A do-not-disrupt pod or node: removed last (its termination waits for it)."""
    key = L.DO_NOT_DISRUPT_ANNOTATION
    value = node.annotations.get(key) or (node.claim.annotations.get(key) if node.claim else None)
    return value == "true" or any(p.active and do_not_disrupt_active(p, at) for p in node.pods)


def removals(cluster: Cluster, pool: PoolInfo, count: int, busy: set[str] | frozenset[str],
             at: datetime) -> list[StaticRemoval]:
    """The `count` nodes a pool above its replicas gives up, in Karpenter's order (module docstring). Only nodes
    that registered: a NodeClaim still without a Node is left to its launch, so no termination races it."""
    if count <= 0:
        return []
    nodes = [n for n in cluster.nodes if n.pool == pool.name and n.claim is not None and not n.marked_for_deletion
             and not n.tainted_disrupted and n.name not in busy]

    def key(n: NodeInfo) -> tuple[int, int, float, str]:
        empty = _empty(n, at)
        return (0 if empty else 1, 1 if not empty and _protected(n, at) else 0,
                0.0 if empty else disruption_cost(n, pool, at), n.name)

    chosen = sorted(nodes, key=key)[:count]
    return [StaticRemoval(node=n.name, pods=sum(1 for p in n.pods if p.active and not p.is_daemonset),
                          why=_why(n, at), node_uid=n.uid, node_claim=n.claim.name if n.claim else "",
                          provider_id=(n.claim.provider_id if n.claim else "") or
                          (n.raw.get("spec") or {}).get("providerID", ""))
            for n in chosen]


def _why(node: NodeInfo, at: datetime) -> str:
    if _empty(node, at):
        return "empty"
    return "do-not-disrupt" if _protected(node, at) else "fewest pods to move"


def decide_static(ctx: PassContext, counts: dict[str, PoolCounts], busy: set[str] | frozenset[str]
                  ) -> list[StaticPool]:
    """Every static pool's scale-up and scale-down for this pass, with Events on pools held at their node limit."""
    out = []
    for name in sorted(counts):
        pool = ctx.cluster.pools[name]
        # Karpenter v1.10 (kubernetes-sigs/karpenter#2840): neither launch nor remove while the NodePool is deleted
        if pool.deleting:
            continue
        c, replicas, limit = counts[name], pool.replicas or 0, node_limit(pool)
        launch, held = launch_count(replicas, c, limit)
        if held is not None:
            ctx.event("NodePool", name, EventReason.NODEPOOL_LIMITS_REACHED, held, "Warning")
        replacement = None
        if launch:
            blocker = ctx.scheduler.launch_blocker(pool)
            replacement = template_replacement(ctx.scheduler, pool) if blocker is None else None
            if replacement is None:
                held = f"cannot launch: {blocker or 'no instance type of the pool has an available offering'}"
                launch = 0
        remove: list[StaticRemoval] = []
        if c.running > replicas:
            if pool.paused:
                held = f"nodepool {name} is paused ({L.PAUSED_ANNOTATION}): no scale-down"
            else:
                remove = removals(ctx.cluster, pool, c.running - replicas, busy, ctx.at)
        out.append(StaticPool(node_pool=name, replicas=replicas, running=c.running, launching=c.launching,
                              pending_disruption=c.pending_disruption, deleting=c.deleting, limit_nodes=limit,
                              launch=launch, replacement=replacement, remove=remove, held=held,
                              node_pool_uid=pool.uid))
    return out
