"""The scheduling simulation under the DisruptionPolicies' launch controls: deprecated pools launch nothing
(planning/policies/deprecated_pools.py) and no new node takes a cost-limited group of pools over its limit
(planning/policies/cost_limits.py). Both act where `spec.limits` acts, in the choice of a pool and instance types for a
new node, so a pod a deprecated or capped pool cannot take goes to the next pool by weight, as Karpenter's
scheduler passes over a pool at its limits (provisioning/scheduling/scheduler.go).

Used by the provisioner and the planner alike: a disruption's replacement is a launch too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import repeat
from typing import Any

from planning.cluster import Cluster, PodInfo
from planning.policies.cost_limits import CostGroup, CostLimits, cost_limit_left_none, launching_claims
from planning.policies.deprecated_pools import deprecated_pools
from planning.scheduling.sim_state import NewNode, SimState
from planning.scheduling.simulation import Scheduler
from planning.scheduling.type_options import TypeOption


@dataclass(slots=True)
class LaunchControls:
    """What the policies of one snapshot allow launches: the deprecated pools and the cost-limit groups."""

    deprecated: dict[str, str] = field(default_factory=dict)  # pool -> deprecating policy
    cost: CostLimits = field(default_factory=CostLimits)

    @classmethod
    def build(cls, snapshot: Any, cluster: Cluster, at: datetime,
              launching: Iterable[Mapping[str, Any]] | None = None) -> LaunchControls:
        """`launching`: NodeClaims still launching without a Node (None: found in the snapshot at `at`)."""
        policies = getattr(snapshot, "disruption_policies", None) or ()
        if not any(p.spec.limits is not None and p.spec.limits.cost_limit is not None for p in policies):
            return cls(deprecated_pools(snapshot))
        claims = launching_claims(snapshot, cluster, at) if launching is None else launching
        return cls(deprecated_pools(snapshot), CostLimits.build(snapshot, cluster, claims))

    def __bool__(self) -> bool:
        return bool(self.deprecated) or bool(self.cost)


class PolicyScheduler(Scheduler):
    """A Scheduler whose new nodes come only from pools not deprecated and within their cost limits."""

    def __init__(self, cluster: Cluster, controls: LaunchControls, exclude: Iterable[str] = (),
                 reserve: Sequence[PodInfo] = (), planned: Mapping[str, str] | None = None) -> None:
        self.controls = controls
        self._group_prices: dict[str, dict[str, float]] = {}  # policy -> node -> price, its pools' nodes only
        self._capped: dict[str, str] = {}  # pool -> the cost limit that left it no option, in the current _open_new
        super().__init__(cluster, exclude, reserve, planned)
        self.all_pools_by_weight = list(self.pools_by_weight)
        self.pools_by_weight = [p for p in self.pools_by_weight if p.name not in controls.deprecated]

    def _limit_filter(self, pool: Any, options: list[TypeOption], state: SimState) -> list[TypeOption]:
        within = super()._limit_filter(pool, options, state)
        kept = self.cost_filter(pool, within, state)
        if within and not kept:
            self._capped[pool.name] = cost_limit_left_none(pool.name, self.controls.cost.by_pool[pool.name])
        return kept

    def _open_new(self, pod: PodInfo, state: SimState) -> tuple[NewNode | None, str]:
        """The base choice; when it found no pool, the why also names each cost limit that left a pool no
        instance type (the base says only "no instance type within its limits")."""
        self._capped = {}
        nn, why = super()._open_new(pod, state)
        if nn is None and self._capped:
            why = "; ".join([why, *self._capped.values()])
        return nn, why

    def cost_filter(self, pool: Any, options: list[TypeOption], state: SimState) -> list[TypeOption]:
        """`options` less those that would take a cost-limited group of `pool` over its limit."""
        if not options or pool.name not in self.controls.cost.by_pool:
            return options
        removed = state.removed
        return self.controls.cost.filter(
            pool.name, options, lambda g: sum(map(self._prices_of(g).get, removed, repeat(0.0))), state.new_nodes)

    def _prices_of(self, group: CostGroup) -> dict[str, float]:
        """Node -> price for the group's nodes not already marked for deletion (those count nowhere). Built once:
        a what-if removing 1,000 expiring nodes sums their prices for every new node it opens, and reading
        marked_for_deletion each time made a 1,000-node pass with a binding limit 1.8 times as long."""
        prices = self._group_prices.get(group.policy)
        if prices is None:
            prices = {n.name: n.price for n in self.cluster.nodes
                      if n.pool in group.pools and not n.marked_for_deletion}
            self._group_prices[group.policy] = prices
        return prices


def scheduler_for(cluster: Cluster, controls: LaunchControls, exclude: Iterable[str] = (),
                  reserve: Sequence[PodInfo] = (), planned: Mapping[str, str] | None = None) -> Scheduler:
    """A PolicyScheduler when a policy controls launches, else the plain Scheduler (no cost on the hot path)."""
    if controls:
        return PolicyScheduler(cluster, controls, exclude, reserve, planned)
    return Scheduler(cluster, exclude, reserve, planned)
