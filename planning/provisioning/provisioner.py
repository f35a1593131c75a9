"""Provisioning: which NodeClaims to launch for pending pods (Karpenter's provisioner, as a pure decision).

The pods go through the same scheduling simulation as disruption (planning/scheduling/simulation.py): existing nodes
first, then NodeClaims still launching (each counts as a node of its requested instance type: pods expected to land on
it are nominated, not provisioned again), then new nodes from the NodePools by weight, within their requirements,
taints and `spec.limits`. Each new node becomes one NodeClaim to launch with its compatible instance types cheapest
first and spot when the pool allows it (planning/pricing/replacements.py). A pod no pool can serve comes back with, per
pool, the typed reason that excludes it, so the Event on the pod can name the pool and the requirement.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from api import labels as L
from api.capacity_buffer import buffer_key
from api.catalog import InstanceTypeCatalog
from api.quantity import format_cpu, format_memory, parse_cpu, parse_memory
from planning.cluster import Cluster, NodeInfo, Parsed, PodInfo, PoolInfo, as_dict, type_labels
from planning.disruption.candidates import currently_reschedulable
from planning.disruption.commands import Replacement
from planning.lifecycle.liveness import still_launching
from planning.policies.cost_limits import cost_limit_reached, launch_price
from planning.policies.deprecated_pools import pool_deprecated
from planning.policies.launch_controls import LaunchControls, PolicyScheduler, scheduler_for
from planning.policies.zone_balance import ZoneBalance
from planning.pricing.replacements import launch_replacement
from planning.scheduling.sim_state import SimState
from planning.scheduling.simulation import Scheduler
from planning.scheduling.type_options import TYPE_KEYS
from planning.selectors import match_requirement, tolerates_all

MAX_NEW_NODES = 10_000
# Taints a node carries while it starts; a launching node will lose them, so nomination ignores them.
STARTUP_TAINT_KEYS = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable",
                                "node.cloudprovider.kubernetes.io/uninitialized", "karpenter.sh/unregistered"})


class Exclusion(StrEnum):
    """Why one NodePool cannot serve a pod. Decisions and tests branch on this; people read the detail."""

    TAINT = "Taint"  # the pool's taints are not tolerated
    REQUIREMENT = "Requirement"  # a nodeSelector / required node affinity term no node of the pool satisfies
    RESOURCES = "Resources"  # no instance type of the pool is big enough
    LIMITS = "Limits"  # every type that fits would take the pool over spec.limits
    NODE_CLASS = "NodeClassNotReady"  # the pool's EC2NodeClass is missing or not Ready
    SCHEDULING = "Scheduling"  # anti-affinity / topology spread left no place
    NO_NODEPOOL = "NoNodePool"  # the cluster has no NodePool at all
    DEPRECATED = "Deprecated"  # a DisruptionPolicy deprecates the pool: no new launches (docs/semantics.md §15.11)
    COST_LIMIT = "CostLimit"  # a new node would take a DisruptionPolicy's costPerHour over its limit (§15.10)
    SPOT_FALLBACK_CAP = "SpotFallbackCap"  # spot has no capacity and maxOnDemandFraction forbids on-demand (§15.5)


@dataclass(frozen=True, slots=True)
class PoolExclusion:
    node_pool: str
    reason: Exclusion
    detail: str

    def text(self) -> str:
        return f"nodepool {self.node_pool}: {self.detail}" if self.node_pool else self.detail


@dataclass(slots=True)
class Unservable:
    """A pending pod no NodePool can serve, with each pool's reason (pools by weight)."""

    pod: str
    uid: str
    exclusions: list[PoolExclusion]

    def message(self) -> str:
        return "; ".join(e.text() for e in self.exclusions)


@dataclass(slots=True)
class Launch:
    """One NodeClaim to launch: the Replacement shape the launch activity takes, and the pods it is for."""

    replacement: Replacement
    pods: list[str]

    @property
    def node_pool(self) -> str:
        return self.replacement.node_pool or ""

    def to_public(self) -> dict[str, Any]:
        """The `provisioning` entry of `nodeflow plan -o json` (docs/contracts.md §3.1)."""
        r = self.replacement
        return {"nodePool": r.node_pool, "instanceTypes": list(r.instance_types), "capacityType": r.capacity_type,
                "pods": list(self.pods)}


@dataclass(slots=True)
class Headroom:
    """Where one CapacityBuffer's virtual pods went in a provisioning simulation (Karpenter's buffers.go counts)."""

    existing: dict[str, int] = field(default_factory=dict)  # node (or launching NodeClaim) -> chunks it holds
    new: int = 0  # chunks a NodeClaim this decision launches holds
    failed: int = 0  # chunks no NodePool can serve

    @property
    def chunks(self) -> int:
        return sum(self.existing.values()) + self.new + self.failed

    def to_public(self) -> dict[str, Any]:
        return {"existing": dict(sorted(self.existing.items())), "new": self.new, "failed": self.failed}


@dataclass(slots=True)
class ProvisioningDecision:
    launches: list[Launch] = field(default_factory=list)
    unservable: list[Unservable] = field(default_factory=list)
    nominated: dict[str, str] = field(default_factory=dict)  # pod -> NodeClaim still launching it will land on
    scheduled: dict[str, str] = field(default_factory=dict)  # pod -> existing node with room for it
    pools_at_limit: dict[str, str] = field(default_factory=dict)  # pool -> which limit stops a launch
    pools_at_cost_limit: dict[str, str] = field(default_factory=dict)  # pool -> the cost limit that stops a launch
    cost_limits: list[dict[str, Any]] = field(default_factory=list)  # `costLimits` of `nodeflow plan` (§15.10)
    no_compatible_types: list[str] = field(default_factory=list)  # pools whose requirements leave no type offered
    # CapacityBuffers' virtual pods (docs/semantics.md §20), kept out of the fields above (no Event, no nomination
    # names them): buffer `namespace/name` -> where its chunks went
    headroom: dict[str, Headroom] = field(default_factory=dict)

    @property
    def price_per_hour(self) -> float:
        return round(sum(launch.replacement.price for launch in self.launches), 6)


def provisionable(pod: PodInfo) -> bool:
    """A pending pod a new node can help: unbound, active, not a DaemonSet or mirror pod (their controllers
    place them on every node)."""
    return not pod.node_name and pod.active and not pod.is_daemonset and not pod.is_mirror


def decide(snapshot: Any, catalog: InstanceTypeCatalog | None = None, pods: Iterable[str] | None = None,
           parsed: Parsed | None = None, at: datetime | None = None) -> ProvisioningDecision:
    """NodeClaims to launch for the pending pods named in `pods` (`namespace/name` or uid; None: every pending
    pod). Other pending pods compete for room on existing and launching nodes first but launch nothing, so two
    batches in flight do not count the same free capacity twice. `parsed`: the snapshot's pods and claims already
    parsed (the worker's watch cache; as planning.planner.plan.plan takes them). CapacityBuffers' virtual pods
    (semantics §20) outside the batch do not compete: real pods take their room. `at`: the time a launching claim's
    liveness TTLs are measured at (None: now, for the activity). Pure otherwise: the snapshot stays as is."""
    cluster = Cluster.from_snapshot(snapshot, catalog) if parsed is None else \
        Cluster.from_parts(snapshot, parsed.pods, catalog, parsed.claims)
    launching = _add_launching(cluster, snapshot, at)
    controls = LaunchControls.build(snapshot, cluster, at or datetime.now(UTC))
    balance = ZoneBalance.build(snapshot, cluster, at or datetime.now(UTC))  # zoneBalance (docs/semantics.md §15.6)
    wanted = None if pods is None else set(pods)
    pending = [p for p in cluster.pending if provisionable(p)]
    batch = [p for p in pending if wanted is None or p.key in wanted or p.uid in wanted]
    moving = displaced_pods(cluster, wanted, at or datetime.now(UTC))
    batch += moving
    in_batch = {id(p) for p in batch}
    # a buffer's chunks outside the batch yield their room to it (the lowest priority; semantics §20.3)
    others = [p for p in pending if id(p) not in in_batch and not p.virtual]
    sched = scheduler_for(cluster, controls)
    state = SimState()
    if others:
        sched.simulate([], [], max_new=0, state=state, pending=others)
    result = sched.simulate([], batch, max_new=MAX_NEW_NODES, state=state, fill=True)
    decision = ProvisioningDecision(no_compatible_types=no_compatible_types(sched) if batch else [])
    for pod, target in result.placements:
        if target in launching:
            decision.nominated[pod.key] = target
        elif target in cluster.by_name:
            decision.scheduled[pod.key] = target
    for nn in result.new_nodes:
        priced = launch_replacement(nn, sched.pool_options(nn.pool))
        if priced is None:
            continue
        priced = balance.place(nn, priced, sched.pool_options(nn.pool))
        over = controls.cost.admit(nn.pool.name, priced.price)
        if over is None:
            decision.launches.append(Launch(priced.replacement, [p.key for p in nn.pods]))
            continue
        # the simulation's node grew past the limit as pods joined it: its pods wait (docs/semantics.md §15.10)
        held = PoolExclusion(nn.pool.name, Exclusion.COST_LIMIT, cost_limit_reached(over, priced.price))
        decision.unservable += [Unservable(p.key, p.uid, [held]) for p in nn.pods]
    moved = {id(p) for p in moving}
    for pod, _why in result.failures:
        if id(pod) not in moved:  # a displaced pod is bound still: no FailedScheduling Event on it
            decision.unservable.append(Unservable(pod.key, pod.uid, diagnose(sched, pod, state)))
    decision.cost_limits = controls.cost.public()
    return pools_held(split_headroom(decision, {p.key: buffer_key(p.annotations) for p in pending if p.virtual}))


def pools_held(decision: ProvisioningDecision) -> ProvisioningDecision:
    """The pools whose limits or cost limits keep a (real) pod pending: their NodePool Events count those pods."""
    for u in decision.unservable:
        for e in u.exclusions:
            if e.reason is Exclusion.LIMITS:
                decision.pools_at_limit.setdefault(e.node_pool, e.detail)
            elif e.reason is Exclusion.COST_LIMIT:
                decision.pools_at_cost_limit.setdefault(e.node_pool, e.detail)
    return decision


def split_headroom(decision: ProvisioningDecision, virtual: Mapping[str, str]) -> ProvisioningDecision:
    """Move the virtual pods (pod key -> buffer key) out of the decision's pod fields into `headroom`: the
    capacity they keep or launch stays, but nothing is nominated for them and no Event names them (Karpenter's
    filterVirtualPodErrors / filterVirtualPodMapping; its scheduler nominates real pods only)."""
    if not virtual:
        return decision
    for key in virtual.values():
        decision.headroom.setdefault(key, Headroom())
    for placed in (decision.nominated, decision.scheduled):
        for pod in [p for p in placed if p in virtual]:
            room = decision.headroom[virtual[pod]]
            room.existing[placed[pod]] = room.existing.get(placed[pod], 0) + 1
            del placed[pod]
    for launch in decision.launches:
        for pod in launch.pods:
            if pod in virtual:
                decision.headroom[virtual[pod]].new += 1
        launch.pods = [p for p in launch.pods if p not in virtual]
    for u in decision.unservable:
        if u.pod in virtual:
            decision.headroom[virtual[u.pod]].failed += 1
    decision.unservable = [u for u in decision.unservable if u.pod not in virtual]
    return decision


def displaced_pods(cluster: Cluster, wanted: set[str] | None, at: datetime) -> list[PodInfo]:
    """The reschedulable pods of nodes being deleted or terminated (a manual delete, expiry, an interruption, a
    drain blocked by a PDB: NodeInfo.going), named in `wanted` (None: all), as Karpenter's provisioner adds
    `deletingNodePods` to its pending pods: their new capacity comes up while the node drains, not after the
    grace-period deadline evicted them. Pods that
    cannot move (an active do-not-disrupt, a PDB that never allows an eviction) are left out: no capacity is
    launched for a pod that stays."""
    found = [p for n in cluster.nodes if n.going for p in n.pods
             if p.reschedulable and not p.is_daemonset and not p.is_mirror
             and (wanted is None or p.key in wanted or p.uid in wanted)]
    return currently_reschedulable(cluster, found, at) if found else found


def no_compatible_types(sched: Scheduler) -> list[str]:
    """NodePools whose requirements filter out every available instance type (Karpenter's scheduler.go emits
    NoCompatibleInstanceTypes for them); a pool whose EC2NodeClass blocks launches says so elsewhere."""
    return [pool.name for pool in sched.pools_by_weight
            if sched.launch_blocker(pool) is None and sched.cluster.catalog_for(pool.name).instance_types
            and not sched.pool_options(pool)]


# ---- NodeClaims still launching count as nodes --------------------------------------------------------------

def _add_launching(cluster: Cluster, snapshot: Any, at: datetime | None = None) -> set[str]:
    """Make every NodeClaim still launching a schedulable node of its requested type (Karpenter's in-flight
    NodeClaims), so pods expected to land on it are not provisioned again; returns their node names."""
    at = at or datetime.now(UTC)
    names: set[str] = set()
    with_node: set[str] = set()
    for node in cluster.nodes:
        if node.claim is None:
            continue
        with_node.add(node.claim.name)
        if not node.claim.deleting and not node.deleting and not (node.ready and node.initialized):
            node.ready = True
            node.labels[L.INITIALIZED_LABEL] = "true"
            node.taints = [t for t in node.taints if t.get("key") not in STARTUP_TAINT_KEYS]
            names.add(node.name)
    for raw in getattr(snapshot, "node_claims", ()):
        claim = as_dict(raw)
        meta = claim.get("metadata") or {}
        if meta.get("name") in with_node or not still_launching(claim, at):
            continue
        node = _claim_node(len(cluster.nodes), claim, cluster)
        if node is not None:
            cluster.nodes.append(node)
            cluster.by_name[node.name] = node
            names.add(node.name)
    return names


def _requested_types(claim: Mapping[str, Any]) -> list[str]:
    labels = (claim.get("metadata") or {}).get("labels") or {}
    if labels.get(L.INSTANCE_TYPE_LABEL):
        return [labels[L.INSTANCE_TYPE_LABEL]]
    for req in (claim.get("spec") or {}).get("requirements") or ():
        if req.get("key") == L.INSTANCE_TYPE_LABEL and req.get("operator") == "In":
            return list(req.get("values") or ())
    return []


def _claim_node(index: int, claim: Mapping[str, Any], cluster: Cluster) -> NodeInfo | None:
    """A Node-less NodeClaim as a node: its allocatable when launched, else its smallest requested type's
    allocatable as Karpenter computes it for the claim's EC2NodeClass."""
    catalog = cluster.catalog
    meta, status = claim.get("metadata") or {}, claim.get("status") or {}
    types = [it for it in (catalog.get(n) for n in _requested_types(claim)) if it is not None]
    if not types:
        return None
    itype = min(types, key=lambda it: (it.cpu_cores, it.memory_bytes, it.name))
    alloc = status.get("allocatable") or {}
    labels = dict(meta.get("labels") or {})
    for req in (claim.get("spec") or {}).get("requirements") or ():
        values = req.get("values") or ()
        if req.get("operator") == "In" and len(values) == 1:
            labels.setdefault(req.get("key", ""), values[0])
    labels.update({**type_labels(itype), L.INSTANCE_TYPE_LABEL: itype.name, L.INITIALIZED_LABEL: "true",
                   L.HOSTNAME_LABEL: f"<launching:{meta.get('name', '')}>"})
    name = f"<launching:{meta.get('name', '')}>"
    node_class = ((claim.get("spec") or {}).get("nodeClassRef") or {}).get("name", "")
    # what a real node of the type reports (kube-scheduler's view, as Scheduler._options takes it), else computed
    seen = next(((n.cpu, n.mem, n.max_pods, n.eph) for n in cluster.nodes
                 if n.itype is not None and n.itype.name == itype.name and n.cpu > 0 and not n.name.startswith("<")),
                None)
    cpu, mem, pods, eph = seen or cluster.new_node_allocatable(itype, node_class)
    node = NodeInfo(
        index=index, name=name, uid=meta.get("uid", ""), labels=labels, annotations={},
        taints=list((claim.get("spec") or {}).get("taints") or ()), unschedulable=False, ready=True, deleting=False,
        created=None, cpu=parse_cpu(str(alloc["cpu"])) if alloc.get("cpu") else cpu,
        mem=parse_memory(str(alloc["memory"])) if alloc.get("memory") else mem,
        max_pods=int(alloc.get("pods") or pods),
        eph=parse_memory(str(alloc["ephemeral-storage"])) if alloc.get("ephemeral-storage") else eph,
        pool=labels.get(L.NODEPOOL_LABEL, ""), itype=itype)
    return node


# ---- why a pod fits no pool ---------------------------------------------------------------------------------

def diagnose(sched: Scheduler, pod: PodInfo, state: SimState) -> list[PoolExclusion]:
    """For each NodePool (by weight, deprecated ones too), the first thing that stops it serving `pod`."""
    pools = getattr(sched, "all_pools_by_weight", sched.pools_by_weight)
    if not pools:
        static = sorted(sched.cluster.pools)  # only static pools: they keep their replicas, never launch for pods
        detail = f"only static NodePools exist ({', '.join(static)}), which launch no node for pods" if static \
            else "no NodePool exists"
        return [PoolExclusion("", Exclusion.NO_NODEPOOL, detail)]
    return [_exclusion(sched, pod, pool, state) for pool in pools]


def _exclusion(sched: Scheduler, pod: PodInfo, pool: PoolInfo, state: SimState) -> PoolExclusion:
    def out(reason: Exclusion, detail: str) -> PoolExclusion:
        return PoolExclusion(pool.name, reason, detail)

    for taint in pool.taints:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates_all(pod.tolerations, [taint]):
            value = f"={taint['value']}" if taint.get("value") else ""
            return out(Exclusion.TAINT, f"taint {taint.get('key')}{value}:{taint.get('effect')} is not tolerated")
    blocker = sched.launch_blocker(pool)
    if blocker is not None:
        return out(Exclusion.NODE_CLASS, f"cannot launch: {blocker}")
    options = sched.pool_options(pool)
    allowed = sched.pod_allowed(pod, pool)
    if allowed is not None and not allowed:
        return out(Exclusion.REQUIREMENT, _failing_requirement(sched, pod, pool))
    controls = sched.controls if isinstance(sched, PolicyScheduler) else None
    if controls is not None and pool.name in controls.deprecated:  # the pool would serve it, but may not launch
        return out(Exclusion.DEPRECATED, pool_deprecated(controls.deprecated[pool.name]))
    dcpu, dmem, dpods = sched.cluster.daemon_overhead(pool.name)
    fitting = [o for o in options if o.cpu + 1e-9 >= pod.cpu + dcpu and o.mem >= pod.mem + dmem
               and o.pods >= dpods + 1 and (allowed is None or any(
                   (o.itype.name, off.zone, off.capacity_type) in allowed for off in o.offerings))]
    if not fitting:
        return out(Exclusion.RESOURCES, f"no instance type has room for cpu {format_cpu(pod.cpu)}, memory "
                                        f"{format_memory(pod.mem)} (plus daemonset overhead)")
    fitting_names = {o.itype.name for o in fitting}
    within = Scheduler._limit_filter(sched, pool, options, state)  # spec.limits alone, without the cost limit
    if not any(o.itype.name in fitting_names for o in within):
        return out(Exclusion.LIMITS, f"limits {_limits_text(pool)} reached")
    if controls is not None and not any(o.itype.name in fitting_names for o in sched.cost_filter(pool, within, state)):
        cheapest = min(launch_price([o]) for o in fitting)
        group = controls.cost.blocking(pool.name, cheapest) or controls.cost.by_pool[pool.name][0]
        return out(Exclusion.COST_LIMIT, cost_limit_reached(group, cheapest))
    return out(Exclusion.SCHEDULING, "its anti-affinity or topology spread constraints leave no place")


def _limits_text(pool: PoolInfo) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(pool.limits.items()))


def _failing_requirement(sched: Scheduler, pod: PodInfo, pool: PoolInfo) -> str:
    """The first nodeSelector entry or affinity expression no node of the pool can satisfy."""
    label_sets = _pool_label_sets(sched, pool)
    pool_keys = {r.get("key") for r in pool.requirements}
    for key, value in pod.node_selector.items():
        if not any(ls.get(key) == value or (key not in ls and key in pool_keys and key not in TYPE_KEYS)
                   for ls in label_sets):
            return f"nodeSelector {key}={value} is not satisfied by any instance type, zone or label of the pool"
    for term in pod.affinity_terms:
        for e in term.get("matchExpressions") or ():
            key, op, values = e.get("key", ""), e.get("operator", ""), e.get("values") or ()
            if not any((key not in ls and key in pool_keys and key not in TYPE_KEYS)
                       or match_requirement(key, op, values, ls)
                       for ls in label_sets):
                return (f"node affinity {key} {op} {list(values)} is not satisfied by any instance type, zone or "
                        f"label of the pool")
    return "its nodeSelector and node affinity together match no instance type, zone or label of the pool"


def _pool_label_sets(sched: Scheduler, pool: PoolInfo) -> list[dict[str, str]]:
    fixed = sched.pool_labels(pool)
    out = []
    for opt in sched.pool_options(pool):
        tl = fixed | type_labels(opt.itype)
        out += [tl | {L.ZONE_LABEL: o.zone, L.CAPACITY_TYPE_LABEL: o.capacity_type} for o in opt.offerings]
    return out


def describe(decision: ProvisioningDecision) -> Sequence[str]:
    """One line per NodeClaim to launch (for logs and the workflow's summary)."""
    return [f"{launch.node_pool}: {launch.replacement.capacity_type} {launch.replacement.instance_types[:3]} for "
            f"{len(launch.pods)} pod(s)" for launch in decision.launches]
