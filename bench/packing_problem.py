"""A cluster snapshot reduced to a bin-packing problem: pod classes and node (bin) types.

The exact optimum (bench/optimum.py) works on this reduced form so the CP-SAT model stays small: pods with
equal requests and equal placement constraints collapse into one class with a count, and node types
that another type beats on price, capacity and compatibility are dropped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from api import labels as L
from api.catalog import CATALOG_KIND, InstanceType, InstanceTypeCatalog, load_default_catalog
from api.quantity import parse_cpu, parse_memory

OS_LINUX = "linux"
INSTANCE_FAMILY_LABEL = "karpenter.k8s.aws/instance-family"
INSTANCE_SIZE_LABEL = "karpenter.k8s.aws/instance-size"

# (cpu millicores, memory KiB, pods) a node type offers to pods; the hook lets callers subtract reserves.
Allocatable = Callable[[InstanceType], tuple[int, int, int]]


def full_capacity(it: InstanceType) -> tuple[int, int, int]:
    """Allocatable = capacity (the catalog's figures, no kube/system reserve)."""
    return math.floor(it.cpu_cores * 1000 + 1e-9), it.memory_bytes // 1024, it.pods


@dataclass(frozen=True)
class PodReq:
    """What one pod needs and where it may run."""

    name: str
    cpu_milli: int
    memory_kib: int
    node_selector: tuple[tuple[str, str], ...] = ()
    affinity_terms: tuple[tuple[tuple[str, str, tuple[str, ...]], ...], ...] = ()
    tolerations: tuple[tuple[str, str, str, str], ...] = ()  # (key, operator, value, effect)

    def placement_key(self) -> tuple:
        return (self.node_selector, self.affinity_terms, self.tolerations)


@dataclass
class BinType:
    """A node that could be launched: one (NodePool, instance type, zone, capacity type) at its price."""

    node_pool: str
    instance_type: str
    zone: str
    capacity_type: str
    price: float
    cpu_milli: int
    memory_kib: int
    pods: int
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[tuple[str, str, str], ...] = ()  # (key, value, effect)


@dataclass
class PodClass:
    """Pods with the same requests and the same set of node types they fit."""

    cpu_milli: int
    memory_kib: int
    count: int
    compatible: frozenset[int]  # indices into PackingProblem.bin_types
    names: list[str] = field(default_factory=list)


@dataclass
class PackingProblem:
    """Classes of pods to place and node types to place them on (DaemonSet overhead already subtracted)."""

    classes: list[PodClass]
    bin_types: list[BinType]
    unplaceable: list[str] = field(default_factory=list)

    @property
    def pod_count(self) -> int:
        return sum(c.count for c in self.classes)


# ---- pod and node-selection helpers over plain Kubernetes dicts -------------------------------------


def _meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


def _owner_kinds(pod: dict) -> set[str]:
    return {ref.get("kind", "") for ref in _meta(pod).get("ownerReferences") or []}


def is_active(pod: dict) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not _meta(pod).get("deletionTimestamp")


def is_daemonset_pod(pod: dict) -> bool:
    return "DaemonSet" in _owner_kinds(pod)


def is_reschedulable(pod: dict) -> bool:
    """Active, not a DaemonSet pod, not a mirror pod (Karpenter's IsReschedulable, less the StatefulSet case)."""
    kinds = _owner_kinds(pod)
    terminating_sts = bool(_meta(pod).get("deletionTimestamp")) and "StatefulSet" in kinds
    return (is_active(pod) or terminating_sts) and "DaemonSet" not in kinds and "Node" not in kinds


def pod_requests(pod: dict) -> tuple[int, int]:
    """Effective (cpu millicores, memory KiB) requests: max(sum of containers, largest init container) + overhead."""
    spec = pod.get("spec") or {}

    def req(container: dict) -> tuple[float, int]:
        r = (container.get("resources") or {}).get("requests") or {}
        return parse_cpu(r.get("cpu", 0)), parse_memory(r.get("memory", 0))

    cpu = sum(req(c)[0] for c in spec.get("containers") or [])
    mem = sum(req(c)[1] for c in spec.get("containers") or [])
    for c in spec.get("initContainers") or []:
        icpu, imem = req(c)
        cpu, mem = max(cpu, icpu), max(mem, imem)
    overhead = spec.get("overhead") or {}
    cpu += parse_cpu(overhead.get("cpu", 0))
    mem += parse_memory(overhead.get("memory", 0))
    return math.ceil(cpu * 1000 - 1e-9), -(-mem // 1024)


def pod_req(pod: dict) -> PodReq:
    spec = pod.get("spec") or {}
    meta = _meta(pod)
    terms: list[tuple[tuple[str, str, tuple[str, ...]], ...]] = []
    node_aff = ((spec.get("affinity") or {}).get("nodeAffinity") or {})
    required = node_aff.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in required.get("nodeSelectorTerms") or []:
        exprs = tuple(sorted((e["key"], e["operator"], tuple(sorted(e.get("values") or [])))
                             for e in term.get("matchExpressions") or []))
        terms.append(exprs)
    tolerations = tuple(sorted((t.get("key", ""), t.get("operator", "Equal"), t.get("value", ""), t.get("effect", ""))
                               for t in spec.get("tolerations") or []))
    cpu, mem = pod_requests(pod)
    return PodReq(
        name=f"{meta.get('namespace', 'default')}/{meta.get('name', '')}",
        cpu_milli=cpu,
        memory_kib=mem,
        node_selector=tuple(sorted((spec.get("nodeSelector") or {}).items())),
        affinity_terms=tuple(sorted(terms)),
        tolerations=tolerations,
    )


def expression_matches(key: str, op: str, values: Iterable[str], node_labels: dict[str, str]) -> bool:
    """One node-selector requirement against a node's labels (In, NotIn, Exists, DoesNotExist, Gt, Lt)."""
    present = key in node_labels
    value = node_labels.get(key)
    vals = list(values)
    if op == "In":
        return present and value in vals
    if op == "NotIn":
        return not present or value not in vals
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        try:
            a, b = int(value or ""), int(vals[0])
        except (ValueError, IndexError):
            return False
        return a > b if op == "Gt" else a < b
    return False


def tolerates(tolerations: Iterable[tuple[str, str, str, str]], taint: tuple[str, str, str]) -> bool:
    key, value, effect = taint
    for t_key, t_op, t_value, t_effect in tolerations:
        if t_effect and t_effect != effect:
            continue
        if t_op == "Exists" and (not t_key or t_key == key):
            return True
        if t_op in ("Equal", "") and t_key == key and t_value == value:
            return True
    return False


def pod_fits_labels(pod: PodReq, node_labels: dict[str, str], taints: Iterable[tuple[str, str, str]] = ()) -> bool:
    """nodeSelector, required node affinity and NoSchedule/NoExecute taints."""
    if any(node_labels.get(k) != v for k, v in pod.node_selector):
        return False
    if pod.affinity_terms and not any(all(expression_matches(k, op, vals, node_labels) for k, op, vals in term)
                                      for term in pod.affinity_terms):
        return False
    return all(tolerates(pod.tolerations, t) for t in taints if t[2] in ("NoSchedule", "NoExecute"))


# ---- node types a NodePool may launch ----------------------------------------------------------------


def offering_labels(it: InstanceType, zone: str, capacity_type: str) -> dict[str, str]:
    family, _, size = it.name.partition(".")
    return {
        L.INSTANCE_TYPE_LABEL: it.name,
        L.ZONE_LABEL: zone,
        L.REGION_LABEL: zone[:-1] if zone and zone[-1].isalpha() else zone,
        L.CAPACITY_TYPE_LABEL: capacity_type,
        L.ARCH_LABEL: it.arch,
        L.OS_LABEL: OS_LINUX,
        INSTANCE_FAMILY_LABEL: family,
        INSTANCE_SIZE_LABEL: size,
    }


def _pool_requirements(pool: dict) -> list[dict]:
    tmpl = ((pool.get("spec") or {}).get("template") or {}).get("spec") or {}
    return list(tmpl.get("requirements") or [])


def _pool_taints(pool: dict) -> tuple[tuple[str, str, str], ...]:
    tmpl = ((pool.get("spec") or {}).get("template") or {}).get("spec") or {}
    return tuple((t.get("key", ""), t.get("value", ""), t.get("effect", "")) for t in tmpl.get("taints") or [])


def bin_types_for(node_pools: list[dict], catalog: InstanceTypeCatalog,
                  allocatable: Allocatable = full_capacity) -> list[BinType]:
    """Every available offering each NodePool's requirements admit (an unrestricted pool when there are none)."""
    pools = node_pools or [{"metadata": {"name": "default"}, "spec": {}}]
    out: list[BinType] = []
    for pool in pools:
        name = _meta(pool).get("name", "default")
        tmpl_labels = dict((((pool.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels") or {})
        reqs = _pool_requirements(pool)
        for it in catalog.instance_types:
            cpu, mem, pods = allocatable(it)
            for off in it.offerings:
                if not off.available:
                    continue
                node_labels = offering_labels(it, off.zone, off.capacity_type)
                node_labels.update(tmpl_labels)
                node_labels[L.NODEPOOL_LABEL] = name
                ok = True
                for r in reqs:
                    key, op, vals = r.get("key", ""), r.get("operator", "In"), r.get("values") or []
                    if key not in node_labels and op == "In" and vals:
                        node_labels[key] = vals[0]  # custom requirement labels are stamped onto the node
                    if not expression_matches(key, op, vals, node_labels):
                        ok = False
                        break
                if ok:
                    out.append(BinType(name, it.name, off.zone, off.capacity_type, off.price, cpu, mem, pods,
                                       node_labels, _pool_taints(pool)))
    return out


# ---- building the problem ----------------------------------------------------------------------------


def _daemonset_overhead(daemon_pods: list[PodReq], b: BinType) -> tuple[int, int, int]:
    cpu = mem = n = 0
    for p in daemon_pods:
        if pod_fits_labels(p, b.labels, b.taints):
            cpu, mem, n = cpu + p.cpu_milli, mem + p.memory_kib, n + 1
    return cpu, mem, n


def _dominates(a: BinType, ca: frozenset[int], b: BinType, cb: frozenset[int]) -> bool:
    """True when node type `a` is as cheap, as large and as widely usable as `b`."""
    return (a.price <= b.price and a.cpu_milli >= b.cpu_milli and a.memory_kib >= b.memory_kib
            and a.pods >= b.pods and ca >= cb)


def build_problem(pods: list[PodReq], daemon_pods: list[PodReq], bins: list[BinType]) -> PackingProblem:
    """Group pods into classes, subtract DaemonSet overhead from node types, drop dominated types."""
    sized: list[BinType] = []
    for b in bins:
        cpu, mem, n = _daemonset_overhead(daemon_pods, b)
        if b.cpu_milli - cpu <= 0 or b.memory_kib - mem <= 0 or b.pods - n <= 0:
            continue
        sized.append(BinType(b.node_pool, b.instance_type, b.zone, b.capacity_type, b.price,
                             b.cpu_milli - cpu, b.memory_kib - mem, b.pods - n, b.labels, b.taints))

    # placement signature: which node types a pod could use, ignoring size, computed once per distinct key
    sig_cache: dict[tuple, frozenset[int]] = {}
    groups: dict[tuple, list[PodReq]] = {}
    for p in pods:
        key = p.placement_key()
        if key not in sig_cache:
            sig_cache[key] = frozenset(i for i, b in enumerate(sized) if pod_fits_labels(p, b.labels, b.taints))
        groups.setdefault((p.cpu_milli, p.memory_kib, sig_cache[key]), []).append(p)

    raw: list[PodClass] = []
    for (cpu, mem, sig), members in groups.items():
        fits = frozenset(i for i in sig if sized[i].cpu_milli >= cpu and sized[i].memory_kib >= mem)
        raw.append(PodClass(cpu, mem, len(members), fits, [m.name for m in members]))

    unplaceable = [n for c in raw if not c.compatible for n in c.names]
    classes = [c for c in raw if c.compatible]
    usable = sorted({i for c in classes for i in c.compatible})
    serves = {i: frozenset(ci for ci, c in enumerate(classes) if i in c.compatible) for i in usable}
    kept: list[int] = []
    for i in usable:
        dominated = False
        for j in usable:
            if j == i or not _dominates(sized[j], serves[j], sized[i], serves[i]):
                continue
            # strictly better, or identical and earlier: keep exactly one of equals
            if not _dominates(sized[i], serves[i], sized[j], serves[j]) or j < i:
                dominated = True
                break
        if not dominated:
            kept.append(i)
    remap = {old: new for new, old in enumerate(kept)}
    final_bins = [sized[i] for i in kept]
    for c in classes:
        c.compatible = frozenset(remap[i] for i in c.compatible if i in remap)
    return PackingProblem(classes, final_bins, unplaceable)


def problem_from_objects(objects: list[dict], catalog: InstanceTypeCatalog | None = None,
                         allocatable: Allocatable = full_capacity) -> PackingProblem:
    """The reschedulable pods of a snapshot (bound or pending) against the node types its NodePools allow."""
    docs = [o for o in objects if isinstance(o, dict)]
    embedded = [o for o in docs if o.get("kind") == CATALOG_KIND]
    if embedded:
        catalog = InstanceTypeCatalog.model_validate(embedded[-1])
    catalog = catalog or load_default_catalog()
    pools = [o for o in docs if o.get("kind") == "NodePool"]
    all_pods = [o for o in docs if o.get("kind") == "Pod"]
    pods = [pod_req(p) for p in all_pods if is_reschedulable(p)]
    daemons: dict[str, PodReq] = {}
    for p in all_pods:
        if is_daemonset_pod(p) and is_active(p):
            owner = next(r for r in _meta(p)["ownerReferences"] if r.get("kind") == "DaemonSet")
            key = f"{_meta(p).get('namespace', 'default')}/{owner.get('name', '')}"
            req = pod_req(p)
            cur = daemons.get(key)
            if cur is None or (req.cpu_milli, req.memory_kib) > (cur.cpu_milli, cur.memory_kib):
                daemons[key] = req
    return build_problem(pods, list(daemons.values()), bin_types_for(pools, catalog, allocatable))
