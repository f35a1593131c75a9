"""The spot pre-spin's size, from the interrupted node's pods (docs/semantics.md §11).

Karpenter marks the reclaimed offering unavailable and lets its provisioner schedule the pods that lose their node.
Here the same scheduling simulation as provisioning (planning/provisioning.py) places the node's pods on the other
nodes and on NodeClaims still launching first, then on new nodes by NodePool weight; each new node is one NodeClaim
to launch, its compatible types cheapest first. Pods that fit elsewhere launch nothing, so a large node with a few
small pods gets a small replacement, or none.

Which pods: every pod bound to the node that is not finished, DaemonSet or mirror, including pods already being
evicted (the node's termination drains beside the pre-spin, and an evicted pod's successor still needs room). The
node's instance type is left out on spot everywhere: the reclaimed pool is short of capacity.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from api import labels as L
from api.catalog import InstanceTypeCatalog
from planning.cluster import Cluster, Parsed
from planning.pricing import launch_replacement
from planning.provisioning import MAX_NEW_NODES, Launch, _add_launching
from planning.scheduling import Scheduler


@dataclass(slots=True)
class SpotSizing:
    """What replaces an interrupted node: NodeClaims to launch (none when its pods fit elsewhere)."""

    found: bool  # the node is in the snapshot
    launches: list[Launch] = field(default_factory=list)
    placed: dict[str, str] = field(default_factory=dict)  # pod -> existing node or launching NodeClaim
    unplaced: list[str] = field(default_factory=list)  # pods nothing can take (the provisioner reports them)

    @property
    def pods(self) -> int:
        return sum(len(launch.pods) for launch in self.launches) + len(self.placed) + len(self.unplaced)


def size_interrupted(snapshot: Any, node_name: str, catalog: InstanceTypeCatalog | None = None,
                     parsed: Parsed | None = None) -> SpotSizing:
    """The NodeClaims the provisioner would launch for `node_name`'s pods once the node is gone. Pure."""
    raw = next((n for n in snapshot.nodes if (n.get("metadata") or {}).get("name") == node_name), None)
    if raw is None:
        return SpotSizing(found=False)
    catalog = _without_reclaimed(catalog or getattr(snapshot, "catalog", None), raw)
    cluster = Cluster.from_snapshot(snapshot, catalog) if parsed is None else \
        Cluster.from_parts(snapshot, parsed.pods, catalog, parsed.claims)
    launching = _add_launching(cluster, snapshot)
    node = cluster.by_name[node_name]
    pods = [p for p in node.pods if not p.terminal and not p.is_daemonset and not p.is_mirror]
    sched = Scheduler(cluster, exclude={node_name})
    result = sched.simulate([node], pods, max_new=MAX_NEW_NODES)
    out = SpotSizing(found=True)
    for pod, target in result.placements:
        if target in launching or target in cluster.by_name:
            out.placed[pod.key] = target
    for nn in result.new_nodes:
        priced = launch_replacement(nn, sched.pool_options(nn.pool))
        if priced is not None:
            out.launches.append(Launch(priced.replacement, [p.key for p in nn.pods]))
        else:
            out.unplaced += [p.key for p in nn.pods]
    out.unplaced += [pod.key for pod, _ in result.failures]
    return out


def _without_reclaimed(catalog: InstanceTypeCatalog | None, node: dict[str, Any]) -> InstanceTypeCatalog:
    """The catalog with the interrupted node's type unavailable on spot (all zones), as the old same-size pre-spin
    never chose the reclaimed type either."""
    from api.catalog import load_default_catalog

    catalog = catalog or load_default_catalog()
    node_labels = (node.get("metadata") or {}).get("labels") or {}
    itype = catalog.get(node_labels.get(L.INSTANCE_TYPE_LABEL, ""))
    if itype is None or node_labels.get(L.CAPACITY_TYPE_LABEL) != L.CAPACITY_SPOT:
        return catalog
    offerings = tuple(o.model_copy(update={"available": False}) if o.capacity_type == L.CAPACITY_SPOT else o
                      for o in itype.offerings)
    types = [itype.model_copy(update={"offerings": offerings}) if it.name == itype.name else it
             for it in catalog.instance_types]
    return InstanceTypeCatalog.model_construct(instance_types=types, metadata=catalog.metadata)  # fresh by_name
