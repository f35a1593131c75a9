"""The spot pre-spin's size, from the interrupted node's pods (docs/semantics.md §11).

Karpenter marks the reclaimed offering unavailable and lets its provisioner schedule the pods that lose their node.
Here the same scheduling simulation as provisioning (planning/provisioning/provisioner.py) places the node's pods on the
other nodes and on NodeClaims still launching first, then on new nodes by NodePool weight; each new node is one
NodeClaim to launch, its compatible types cheapest first. Pods that fit elsewhere launch nothing, so a large node with a
few small pods gets a small replacement, or none.

Which pods: every pod bound to the node that is not finished, DaemonSet or mirror, including pods already being
evicted (the node's termination drains beside the pre-spin). An evicted pod whose controller already made a pending
successor is counted once, as that successor. Other pending pods, and the pods of other nodes being deleted or
drained (tainted `karpenter.sh/disrupted`: another interruption, a disruption's candidates), compete for room first
and launch nothing, as Karpenter's provisioner schedules them together: a replacement pre-spun for another node a
moment ago is not free room while the pods it was launched for wait; so that this holds also before the other
node's termination has tainted it, a pre-spin NodeClaim still launching is never offered to another node's pods.
The node's instance type is left out on spot everywhere: the reclaimed pool is short of capacity. The node's own
NodeClaim is never room for its pods, also when no Node link shows it (a claim not yet recording its Node), and a
claim past its liveness TTL is no room at all (planning/lifecycle/liveness.py `still_launching`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from api import labels as L
from api.catalog import InstanceTypeCatalog, load_default_catalog
from planning.cluster import Cluster, NodeInfo, Parsed, PodInfo, as_dict
from planning.policies.launch_controls import LaunchControls, scheduler_for
from planning.pricing.replacements import launch_replacement
from planning.provisioning.provisioner import MAX_NEW_NODES, Launch, _add_launching, provisionable
from planning.scheduling.sim_state import SimState


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
                     parsed: Parsed | None = None, at: datetime | None = None) -> SpotSizing:
    """The NodeClaims the provisioner would launch for `node_name`'s pods once the node is gone. Pure but for `at`
    (None: now), the time launching claims' liveness TTLs are measured at."""
    raw = next((n for n in snapshot.nodes if (n.get("metadata") or {}).get("name") == node_name), None)
    if raw is None:
        return SpotSizing(found=False)
    catalog = _without_reclaimed(catalog or getattr(snapshot, "catalog", None), raw)
    cluster = Cluster.from_snapshot(snapshot, catalog) if parsed is None else \
        Cluster.from_parts(snapshot, parsed.pods, catalog, parsed.claims)
    launching = _add_launching(cluster, snapshot, at)
    node = cluster.by_name[node_name]
    pods, others = _displaced(node, [p for p in cluster.pending if provisionable(p)])
    others += [p for n in cluster.nodes if n is not node and (n.marked_for_deletion or n.tainted_disrupted)
               for p in n.pods if p.reschedulable]
    dying = {node_name} | {f"<launching:{c}>" for c in _own_claims(raw, snapshot)}
    # a deprecated pool launches no pre-spin either; a cost limit lets the dying node's like-for-like replacement pass
    controls = LaunchControls.build(snapshot, cluster, at or datetime.now(UTC))  # docs/semantics.md §15.10-15.11
    sched = scheduler_for(cluster, controls, exclude=dying | _prespins_launching(cluster, snapshot, launching))
    state = SimState()
    if others:
        sched.simulate([node], [], max_new=0, state=state, pending=others)
    result = sched.simulate([node], pods, max_new=MAX_NEW_NODES, state=state, fill=True)
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


def _displaced(node: NodeInfo, pending: list[PodInfo]) -> tuple[list[PodInfo], list[PodInfo]]:
    """(the pods that lose the node, the other pending pods): an evicted pod is replaced by a pending successor of
    the same controller when there is one, so the workload counts once."""
    successors: dict[str, list[PodInfo]] = {}
    for p in pending:
        if p.owner_uid:
            successors.setdefault(p.owner_uid, []).append(p)
    ours: list[PodInfo] = []
    taken: set[int] = set()
    for p in node.pods:
        if p.terminal or p.is_daemonset or p.is_mirror:
            continue
        waiting = successors.get(p.owner_uid) if p.terminating and p.owner_uid else None
        if waiting:
            successor = waiting.pop()
            taken.add(id(successor))
            ours.append(successor)
        else:
            ours.append(p)
    return ours, [p for p in pending if id(p) not in taken]


def _own_claims(node: dict[str, Any], snapshot: Any) -> set[str]:
    """The interrupted node's NodeClaims: the one its owner reference names, or whose status names the node or its
    providerID. Its instance is the one going away, so such a claim, even shown as still launching, is no room."""
    meta, spec = node.get("metadata") or {}, node.get("spec") or {}
    names = {o.get("name", "") for o in meta.get("ownerReferences") or () if o.get("kind") == "NodeClaim"}
    provider = spec.get("providerID")
    for raw in getattr(snapshot, "node_claims", ()):
        claim = as_dict(raw)
        status = claim.get("status") or {}
        if status.get("nodeName") == meta.get("name") or (provider and status.get("providerID") == provider):
            names.add((claim.get("metadata") or {}).get("name", ""))
    return names - {""}


PRESPIN_KEY_PREFIX = "prespin-"  # a pre-spin's launch key (contracts/interruption.py prespin_workflow_id)


def _prespins_launching(cluster: Cluster, snapshot: Any, launching: set[str]) -> set[str]:
    """The launching nodes of pre-spin NodeClaims (launched for another interrupted node's pods)."""
    claims = set()
    for raw in getattr(snapshot, "node_claims", ()):
        meta = as_dict(raw).get("metadata") or {}
        if str((meta.get("annotations") or {}).get(L.DISRUPTION_ANNOTATION, "")).startswith(PRESPIN_KEY_PREFIX):
            claims.add(meta.get("name", ""))
    nodeless = {f"<launching:{name}>" for name in claims}  # how planning/provisioning/provisioner.py names one
    return {n.name for n in cluster.nodes if n.name in launching
            and (n.name in nodeless or (n.claim is not None and n.claim.name in claims))}


def _without_reclaimed(catalog: InstanceTypeCatalog | None, node: dict[str, Any]) -> InstanceTypeCatalog:
    """The catalog with the interrupted node's type unavailable on spot (all zones), as the old same-size pre-spin
    never chose the reclaimed type either."""
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
