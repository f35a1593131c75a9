"""Cost limits (docs/semantics.md §15.10, kubernetes-sigs/karpenter issue 1215): `limits.costPerHour` of a
DisruptionPolicy caps what the pools it selects cost together, in US dollars per hour.

What counts: every node of those pools not marked for deletion at its offering's price, plus every NodeClaim still
launching at the price of its cheapest requested offering (what it launches at unless EC2 refuses it), plus the
new node. A node marked for deletion does not count, as `spec.limits` does not count it (Karpenter's
nodepool counter): it is on its way out, and counting it would block the very replacement of its pods.

A launch may never take a group's cost above max(limit, its cost without the move): the provisioner launches
nothing past the limit, while a consolidation replacement (always cheaper than what it removes) and a drift
replacement no dearer than its node always pass, even when the limit was lowered below what runs. A drift
replacement dearer than its node that would cross the limit is refused like one past `spec.limits`.

A pool selected by two policies is bound by both limits (fail closed: a second policy must not lift a cap).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from api import labels as L
from planning.cluster import Cluster, as_dict
from planning.lifecycle.liveness import still_launching
from planning.scheduling.sim_state import NewNode
from planning.scheduling.type_options import TypeOption

EPSILON = 1e-9  # prices are floats of decimal catalog prices: a sum equal to the limit is within it
LAUNCHING_PREFIX = "<launching:"  # planning/provisioning/provisioner.py names a Node-less launching NodeClaim's node so


@dataclass(slots=True)
class CostGroup:
    """One policy's limit and the pools it binds; `used`: what they cost now, in-flight launches included."""

    policy: str
    limit: Decimal
    pools: frozenset[str]
    used: float = 0.0
    planned: float = 0.0  # launches this decision admitted (provisioning)

    @property
    def headroom(self) -> float:
        return round(float(self.limit) - self.used - self.planned, 6)

    def to_public(self) -> dict[str, Any]:
        """The `costLimits` entry of `nodeflow plan -o json` (docs/contracts.md §3.1)."""
        return {"policy": self.policy, "nodePools": sorted(self.pools), "limit": str(self.limit),
                "used": round(self.used, 6), "planned": round(self.planned, 6), "headroom": self.headroom}


def preferred_capacity_type(capacity_types: set[str]) -> str:
    """Spot when allowed, then on-demand, then the rest: the capacity type a launch takes
    (planning/pricing/replacements.py)."""
    if L.CAPACITY_SPOT in capacity_types:
        return L.CAPACITY_SPOT
    return L.CAPACITY_ON_DEMAND if L.CAPACITY_ON_DEMAND in capacity_types else min(capacity_types, default="")


def launch_price(options: Sequence[TypeOption]) -> float:
    """What a new node with these options launches at: the cheapest offering of the capacity type it takes."""
    if not options:
        return 0.0
    ct = preferred_capacity_type({o.capacity_type for opt in options for o in opt.offerings})
    return min((o.price for opt in options for o in opt.offerings if o.capacity_type == ct), default=0.0)


def claim_price(claim: Mapping[str, Any], cluster: Cluster) -> float:
    """A launching NodeClaim's price: its launched offering's, else its cheapest requested offering's."""
    meta, spec = claim.get("metadata") or {}, claim.get("spec") or {}
    labels = meta.get("labels") or {}
    wanted: dict[str, set[str]] = {}
    for req in spec.get("requirements") or ():
        if req.get("operator") == "In":
            wanted[req.get("key", "")] = set(req.get("values") or ())
    for key in (L.INSTANCE_TYPE_LABEL, L.CAPACITY_TYPE_LABEL, L.ZONE_LABEL):
        if labels.get(key):
            wanted[key] = {labels[key]}
    catalog = cluster.catalog_for(labels.get(L.NODEPOOL_LABEL, ""))
    types = [it for it in (catalog.get(n) for n in sorted(wanted.get(L.INSTANCE_TYPE_LABEL, ()))) if it is not None]
    cts, zones = wanted.get(L.CAPACITY_TYPE_LABEL), wanted.get(L.ZONE_LABEL)
    offers = [o for it in types for o in it.offerings
              if (cts is None or o.capacity_type in cts) and (zones is None or o.zone in zones)]
    if not offers:
        return 0.0
    ct = preferred_capacity_type({o.capacity_type for o in offers})
    return min(o.price for o in offers if o.capacity_type == ct)


@dataclass(slots=True)
class CostLimits:
    """The cost-limit groups of one decision, and which groups bind each pool."""

    groups: list[CostGroup] = field(default_factory=list)
    by_pool: dict[str, list[CostGroup]] = field(default_factory=dict)
    _prices: dict[int, tuple[TypeOption, float]] = field(default_factory=dict)  # option -> its launch price

    @classmethod
    def build(cls, snapshot: Any, cluster: Cluster, launching: Iterable[Mapping[str, Any]] = ()) -> CostLimits:
        """Groups from the snapshot's DisruptionPolicies with `limits.costPerHour`; `launching`: the NodeClaims
        still launching that no Node of `cluster` stands for yet."""
        groups: list[CostGroup] = []
        for policy in getattr(snapshot, "disruption_policies", None) or ():
            limit = policy.spec.limits.cost_limit if policy.spec.limits is not None else None
            if limit is None:
                continue
            pools = frozenset(p.name for p in snapshot.node_pools if policy.applies_to(p))
            groups.append(CostGroup(policy.name, limit, pools))
        out = cls(groups)
        for g in groups:
            for pool in g.pools:
                out.by_pool.setdefault(pool, []).append(g)
        if groups:
            out._count(cluster, launching)
        return out

    def _count(self, cluster: Cluster, launching: Iterable[Mapping[str, Any]]) -> None:
        for node in cluster.nodes:
            if node.marked_for_deletion or node.name.startswith(LAUNCHING_PREFIX):
                continue
            for g in self.by_pool.get(node.pool, ()):
                g.used += node.price
        for raw in launching:
            claim = as_dict(raw)
            pool = ((claim.get("metadata") or {}).get("labels") or {}).get(L.NODEPOOL_LABEL, "")
            for g in self.by_pool.get(pool, ()):
                g.used += claim_price(claim, cluster)

    def __bool__(self) -> bool:
        return bool(self.groups)

    def filter(self, pool: str, options: list[TypeOption], removed_price: Callable[[CostGroup], float],
               new_nodes: Sequence[NewNode]) -> list[TypeOption]:
        """The options a new node of `pool` may take without a group crossing its limit, given what the nodes the
        simulation removes cost in a group (asked only when an option would cross without them) and the new nodes
        it already added."""
        for g in self.by_pool.get(pool, ()):
            added = sum(launch_price(nn.options) for nn in new_nodes if nn.pool.name in g.pools)
            ceiling = max(float(g.limit), g.used + g.planned) + EPSILON
            base = g.used + g.planned + added
            if all(base + self._price(o) <= ceiling for o in options):
                continue
            base -= removed_price(g)
            options = [o for o in options if base + self._price(o) <= ceiling]
        return options

    def _price(self, opt: TypeOption) -> float:
        """launch_price([opt]), cached: the scheduler hands the same option objects to every simulation."""
        hit = self._prices.get(id(opt))
        if hit is None or hit[0] is not opt:
            hit = (opt, launch_price([opt]))  # holding the option keeps its id from being reused
            self._prices[id(opt)] = hit
        return hit[1]

    def admit(self, pool: str, price: float) -> CostGroup | None:
        """Count a launch of `price` in `pool` when every group binding it has room (None), else the first group
        it would take over its limit (nothing counted)."""
        groups = self.by_pool.get(pool, ())
        for g in groups:
            if g.used + g.planned + price > float(g.limit) + EPSILON:
                return g
        for g in groups:
            g.planned += price
        return None

    def blocking(self, pool: str, price: float) -> CostGroup | None:
        """The first group a launch of `price` in `pool` would take over its limit, or None."""
        return next((g for g in self.by_pool.get(pool, ())
                     if g.used + g.planned + price > float(g.limit) + EPSILON), None)

    def public(self) -> list[dict[str, Any]]:
        return [g.to_public() for g in self.groups]


def cost_limit_reached(group: CostGroup, price: float) -> str:
    """The message of a launch a cost limit stops (FailedScheduling on the pod, CostLimitReached on the pool)."""
    return (f"cost limit ${group.limit}/h of DisruptionPolicy {group.policy} reached: its pools cost "
            f"${group.used + group.planned:.4f}/h with launches in flight, a new node ${price:.4f}/h more")


def cost_limit_left_none(pool: str, groups: Sequence[CostGroup]) -> str:
    """Why a simulation found no instance type of `pool` within its cost limits (a what-if's blocked reason)."""
    limits = ", ".join(f"${g.limit}/h of DisruptionPolicy {g.policy}" for g in groups)
    return f"nodepool {pool}: cost limit {limits} leaves no instance type"


def launching_claims(snapshot: Any, cluster: Cluster, at: datetime) -> list[dict[str, Any]]:
    """The snapshot's NodeClaims still launching (planning/lifecycle/liveness.py still_launching) that no Node stands
    for."""
    with_node = {n.claim.name for n in cluster.nodes if n.claim is not None}
    out = []
    for raw in getattr(snapshot, "node_claims", ()):
        if _name(raw) in with_node:  # most claims: read the name before turning a model into a dict
            continue
        claim = as_dict(raw)
        if still_launching(claim, at):
            out.append(claim)
    return out


def _name(raw: Any) -> str | None:
    if isinstance(raw, dict):
        return (raw.get("metadata") or {}).get("name")
    return getattr(getattr(raw, "metadata", None), "name", None)
