"""Scheduling simulation: can these pods run on the other nodes' free capacity, plus new nodes from the catalog?

Pods are placed largest first (cpu, then memory), first-fit over the existing nodes, then onto new nodes
from a NodePool. Existing nodes are grouped into blocks with the largest free capacity of each block
precomputed, so a pod skips whole blocks that cannot fit it: a pass over thousands of nodes stays cheap.
Constraints: cpu, memory, pods, ephemeral-storage (init containers, sidecars and overhead: pod_requests.py),
nodeSelector, required node affinity, taints and tolerations, required pod anti-affinity on hostname,
DoNotSchedule topology spread on zone and hostname (with minDomains), NodePool requirements, taints and limits
for new nodes; and, through pod_context.py, pod affinity and anti-affinity on any key, spread on other keys,
host ports and volume topology, with Karpenter's preference relaxation (preferences.py).
docs/semantics.md §3.5.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from api import labels as L
from api.catalog import Offering
from api.nodeclass_launch import subnet_zones
from api.quantity import format_cpu, format_memory, parse_cpu, parse_memory
from planning.cluster import Cluster, NodeInfo, PodInfo, PoolInfo, type_labels
from planning.scheduling.domain_checks import DomainChecks
from planning.scheduling.fill_policy import dearer_fill
from planning.scheduling.min_values import relaxing
from planning.scheduling.nodeclass_readiness import launch_blocker
from planning.scheduling.pod_context import MoreChecks, PodContext
from planning.scheduling.pod_ladder import pod_ladder
from planning.scheduling.sim_state import NewNode, SimState
from planning.scheduling.type_options import TYPE_KEYS, TypeOption, option_label_values
from planning.scheduling.volume_topology import limit_detail, type_volume_limits, within_limits
from planning.selectors import (
    match_label_selector,
    match_node_selector_terms,
    match_requirement,
    selector_key,
    tolerates_all,
)

BLOCK = 16
SUPER = 16  # blocks per super-block
CAPACITY_ORDER = ("reserved", "spot", "on-demand")


def min_values_met(requirements: Sequence[Mapping[str, Any]], options: Sequence[TypeOption]) -> bool:
    """Every requirement with `minValues` has that many distinct values among `options` (docs/semantics.md §17.2)."""
    for req in requirements:
        need = req.get("minValues")
        if need and len(set().union(*(option_label_values(o, req.get("key", "")) for o in options))) < int(need):
            return False
    return True


_PLACED, _TRY_NEXT, _DONE = "placed", "try-next", "done"  # what one relaxation rung's placement came to


class Unschedulable(Enum):
    """Why a simulation did not place every pod. Decisions branch on this; people read the messages."""

    NO_FIT = "NoFit"  # some pod fits on no existing node and on no node a NodePool could add
    TOO_MANY_NEW_NODES = "TooManyNewNodes"  # the pods fit, but only on more new nodes than allowed


@dataclass
class SimResult:
    """Where every pod went, the new nodes needed, and the pods that fit nowhere (with why)."""

    placements: list[tuple[PodInfo, str]] = field(default_factory=list)
    new_nodes: list[NewNode] = field(default_factory=list)
    failures: list[tuple[PodInfo, str]] = field(default_factory=list)
    too_many_new: bool = False
    # pending pods that fit on a removed node, or on a node the moved pods filled, and now fit nowhere: the
    # command would take the capacity kube-scheduler is about to bind them to (docs/semantics.md §3.4)
    pending_lost: list[tuple[PodInfo, str]] = field(default_factory=list)
    # pods a volume attachment limit kept off an existing node, now on a new node or nowhere: key -> why (§3.5)
    volume_limited: dict[str, str] = field(default_factory=dict)
    _moved: list[str] = field(default_factory=list)  # moved_to's answer so far, in name order
    _seen: int = 0  # placements moved_to has read

    def moved_to(self) -> list[str]:
        """The nodes, in name order, that pods from removed nodes (pods with a node) were placed on so far. Read
        incrementally: a what-if asks once per pending pod that lost its room, and re-reading every placement each
        time made that quadratic in a scale-out's pending pods."""
        for pod, name in self.placements[self._seen:]:
            if pod.node_name and name not in self._moved:
                bisect.insort(self._moved, name)
        self._seen = len(self.placements)
        return self._moved

    @property
    def all_scheduled(self) -> bool:
        return not self.failures and not self.too_many_new

    @property
    def unschedulable(self) -> Unschedulable | None:
        """The typed outcome when not all pods were placed (a pod that fits nowhere outranks the node cap)."""
        if self.failures:
            return Unschedulable.NO_FIT
        return Unschedulable.TOO_MANY_NEW_NODES if self.too_many_new else None

    def volume_note(self) -> str:
        """"; <why>" of the first pod (by key) a volume attachment limit sent to a new node or left out, else ""."""
        if not self.volume_limited:
            return ""
        return "; " + self.volume_limited[min(self.volume_limited)]

    def failure_message(self) -> str:
        """Karpenter's message for NO_FIT: "Not all pods would schedule, <pod> => <why>, ..."."""
        return f"Not all pods would schedule, {self.failure_text()}"

    def failure_text(self, limit: int = 5) -> str:
        parts = [f"{p.key} => {why}" for p, why in self.failures[:limit]]
        more = len(self.failures) - limit
        return ", ".join(parts) + (f" and {more} more" if more > 0 else "")


def _max3(items: Sequence[tuple[float, int, int]]) -> tuple[float, int, int]:
    return (max(t[0] for t in items), max(t[1] for t in items), max(t[2] for t in items))


def _placed_count(state: SimState) -> int:
    return sum(len(pods) for pods in state.placed.values())


class Scheduler(DomainChecks):
    """Built once per pass over a Cluster; `simulate` answers one what-if at a time.

    `reserve`: pods of in-flight nodes that will need room elsewhere. They are placed once, and every simulation
    starts from that placement, so no command counts on room they will take (docs/semantics.md §2). `planned`
    (pod key -> node) says where their own command's plan put them: there they are placed first, and a pod planned
    onto its command's replacement ("") needs no room here. The rest go first-fit; those that fit on no existing
    node are left out: the provisioner launches capacity for them."""

    def __init__(self, cluster: Cluster, exclude: Iterable[str] = (), reserve: Sequence[PodInfo] = (),
                 planned: Mapping[str, str] | None = None) -> None:
        self.cluster = cluster
        excluded = set(exclude)
        self.dest: list[NodeInfo] = [
            n for n in cluster.nodes
            if n.ready and not n.marked_for_deletion and not n.unschedulable and not n.tainted_disrupted
            and n.name not in excluded and (n.claim is None or n.initialized)
        ]
        # Emptiest first: most pods fit in the first blocks, and filled blocks are skipped by their maxima.
        self.dest.sort(key=lambda n: (-((n.cpu - n.used_cpu) / (n.cpu or 1) + (n.mem - n.used_mem) / (n.mem or 1)),
                                      n.name))
        self.dest_pos = {n.name: i for i, n in enumerate(self.dest)}
        self.block_max: list[tuple[float, int, int]] = []
        for start in range(0, len(self.dest), BLOCK):
            chunk = self.dest[start:start + BLOCK]
            self.block_max.append((
                max(n.cpu - n.used_cpu for n in chunk),
                max(n.mem - n.used_mem for n in chunk),
                max(n.max_pods - n.used_pods for n in chunk),
            ))
        self.super_max = [_max3(self.block_max[i:i + SUPER]) for i in range(0, len(self.block_max), SUPER)]
        self._static: dict[tuple[str, int], bool] = {}
        self._compatible_cache: dict[str, bool] = {}
        self._pool_options: dict[str, list[TypeOption]] = {}
        self._pool_labels: dict[str, dict[str, str]] = {}
        self._sig_allowed: dict[tuple[str, str], set[tuple[str, str, str]] | None] = {}
        self._zone_domain_cache: dict[str, set[str]] = {}
        self._pool_usage_cache: dict[str, tuple[float, int, int]] = {}
        self._type_alloc = self._observed_allocatable()
        self.more = MoreChecks(cluster)
        self._ctx_cache: dict[tuple[str, int, int, int], PodContext] = {}
        self._rule_domain_cache: dict[tuple[str, str, bool, bool], set[str]] = {}
        self._ladders: dict[str, tuple[dict[str, Any], list[PodInfo]]] = {}
        self._originals: dict[str, PodInfo] = {}  # pod key -> the pod its rungs were made from
        # every pod a volume attachment limit sent to a new node or nowhere in this scheduler's simulations (the
        # pass's `nodeflow_scheduling_volume_limited_pods`)
        self.volume_limited_pods: set[str] = set()
        # Static NodePools launch only their replicas (planning/provisioning/static_capacity.py), never a node for pods.
        self.pools_by_weight = sorted((p for p in cluster.pools.values() if not p.static),
                                      key=lambda p: (-p.weight, p.name))
        # largest first, as a simulation orders pods: sorted once, placed again for every removal that needs it
        self._reserve = sorted(reserve, key=lambda p: (-p.cpu, -p.mem, p.key))
        self._reserved_from = frozenset(p.node_name for p in self._reserve)
        self._planned = dict(planned or {})
        self._baseline = self._reserved_state(()) if self._reserve else None
        self._reserved_on = frozenset(self._baseline.placed) if self._baseline is not None else frozenset()

    # ---- reservation for in-flight nodes' pods -------------------------------------------------------

    def _reserved_state(self, remove: Sequence[NodeInfo]) -> SimState:
        """The reserved pods on the destinations other than `remove`: where their command planned them when that
        node still takes them, else first-fit; no new node is opened."""
        state = SimState()
        # The in-flight nodes count as gone for topology spread: their pods count where they are reserved, not
        # twice (counted at their old zone too, the zone skew of every plan depended on which commands were in
        # flight, so a validation judged its command on other counts than its plan; docs/semantics.md §2).
        state.removed.update(self._reserved_from)
        state.removed.update(n.name for n in remove)
        self.simulate(remove, [], max_new=0, state=state, pending=self._pin_planned(state))
        return state

    def _pin_planned(self, state: SimState) -> list[PodInfo]:
        """Place the reserved pods whose command planned them on a node that still takes them (largest first, as
        a simulation orders them); returns the others, less those bound for their command's replacement.

        Placing them where their own plan put them keeps every plan consistent with the ones before it: a
        first-fit of all in-flight pods together, largest first, could fill the room an earlier command planned
        on and fail its validation (docs/semantics.md §2)."""
        rest: list[PodInfo] = []
        for pod in self._reserve:
            to = self._planned.get(pod.key)
            if to == "":
                continue
            node = self.cluster.by_name.get(to) if to and to not in state.removed and to in self.dest_pos else None
            if node is not None and self._fits_existing(pod, node, state):
                self._place_existing(pod, node, state)
            else:
                rest.append(pod)
        return rest

    def new_state(self, remove: Sequence[NodeInfo] = ()) -> SimState:
        """Where a simulation removing `remove` starts: the reservation, placed again without a removed node
        that holds reserved pods. Each simulation gets its own copy; the Scheduler (one pass) keeps the original."""
        if self._baseline is None:
            return SimState()
        if self._reserved_on and any(n.name in self._reserved_on for n in remove):
            return self._reserved_state(remove)
        return self._baseline.copy()

    def reservation_lost(self, remove: Sequence[NodeInfo]) -> int:
        """How many reserved pods (the pods of in-flight and deleting nodes) find no place once `remove` go, where
        they had one: Karpenter's SimulateScheduling fails a command that leaves a deleting node's pod unscheduled.
        0 when no removed node holds any."""
        if self._baseline is None or not any(n.name in self._reserved_on for n in remove):
            return 0
        return _placed_count(self._baseline) - _placed_count(self._reserved_state(remove))

    def reserved_usage(self, node: NodeInfo) -> tuple[float, int, int, int]:
        """(cpu, memory, pods, ephemeral-storage) the reservation takes on `node`."""
        used = self._baseline.used.get(node.index) if self._baseline is not None else None
        return (used[0], int(used[1]), int(used[2]), int(used[3])) if used is not None else (0.0, 0, 0, 0)

    # ---- existing nodes -------------------------------------------------------------------------

    def _observed_allocatable(self) -> dict[str, tuple[float, int, int, int]]:
        """Allocatable of each instance type as existing nodes report it (kubelet reservations included)."""
        seen: dict[str, tuple[float, int, int, int]] = {}
        for n in self.cluster.nodes:
            if n.itype is not None and n.cpu > 0 and n.itype.name not in seen:
                seen[n.itype.name] = (n.cpu, n.mem, n.max_pods, n.eph)
        return seen

    def _static_ok(self, pod: PodInfo, node: NodeInfo) -> bool:
        """nodeSelector, required node affinity and taints (cached per pod signature and node)."""
        if not pod.sig:
            return not any(t.get("effect") in ("NoSchedule", "NoExecute") for t in node.taints)
        key = (pod.sig, node.index)
        ok = self._static.get(key)
        if ok is None:
            ok = (all(node.labels.get(k) == v for k, v in pod.node_selector.items())
                  and match_node_selector_terms(pod.affinity_terms, node.labels)
                  and tolerates_all(pod.tolerations, node.taints) and MoreChecks.pns_ok(pod, node.taints))
            self._static[key] = ok
        return ok

    def _anti_ok(self, pod: PodInfo, others: Iterable[PodInfo]) -> bool:
        """Required anti-affinity on hostname, both ways: pod vs the pods already on the node."""
        for other in others:
            if not other.active or other.key == pod.key:  # by key: a generated snapshot's pods may have no uid
                continue
            for sel, namespaces in pod.anti_affinity:
                if other.namespace in namespaces and match_label_selector(sel, other.labels):
                    return False
            for sel, namespaces in other.anti_affinity:
                if pod.namespace in namespaces and match_label_selector(sel, pod.labels):
                    return False
        return True

    def _node_pods(self, node_name: str, state: SimState) -> list[PodInfo]:
        node = self.cluster.by_name.get(node_name)
        base = node.pods if node is not None else []
        return base + state.placed.get(node_name, [])

    def _spread_count(self, pod: PodInfo, selector: dict[str, Any], node_name: str, state: SimState) -> int:
        key = (pod.namespace, selector_key(selector))
        base = self.cluster.match_counts(pod.namespace, selector).get(node_name, 0)
        if node_name in state.removed:
            base = 0
        return base + state.spread_delta.get(key, {}).get(node_name, 0)

    def _zone_counts(self, pod: PodInfo, selector: dict[str, Any], state: SimState) -> dict[str, int]:
        """Matching pods per zone: the cluster's, minus removed nodes', plus this simulation's placements (on a new
        node, in the zone it is bound to)."""
        key = (pod.namespace, selector_key(selector))
        counts = dict(self.cluster.zone_counts(pod.namespace, selector))
        base = self.cluster.match_counts(pod.namespace, selector)
        for name in state.removed:
            c = base.get(name)
            if c:
                zone = self.cluster.by_name[name].zone
                counts[zone] = counts.get(zone, 0) - c
        for name, c in state.spread_delta.get(key, {}).items():
            node = self.cluster.by_name.get(name)
            zone = state.new_zones.get(name) if node is None else None if name in state.removed else node.zone
            if zone is not None:
                counts[zone] = counts.get(zone, 0) + c
        return counts

    def _zone_domains(self, pod: PodInfo) -> set[str]:
        """The zones a zone spread counts: those of nodes the pod's own (not its relaxation rung's) selection
        allows, as kube's nodeAffinityPolicy Honor reads the pod's required affinity only."""
        pod = self._base(pod)
        domains = self._zone_domain_cache.get(pod.sig)
        if domains is None:
            domains = {n.zone for n in self.dest if n.zone and self._static_ok(pod, n)}
            for pool in self.cluster.pools.values():
                if tolerates_all(pod.tolerations, pool.taints):
                    allowed = self._pod_allowed(pod, pool)
                    for opt in self._options(pool):
                        for o in opt.offerings:
                            if allowed is None or (opt.itype.name, o.zone, o.capacity_type) in allowed:
                                domains.add(o.zone)
            self._zone_domain_cache[pod.sig] = domains
        return domains

    @staticmethod
    def _zone_low(pod: PodInfo, counts: dict[str, int], domains: set[str]) -> int:
        """The global minimum of a zone spread: 0 while fewer zones than its minDomains exist (kube, Karpenter
        topologygroup.go), the zones existing nodes and NodePools offer counting as domains."""
        if pod.more is not None and len(domains) < pod.more.zone_min_domains:
            return 0
        return min(counts.get(z, 0) for z in domains)

    def _spread_ok(self, pod: PodInfo, node_name: str, zone: str, state: SimState) -> bool:
        for topology_key, max_skew, selector in pod.spread:
            if not match_label_selector(selector, pod.labels):
                continue
            if topology_key == L.HOSTNAME_LABEL:
                # a new node is always a possible domain with 0 pods, so the global minimum is 0
                if self._spread_count(pod, selector, node_name, state) + 1 > max_skew:
                    return False
            else:
                counts = self._zone_counts(pod, selector, state)
                domains = self._zone_domains(pod) | {zone}
                low = self._zone_low(pod, counts, domains)
                if counts.get(zone, 0) + 1 - low > max_skew:
                    return False
        return True

    def _fits_existing(self, pod: PodInfo, node: NodeInfo, state: SimState) -> bool:
        if pod.volume_blocked:
            return False
        used = state.used.get(node.index)
        ucpu, umem, upods, ueph = (used if used is not None else (0.0, 0, 0, 0))
        if (pod.cpu > node.cpu - node.used_cpu - ucpu + 1e-9 or pod.mem > node.mem - node.used_mem - umem
                or node.used_pods + upods + 1 > node.max_pods
                or (pod.eph and node.eph and pod.eph > node.eph - node.used_eph - ueph)):
            return False
        if not self._static_ok(pod, node):
            return False
        if (pod.anti_affinity or self.cluster.has_anti_affinity or state.host_anti_placed) and not self._anti_ok(
                pod, self._node_pods(node.name, state)):
            return False
        if pod.spread and not self._spread_ok(pod, node.name, node.zone, state):
            return False
        if pod.attach and node.volume_limits and not within_limits(
                (*node.attached, *state.attached.get(node.name, ()), *pod.attach), node.volume_limits):
            if pod.key not in state.volume_full:  # kept for `nodeflow plan` should the pod go to a new node
                state.volume_full[pod.key] = limit_detail(pod.key, node.name, (
                    *node.attached, *state.attached.get(node.name, ())), pod.attach, node.volume_limits)
            return False  # kube NodeVolumeLimits: the node's attachment limit is reached
        if pod.more is None and not state.anti_placed and not self.more.holders:
            return True  # the common pod: nothing beyond the fast path (inlined: this runs per node tried)
        return self._more_ok(pod, node.name, node.labels, state)

    def _place_existing(self, pod: PodInfo, node: NodeInfo, state: SimState, counted: PodInfo | None = None) -> None:
        """Place `pod`; `counted` (the relaxation variant it fit as) decides which spread counts it joins."""
        state.version += 1
        if pod.more is not None and pod.more.anti_terms:
            state.anti_placed = True
        if pod.anti_affinity:
            state.host_anti_placed = True
        used = state.used.setdefault(node.index, [0.0, 0, 0, 0])
        used[0] += pod.cpu
        used[1] += pod.mem
        used[2] += 1
        used[3] += pod.eph
        if pod.attach:
            state.attached.setdefault(node.name, set()).update(pod.attach)
        state.placed.setdefault(node.name, []).append(pod)
        self._count_spread(counted or pod, node.name, state)
        b = self.dest_pos[node.name] // BLOCK
        bcpu, bmem, bpods = state.block_max.get(b) or self.block_max[b]
        u = state.used[node.index]
        before = (node.cpu - node.used_cpu - u[0] + pod.cpu, node.mem - node.used_mem - u[1] + pod.mem,
                  node.max_pods - node.used_pods - u[2] + 1)
        if before[0] >= bcpu - 1e-9 or before[1] >= bmem or before[2] >= bpods:
            state.block_max[b] = self._block_free(b, state)
            sb = b // SUPER
            state.super_max[sb] = _max3([state.block_max.get(i) or self.block_max[i]
                                         for i in range(sb * SUPER, min((sb + 1) * SUPER, len(self.block_max)))])

    def _block_free(self, b: int, state: SimState) -> tuple[float, int, int]:
        """Largest free cpu, memory and pod slots in block `b` after this simulation's placements."""
        cpu, mem, pods = 0.0, 0, 0
        zero = (0.0, 0, 0, 0)
        for n in self.dest[b * BLOCK:(b + 1) * BLOCK]:
            u = state.used.get(n.index, zero)
            cpu = max(cpu, n.cpu - n.used_cpu - u[0])
            mem = max(mem, n.mem - n.used_mem - u[1])
            pods = max(pods, n.max_pods - n.used_pods - u[2])
        return cpu, int(mem), int(pods)

    def _count_spread(self, pod: PodInfo, node_name: str, state: SimState) -> None:
        for _, _, selector in pod.spread:
            if match_label_selector(selector, pod.labels):
                delta = state.spread_delta.setdefault((pod.namespace, selector_key(selector)), {})
                delta[node_name] = delta.get(node_name, 0) + 1

    # ---- new nodes ------------------------------------------------------------------------------

    def _options(self, pool: PoolInfo) -> list[TypeOption]:
        """Catalog types and offerings the pool's requirements allow, cheapest first."""
        opts = self._pool_options.get(pool.name)
        if opts is None:
            opts = []
            fixed = self.pool_labels(pool)
            zones = self._class_zones(pool)
            for it in self.cluster.catalog_for(pool.name).instance_types:  # its NodeOverlay prices
                tl = fixed | type_labels(it)
                allowed = []
                for o in it.offerings:
                    if not o.available or (zones is not None and o.zone not in zones):
                        continue
                    labels = tl | {L.ZONE_LABEL: o.zone, L.CAPACITY_TYPE_LABEL: o.capacity_type}
                    if all(self._pool_req_ok(r, labels) for r in pool.requirements):
                        allowed.append(o)
                if allowed:
                    # what kube-scheduler sees on a node of the type, else what Karpenter computes (semantics §17.3)
                    cpu, mem, pods, eph = self._type_alloc.get(it.name) or self.cluster.new_node_allocatable(
                        it, pool.node_class)
                    opts.append(TypeOption(it, tuple(allowed), cpu, mem, pods, eph))
            opts.sort(key=lambda t: (t.cheapest().price, t.itype.name))  # type: ignore[union-attr]
            self._pool_options[pool.name] = opts
        return opts

    def _class_zones(self, pool: PoolInfo) -> set[str] | None:
        """The zones of the pool's EC2NodeClass's resolved subnets, None when unknown (no class, none resolved):
        Karpenter offers a type only in zones where the class has a subnet (computeRequirements, semantics §17.1)."""
        node_class = self.cluster.node_classes.get(pool.node_class)
        zones = subnet_zones(node_class) if node_class is not None else set()
        return zones or None

    def launch_blocker(self, pool: PoolInfo) -> str | None:
        """Why `pool` cannot launch a node now (its EC2NodeClass missing or not Ready), or None."""
        return launch_blocker(self.cluster.node_classes, pool.node_class)

    def pool_options(self, pool: PoolInfo) -> list[TypeOption]:
        """Instance types (with allowed offerings) a new node of `pool` may be, cheapest first."""
        return self._options(pool)

    def pod_allowed(self, pod: PodInfo, pool: PoolInfo) -> set[tuple[str, str, str]] | None:
        """(type, zone, capacity type) a pod's selectors allow on a new node of `pool`; None means all."""
        return self._pod_allowed(pod, pool)

    @staticmethod
    def _pool_req_ok(req: dict[str, Any], labels: dict[str, str]) -> bool:
        key = req.get("key", "")
        if key not in labels and key not in TYPE_KEYS and req.get("operator") == "In":
            return True  # a custom label the pool itself sets on its nodes
        return match_requirement(key, req.get("operator", ""), req.get("values") or (), labels)

    def pool_labels(self, pool: PoolInfo) -> dict[str, str]:
        """Labels every node of the pool gets: template labels, single-valued In requirements, the pool name."""
        labels = self._pool_labels.get(pool.name)
        if labels is None:
            labels = dict(pool.template_labels)
            for r in pool.requirements:
                values = r.get("values") or ()
                if r.get("operator") == "In" and len(values) == 1 and r.get("key") not in TYPE_KEYS:
                    labels.setdefault(r["key"], values[0])
            labels[L.NODEPOOL_LABEL] = pool.name
            self._pool_labels[pool.name] = labels
        return labels

    def _pod_allowed(self, pod: PodInfo, pool: PoolInfo) -> set[tuple[str, str, str]] | None:
        """(type, zone, capacity type) triples a pod's selector/affinity allow in a pool; None = all."""
        if not pod.node_selector and not pod.affinity_terms:
            return None
        key = (pod.sig, pool.name)
        if key in self._sig_allowed:
            return self._sig_allowed[key]
        fixed = self.pool_labels(pool)
        pool_keys = {r.get("key") for r in pool.requirements}
        allowed: set[tuple[str, str, str]] = set()
        for opt in self._options(pool):
            tl = fixed | type_labels(opt.itype)
            for o in opt.offerings:
                labels = tl | {L.ZONE_LABEL: o.zone, L.CAPACITY_TYPE_LABEL: o.capacity_type,
                               L.HOSTNAME_LABEL: f"<new:{pool.name}>"}
                if self._pod_matches_new(pod, labels, pool_keys):
                    allowed.add((opt.itype.name, o.zone, o.capacity_type))
        self._sig_allowed[key] = allowed
        return allowed

    @staticmethod
    def _pod_matches_new(pod: PodInfo, labels: dict[str, str], pool_keys: set[Any]) -> bool:
        for k, v in pod.node_selector.items():
            if labels.get(k) != v and not (k not in labels and k in pool_keys and k not in TYPE_KEYS):
                return False
        if not pod.affinity_terms:
            return True
        for term in pod.affinity_terms:
            ok = True
            for e in term.get("matchExpressions") or ():
                k = e.get("key", "")
                if k == L.HOSTNAME_LABEL and e.get("operator") == "In":
                    ok = False
                elif k not in labels and k in pool_keys and k not in TYPE_KEYS:
                    continue
                elif not match_requirement(k, e.get("operator", ""), e.get("values") or (), labels):
                    ok = False
                if not ok:
                    break
            if ok:
                return True
        return False

    def _pool_usage(self, pool: PoolInfo) -> tuple[float, int, int]:
        usage = self._pool_usage_cache.get(pool.name)
        if usage is None:
            members = [n for n in self.cluster.nodes if n.pool == pool.name and not n.marked_for_deletion]
            usage = (
                sum(n.itype.cpu_cores if n.itype else n.cpu for n in members),
                sum(n.itype.memory_bytes if n.itype else n.mem for n in members),
                len(members),
            )
            self._pool_usage_cache[pool.name] = usage
        return usage

    def _limit_filter(self, pool: PoolInfo, options: list[TypeOption], state: SimState) -> list[TypeOption]:
        """Drop types that would take the pool over its `limits` (cpu, memory, nodes)."""
        if not pool.limits:
            return options
        cpu, mem, count = self._pool_usage(pool)
        for name in state.removed:
            n = self.cluster.by_name.get(name)
            if n is not None and n.pool == pool.name:
                cpu -= n.itype.cpu_cores if n.itype else n.cpu
                mem -= n.itype.memory_bytes if n.itype else n.mem
                count -= 1
        for nn in state.new_nodes:
            if nn.pool.name == pool.name and nn.options:
                cpu += nn.options[0].itype.cpu_cores
                mem += nn.options[0].itype.memory_bytes
                count += 1
        lim_cpu = parse_cpu(pool.limits["cpu"]) if "cpu" in pool.limits else math.inf
        lim_mem = parse_memory(pool.limits["memory"]) if "memory" in pool.limits else math.inf
        lim_nodes = int(pool.limits["nodes"]) if "nodes" in pool.limits else math.inf
        if count + 1 > lim_nodes:
            return []
        return [o for o in options if cpu + o.itype.cpu_cores <= lim_cpu and mem + o.itype.memory_bytes <= lim_mem]

    def _reservation_filter(self, options: list[TypeOption], state: SimState) -> list[TypeOption]:
        """Without the reserved offerings of reservations the simulation's new nodes already fill: a new node whose
        cheapest offering is reserved takes one place of that reservation (Karpenter's scheduler counts each
        reservation's capacity across the NodeClaims it plans; docs/semantics.md §16.4)."""
        counts = self.cluster.reservation_counts
        if not counts or not state.new_nodes:
            return options
        used: dict[str, int] = {}
        for nn in state.new_nodes:
            offs = [o for opt in nn.options for o in opt.offerings]
            best = min(offs, key=lambda o: o.price) if offs else None
            if best is not None and best.reservation_id:
                used[best.reservation_id] = used.get(best.reservation_id, 0) + 1
        full = {rid for rid, n in used.items() if n >= counts.get(rid, 0)}
        if not full:
            return options
        out: list[TypeOption] = []
        for opt in options:
            offs = tuple(o for o in opt.offerings if o.reservation_id not in full)
            if offs:
                out.append(opt if len(offs) == len(opt.offerings) else
                           TypeOption(opt.itype, offs, opt.cpu, opt.mem, opt.pods, opt.eph))
        return out

    def _narrow(self, options: list[TypeOption], allowed: set[tuple[str, str, str]] | None,
                cpu: float, mem: int, npods: int, eph: int) -> list[TypeOption]:
        out: list[TypeOption] = []
        for opt in options:
            if opt.cpu + 1e-9 < cpu or opt.mem < mem or opt.pods < npods or opt.eph_room < eph:
                continue
            offs = opt.offerings if allowed is None else tuple(
                o for o in opt.offerings if (opt.itype.name, o.zone, o.capacity_type) in allowed)
            if offs:
                out.append(opt if offs is opt.offerings else
                           TypeOption(opt.itype, offs, opt.cpu, opt.mem, opt.pods, opt.eph))
        return out

    @staticmethod
    def _zone_spreads(pod: PodInfo) -> list[tuple[int, dict[str, Any]]]:
        """(maxSkew, selector) of the pod's spread constraints over zones that count the pod itself."""
        return [(max_skew, selector) for topology_key, max_skew, selector in pod.spread
                if topology_key == L.ZONE_LABEL and match_label_selector(selector, pod.labels)]

    def _zone_allowed_for_spread(self, pod: PodInfo, state: SimState) -> tuple[set[str] | None, dict[str, int]]:
        """The zones where the pod keeps every zone spread within its skew (None: no constraint), and its spread
        peers per zone summed over those constraints (which zone a new node for it is bound to)."""
        zones: set[str] | None = None
        peers: dict[str, int] = {}
        for max_skew, selector in self._zone_spreads(pod):
            counts = self._zone_counts(pod, selector, state)
            for zone, c in counts.items():
                peers[zone] = peers.get(zone, 0) + c
            domains = self._zone_domains(pod)
            if not domains:
                continue
            low = self._zone_low(pod, counts, domains)
            ok = {z for z in domains if counts.get(z, 0) + 1 - low <= max_skew}
            zones = ok if zones is None else zones & ok
        return zones, peers

    def _try_new(self, pod: PodInfo, nn: NewNode, state: SimState) -> list[TypeOption] | None:
        """Remaining options if `pod` joins new node `nn`, else None."""
        if pod.volume_blocked or not tolerates_all(pod.tolerations, nn.pool.taints) or not MoreChecks.pns_ok(
                pod, nn.pool.taints):
            return None
        if (pod.anti_affinity or self.cluster.has_anti_affinity or state.host_anti_placed) and not self._anti_ok(
                pod, nn.pods):
            return None
        for topology_key, max_skew, selector in pod.spread:
            if topology_key == L.HOSTNAME_LABEL and match_label_selector(selector, pod.labels):
                same = sum(1 for p in nn.pods
                           if p.namespace == pod.namespace and match_label_selector(selector, p.labels))
                if same + 1 > max_skew:
                    return None
        allowed = self._pod_allowed(pod, nn.pool)
        zones, peers = self._zone_allowed_for_spread(pod, state) if pod.spread else (None, {})
        more_allowed = self._new_node_offerings(pod, nn, state)
        if more_allowed is not None:
            if not more_allowed:
                return None
            allowed = more_allowed if allowed is None else allowed & more_allowed
        if zones is not None:
            bound = state.new_zones.get(nn.name)
            if bound is not None:
                zones = zones & {bound}
            base = allowed if allowed is not None else {
                (o.itype.name, off.zone, off.capacity_type) for o in nn.options for off in o.offerings}
            allowed = {t for t in base if t[1] in zones}
        options = self._narrow(nn.options, allowed, nn.cpu + pod.cpu, nn.mem + pod.mem, nn.npods + 1, nn.eph + pod.eph)
        if options and pod.attach:  # Karpenter v1.15: the type's volume limits bound a new node (§3.5)
            volumes = nn.attached | pod.attach
            options = [o for o in options if within_limits(volumes, type_volume_limits(o.itype))]
        if options and zones is not None and nn.name not in state.new_zones:
            options = self._in_least_zone(options, peers)
        if options and more_allowed is not None:
            options = self._pin_domains(pod, nn, options, state)
        if options and not relaxing() and not min_values_met(nn.pool.requirements, options):
            return None  # Karpenter's NodeClaim.Add: the remaining types must still satisfy minValues (Strict)
        return options or None

    @staticmethod
    def _in_least_zone(options: list[TypeOption], peers: dict[str, int]) -> list[TypeOption]:
        """`options` narrowed to the zone (of theirs) holding the fewest of the pod's spread `peers`, by name on a tie:
        the domain Karpenter's topology gives a new NodeClaim for a pod spread over zones."""
        offered = {o.zone for opt in options for o in opt.offerings}
        zone = min(offered, key=lambda z: (peers.get(z, 0), z))
        out: list[TypeOption] = []
        for opt in options:
            offs = tuple(o for o in opt.offerings if o.zone == zone)
            if offs:
                out.append(opt if len(offs) == len(opt.offerings) else
                           TypeOption(opt.itype, offs, opt.cpu, opt.mem, opt.pods, opt.eph))
        return out

    def _open_new(self, pod: PodInfo, state: SimState) -> tuple[NewNode | None, str]:
        """A fresh node from the first pool (by weight) that can run `pod`, or why none can."""
        why = "no nodepool can run it"
        for pool in self.pools_by_weight:
            if not tolerates_all(pod.tolerations, pool.taints):
                why = f"taints of nodepool {pool.name} are not tolerated"
                continue
            blocker = self.launch_blocker(pool)
            if blocker is not None:
                why = f"nodepool {pool.name} cannot launch: {blocker}"
                continue
            options = self._reservation_filter(self._limit_filter(pool, self._options(pool), state), state)
            if not options:
                why = f"nodepool {pool.name} has no instance type within its limits"
                continue
            dcpu, dmem, dpods = self.cluster.daemon_overhead(pool.name)
            nn = NewNode(len(state.new_nodes), pool, options, self.pool_labels(pool),
                         cpu=dcpu, mem=dmem, npods=dpods)
            remaining = self._try_new(pod, nn, state)
            if remaining is None:
                why = (f"no instance type of nodepool {pool.name} fits it "
                       f"(cpu {format_cpu(pod.cpu)}, memory {format_memory(pod.mem)}, its selectors and spread)")
                continue
            return nn, ""
        return None, why

    # ---- the simulation -------------------------------------------------------------------------

    def simulate(self, remove: Sequence[NodeInfo], pods: Sequence[PodInfo], max_new: int = 1,
                 state: SimState | None = None, pending: Sequence[PodInfo] = (),
                 closed: Collection[str] = (), fill: bool = False) -> SimResult:
        """Place `pods` (from the `remove`d nodes) and `pending` pods; at most `max_new` new nodes. `closed`: nodes that
        take no pod of `pods` but still take pending ones (a consolidation's nodes under consolidateAfter, §5.1).
        `fill`: new nodes fill under the process's fill policy (provisioning only; planning/scheduling/fill_policy.py).

        A pending pod takes room on existing nodes (so no command counts on it) but never joins or opens a new node:
        the provisioner launches its capacity. Allowed to, it made consolidation "replace" a node whose own pods fit
        elsewhere with a node for pods the provisioner was already launching for: 20 of 50 replacements in the wide
        scenario of bench.karpenter_suite, each one more node to consolidate again (docs/semantics.md §3.4, §12)."""
        state = state or self.new_state(remove)
        for n in remove:
            state.removed.add(n.name)  # spread counts of its pods drop with it
        state.version += 1
        removed_idx = {n.index for n in remove} | {
            self.cluster.by_name[name].index for name in state.removed if name in self.cluster.by_name}
        result = SimResult()
        pending_keys = {p.key for p in pending}
        closed_idx = removed_idx | {self.cluster.by_name[n].index for n in closed if n in self.cluster.by_name} \
            if closed else removed_idx
        ordered = sorted([*pods, *pending], key=lambda p: (-p.cpu, -p.mem, p.key))
        for pod in ordered:
            shut = closed_idx if closed and pod.key not in pending_keys else None
            why = ""
            ladder = (pod,) if pod.more is None and not self.more.any_pns else self._ladder(pod)
            for variant in ladder:  # strictest first (Karpenter preferences.go)
                outcome, why = self._place(pod, variant, shut or removed_idx, shut is None,
                                           pod.key in pending_keys, max_new, state, result, fill)
                if outcome != _TRY_NEXT:
                    break
            else:
                if pod.key not in pending_keys:
                    result.failures.append((pod, self._why_not(pod, why, state.volume_full.get(pod.key, ""))))
                elif remove and (home := self._lost_home(pod, remove, result)) is not None:
                    result.pending_lost.append((pod, home))
            if result.too_many_new:
                break
        result.new_nodes = list(state.new_nodes)
        result.volume_limited = _volume_limited(result, state)
        self.volume_limited_pods.update(result.volume_limited)
        return result

    def _lost_home(self, pod: PodInfo, remove: Sequence[NodeInfo], result: SimResult) -> str | None:
        """The node a pending pod that found no room in this what-if fits on as the cluster is now: a removed node,
        or one the removed nodes' pods were placed on. None when it had no room before either (its capacity is
        launching, or nothing serves it) or kube-scheduler binds it elsewhere (DaemonSet and mirror pods)."""
        if pod.is_daemonset or pod.is_mirror:
            return None
        nodes = [*remove, *(self.cluster.by_name[n] for n in result.moved_to() if n in self.cluster.by_name)]
        fresh = SimState()
        return next((n.name for n in nodes if self.fits(pod, n, fresh)), None)

    def fits(self, pod: PodInfo, node: NodeInfo, state: SimState) -> bool:
        """Whether `pod` (one variant of it) may go on existing `node` now: every check a first fit makes."""
        return node.name in self.dest_pos and self._fits_existing(pod, node, state)

    def variants(self, pod: PodInfo) -> list[PodInfo]:
        """The pod as the simulation tries it: its preferences required first, then relaxed (preferences.go)."""
        return self._ladder(pod)

    def _ladder(self, pod: PodInfo) -> list[PodInfo]:
        got = self._ladders.get(pod.key)
        if got is None or got[0] is not pod.raw:
            got = self._ladders[pod.key] = (pod.raw, pod_ladder(pod, self.cluster, self.more.any_pns))
            self._originals[pod.key] = pod
        return got[1]

    def _base(self, pod: PodInfo) -> PodInfo:
        """The pod a relaxation rung was made from (itself when it is no rung)."""
        return self._originals.get(pod.key, pod)

    def _place(self, pod: PodInfo, variant: PodInfo, skip: set[int], record: bool, pending: bool, max_new: int,
               state: SimState, result: SimResult, fill: bool = False) -> tuple[str, str]:
        """Place `pod` as `variant` (one rung of its relaxation ladder): on an existing node, a new node of this
        simulation (under `fill`, one it does not make dearer per unit: fill_policy.py), or a fresh one.
        (_PLACED | _TRY_NEXT | _DONE, why the variant fit nowhere)."""
        target = self._first_fit(variant, skip, state, record=record)
        if target is not None:
            self._place_existing(pod, target, state, counted=variant)
            result.placements.append((pod, target.name))
            return _PLACED, ""
        if pending:
            return _TRY_NEXT, ""  # never a new node: the provisioner launches capacity for it
        shape = (variant.cpu, variant.mem, variant.eph, variant.sig) if self._plain(variant, state, True) else None
        for nn in state.new_nodes:
            if shape in nn.refused:
                continue
            remaining = self._try_new(variant, nn, state)
            if remaining is not None and not (fill and dearer_fill(nn.options, remaining, nn.cpu + variant.cpu,
                                                                   nn.mem + variant.mem, nn.unit_memo)):
                self._join(pod, nn, remaining, state, counted=variant)
                result.placements.append((pod, nn.name))
                return _PLACED, ""
            if shape is not None:
                nn.refused.add(shape)
        nn, why = self._open_new(variant, state)
        if nn is None:
            return _TRY_NEXT, why
        if len(state.new_nodes) >= max_new:
            result.too_many_new = True
            return _DONE, ""
        remaining = self._try_new(variant, nn, state)
        state.new_nodes.append(nn)
        self._join(pod, nn, remaining or nn.options, state, counted=variant)
        result.placements.append((pod, nn.name))
        return _PLACED, ""

    def _join(self, pod: PodInfo, nn: NewNode, options: list[TypeOption], state: SimState,
              counted: PodInfo | None = None) -> None:
        """`pod` joins `nn`; `counted` is the relaxation variant it fit as (its zone terms bind the node's zone)."""
        counted = counted or pod
        state.version += 1
        if pod.more is not None and pod.more.anti_terms:
            state.anti_placed = True
        if pod.anti_affinity:
            state.host_anti_placed = True
        if options is not nn.options:
            nn.options, nn.unit_memo = options, {}
        nn.refused = set()
        if nn.name not in state.new_zones and (self._zone_spreads(counted) or (
                counted.more is not None and self._zone_keyed(counted, self._ctx(counted, state)))):
            zones = {o.zone for opt in options for o in opt.offerings}
            if len(zones) == 1:
                state.new_zones[nn.name] = zones.pop()
        self._bind_domains(counted, nn, options, state)
        nn.pods.append(pod)
        nn.cpu += pod.cpu
        nn.mem += pod.mem
        nn.npods += 1
        nn.eph += pod.eph
        nn.attached |= pod.attach
        self._count_spread(counted, nn.name, state)

    def _plain(self, pod: PodInfo, state: SimState, any_sig: bool = False) -> bool:
        """Whether where `pod` fits depends on its requests alone (no selector, affinity, spread, volume or
        anti-affinity anywhere): pods of the same requests then fit the same nodes. `any_sig`: or on its requests
        and its signature (nodeSelector, node affinity, tolerations: a real cluster's pods carry tolerations)."""
        return ((any_sig or not pod.sig) and not pod.spread and not pod.anti_affinity
                and not self.cluster.has_anti_affinity and pod.more is None and not pod.volume_blocked
                and not pod.attach and not state.anti_placed and not self.more.holders
                and not state.host_anti_placed)

    def _first_fit(self, pod: PodInfo, removed_idx: set[int], state: SimState, record: bool = True) -> NodeInfo | None:
        """The first destination that takes the pod. `record=False` (more nodes skipped than for other pods) reads the
        frontier memo but does not write it: what it would record holds only for pods with the same nodes shut."""
        dest = self.dest
        overrides = state.block_max
        plain = self._plain(pod, state)
        start = 0
        if plain:
            for (c, m, e), b in state.frontier.items():
                if b > start and c <= pod.cpu + 1e-9 and m <= pod.mem and e <= pod.eph:
                    start = b
        cpu, mem = pod.cpu - 1e-9, pod.mem
        supers, n_blocks = state.super_max, len(self.block_max)
        for sb in range(start // SUPER, len(self.super_max)):
            scpu, smem, spods = supers.get(sb) or self.super_max[sb]
            if cpu > scpu or mem > smem or spods < 1:
                continue
            for b in range(max(start, sb * SUPER), min((sb + 1) * SUPER, n_blocks)):
                bcpu, bmem, bpods = overrides.get(b) or self.block_max[b]
                if cpu > bcpu or mem > bmem or bpods < 1:
                    continue
                for node in dest[b * BLOCK:(b + 1) * BLOCK]:
                    if node.index in removed_idx:
                        continue
                    if self._fits_existing(pod, node, state):
                        if plain and record:
                            state.frontier[(pod.cpu, pod.mem, pod.eph)] = b
                        return node
        if plain and record:
            state.frontier[(pod.cpu, pod.mem, pod.eph)] = len(self.block_max)
        return None

    def _why_not(self, pod: PodInfo, new_why: str, volume_full: str = "") -> str:
        """Why a pod fits nowhere, for the Unconsolidatable / blocked message (cached per pod signature); a node that
        refused it for its volume attachment limit is named (`volume_full`)."""
        if pod.volume_blocked:
            return f"its volumes: {pod.volume_blocked}"
        compatible = self._compatible_cache.get(pod.sig)
        if compatible is None:
            compatible = any(self._static_ok(pod, n) for n in self.dest)
            self._compatible_cache[pod.sig] = compatible
        if not compatible:
            existing = "no node matches its nodeSelector, affinity and tolerations"
        else:
            existing = (f"insufficient free capacity on the nodes it may use "
                        f"(needs cpu {format_cpu(pod.cpu)}, memory {format_memory(pod.mem)})")
            m = pod.more
            extra = [what for what, present in (
                ("anti-affinity", pod.anti_affinity or (m is not None and m.anti_terms)),
                ("pod affinity", m is not None and m.pod_affinity),
                ("topology spread", pod.spread or (m is not None and m.spread_rules)),
                ("host ports", m is not None and m.host_ports),
                ("volume attachment limit", pod.attach)) if present]
            if extra:
                existing += " or its " + " / ".join(extra)
            if volume_full:
                existing += f" ({volume_full})"
        return f"{existing}; {new_why}"


def _volume_limited(result: SimResult, state: SimState) -> dict[str, str]:
    """Pods an existing node refused for its volume attachment limit that then went to a new node or nowhere, with
    the first such node's detail (pod key -> volume_topology.limit_detail)."""
    if not state.volume_full:
        return {}
    new = {nn.name for nn in result.new_nodes}
    out = {p.key: state.volume_full[p.key] for p, to in result.placements if to in new and p.key in state.volume_full}
    out.update((p.key, state.volume_full[p.key]) for p, _ in result.failures if p.key in state.volume_full)
    return out


def replacement_offerings(nn: NewNode) -> list[tuple[TypeOption, Offering]]:
    """Every (type, offering) a new node could launch as, cheapest first."""
    pairs = [(opt, o) for opt in nn.options for o in opt.offerings]
    pairs.sort(key=lambda t: (t[1].price, t[0].itype.name, t[1].zone))
    return pairs




def worst_launch_price(opt: TypeOption, capacity_types: set[str]) -> float:
    """Karpenter WorstLaunchPrice: the dearest offering of the first capacity type (reserved, spot, on-demand)."""
    for ct in CAPACITY_ORDER:
        if ct not in capacity_types:
            continue
        prices = [o.price for o in opt.offerings if o.capacity_type == ct]
        if prices:
            return max(prices)
    return math.inf
