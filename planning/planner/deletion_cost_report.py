"""`deletionCost` of `nodeflow plan`: the order the pod deletion-cost controller (feature gate
PodDeletionCostManagement, Karpenter v1.15, kubernetes-sigs/karpenter#2894) would write onto the ReplicaSet pods, so
an operator sees which nodes a scale-down empties first before turning the gate on (docs/semantics.md §3.6)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from api.catalog import InstanceTypeCatalog
from planning.cluster import Cluster
from planning.disruption.deletion_cost import OWNER_KIND, deletion_costs, disruption_order
from planning.policies.view import PolicyView


def deletion_cost_rows(snapshot: Any, at: datetime, catalog: InstanceTypeCatalog | None) -> list[dict[str, Any]]:
    """[{"node", "tier", "cost", "pods"}], the node a scale-down should empty first first: `tier` why it ranks there
    (disrupting, expired, drifted, consolidatable, candidate), `cost` the pod-deletion-cost its ReplicaSet pods get
    (null when it has none), `pods` how many. Nodes no method could take are not listed (their pods keep kube's 0)."""
    cluster = Cluster.from_snapshot(snapshot, catalog)
    order = disruption_order(cluster, at, PolicyView.build(snapshot, at))
    costs = deletion_costs(cluster, order)
    nodes = {n.name: n for n in cluster.nodes}
    rows = []
    for ranked in order:
        keys = [p.key for p in nodes[ranked.name].pods if p.active and p.owner_kind == OWNER_KIND]
        rows.append({"node": ranked.name, "tier": ranked.tier.name.lower(),
                     "cost": costs[keys[0]] if keys else None, "pods": len(keys)})
    return rows
