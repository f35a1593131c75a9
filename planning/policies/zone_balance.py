"""Zone balance without spread constraints (docs/semantics.md §15.6; aws/karpenter-provider-aws issue 7311).

A DisruptionPolicy's `provisioning.zoneBalance: N` keeps a pool's node counts within N of each other across the
zones it can launch in. At launch (`ZoneBalance.place`, called by planning/provisioning/provisioner.py) a new node's
offerings are narrowed to the zones where one more node keeps the spread within N, then priced as before (cheapest first
within them); when its pods allow none of those zones (a pod pinned to a zone) the launch goes where the pods can run,
since balance must never keep a pod pending. In consolidation (`prefer_fullest_zones`) a node in a fuller zone of its
pool goes first among candidates that save as much per unit of disruption: Karpenter's own order decides, zone breaks
ties.

Karpenter balances zones only through pods' topologySpreadConstraints (scheduling/topology.go); this is the
pool-level knob the issue asks for, applied where nodeflow chooses a new node's zone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from planning.cluster import Cluster
from planning.disruption.candidates import Candidate
from planning.disruption.method import PassContext
from planning.policies.view import PolicyView
from planning.pricing.replacements import PricedReplacement, pool_zones, to_replacement
from planning.scheduling.sim_state import NewNode
from planning.scheduling.type_options import TypeOption


def zone_limits(policies: PolicyView) -> dict[str, int]:
    """Pool -> its DisruptionPolicy's zoneBalance (pools without one are left out)."""
    out = {}
    for pool, policy in policies.by_pool.items():
        rule = policy.spec.provisioning
        if rule is not None and rule.zone_balance is not None:
            out[pool] = rule.zone_balance
    return out


def pool_zone_counts(cluster: Cluster, pool: str) -> dict[str, int]:
    """The pool's live nodes per zone (launching NodeClaims the provisioner added as nodes count too)."""
    counts: dict[str, int] = {}
    for n in cluster.nodes:
        if n.pool == pool and n.zone and not n.marked_for_deletion:
            counts[n.zone] = counts.get(n.zone, 0) + 1
    return counts


def balanced_zones(counts: dict[str, int], zones: set[str], spread: int) -> set[str]:
    """The zones among `zones` where one more node keeps every zone within `spread` nodes of the emptiest."""
    if not zones:
        return set()
    low = min(counts.get(z, 0) for z in zones)
    return {z for z in zones if counts.get(z, 0) + 1 - low <= spread}


def _in_zones(options: Sequence[TypeOption], zones: set[str], capacity_type: str) -> list[TypeOption]:
    out = []
    for opt in options:
        offs = tuple(o for o in opt.offerings if o.zone in zones and o.capacity_type == capacity_type)
        if offs:
            out.append(TypeOption(opt.itype, offs, opt.cpu, opt.mem, opt.pods, opt.eph))
    return out


def launch_zone(options: Sequence[TypeOption], capacity_type: str) -> str | None:
    """The zone the launch activity takes first: its cheapest offering (price, type, zone; activities/provisioning.py
    offerings_cheapest_first)."""
    best = min(((o.price, opt.itype.name, o.zone) for opt in options for o in opt.offerings
                if o.capacity_type == capacity_type), default=None)
    return best[2] if best is not None else None


@dataclass
class ZoneBalance:
    """The zoneBalance of each pool of one provisioning decision, and its zone counts as launches are added."""

    cluster: Cluster | None = None
    limits: dict[str, int] = field(default_factory=dict)
    counts: dict[str, dict[str, int]] = field(default_factory=dict)

    @classmethod
    def build(cls, snapshot: Any, cluster: Cluster, at: datetime) -> ZoneBalance:
        if not getattr(snapshot, "disruption_policies", None):
            return cls()
        return cls(cluster, zone_limits(PolicyView.build(snapshot, at)))

    def place(self, nn: NewNode, priced: PricedReplacement, all_options: Sequence[TypeOption]) -> PricedReplacement:
        """`priced` narrowed to the zones that keep its pool balanced (unchanged without zoneBalance, or when its
        pods can run in none of them); the chosen zone is counted for the next launch of the same decision."""
        spread = self.limits.get(nn.pool.name)
        if spread is None or self.cluster is None:
            return priced
        counts = self.counts.setdefault(nn.pool.name, pool_zone_counts(self.cluster, nn.pool.name))
        ct = priced.replacement.capacity_type
        zones = pool_zones(nn, all_options)
        narrowed = _in_zones(nn.options, balanced_zones(counts, zones, spread), ct)
        if narrowed:
            priced = to_replacement(nn, narrowed, ct, zones)
        zone = launch_zone(narrowed or _in_zones(nn.options, zones, ct), ct)
        if zone is not None:
            counts[zone] = counts.get(zone, 0) + 1
        return priced


def prefer_fullest_zones(cands: list[Candidate], ctx: PassContext) -> list[Candidate]:
    """Consolidation's order (already sorted) with one more tie-breaker for pools with zoneBalance: among candidates
    of equal savings ratio, the one in the fuller zone of its pool goes first (a stable sort keeps the rest)."""
    limits = zone_limits(ctx.policies)
    if not limits or not any(c.pool.name in limits for c in cands):
        return cands
    counts = {pool: pool_zone_counts(ctx.cluster, pool) for pool in {c.pool.name for c in cands} & limits.keys()}

    def fullness(c: Candidate) -> int:
        return counts[c.pool.name].get(c.node.zone, 0) if c.pool.name in counts else 0

    return sorted(cands, key=lambda c: (-c.savings_ratio, -fullness(c)))


def zone_balance_rows(snapshot: Any, at: datetime, catalog: Any) -> list[dict[str, Any]]:
    """The `zoneBalance` entries of `nodeflow plan -o json`: each pool with a zoneBalance, its live nodes per zone
    and the spread between its fullest and emptiest zone among those it has nodes in."""
    limits = zone_limits(PolicyView.build(snapshot, at)) if getattr(snapshot, "disruption_policies", None) else {}
    if not limits:
        return []
    cluster = Cluster.from_parts(snapshot, (), catalog)
    rows = []
    for pool in sorted(limits):
        counts = pool_zone_counts(cluster, pool)
        spread = max(counts.values()) - min(counts.values()) if counts else 0
        rows.append({"nodePool": pool, "zoneBalance": limits[pool], "nodesByZone": dict(sorted(counts.items())),
                     "spread": spread})
    return rows
