"""Karpenter's state gauges, computed from the worker's watch cache each time /metrics is scraped.

Karpenter's metrics controllers (pkg/controllers/metrics/{node,nodepool,pod}/controller.go) and cluster state
(pkg/controllers/state/metrics.go) rebuild these gauges from their informer cache every few seconds; a Collector
that reads nodeflow's cache when scraped gives the same values without a loop and never shows a deleted node.
The pod startup summary needs what a pod looked like before (pending, then Ready), so `PodTracker` remembers
the pending pods it saw, as Karpenter's pod controller does; `tick()` (every 5 s, from the worker)
makes sure a short pending spell between scrapes is seen.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric

from api import labels as L
from api.quantity import QuantityError, parse_quantity
from planning.identity_memo import IdentityMemo
from planning.pass_store import PassStore
from telemetry import karpenter_metrics as km
from telemetry.metrics import REGISTRY

Obj = dict[str, Any]
Source = Callable[[], tuple[list[Obj], bool]]  # (cached objects, synced)

AWS = "karpenter.k8s.aws/"
# v1.WellKnownLabels (core) and the provider's additions (pkg/apis/v1/labels.go): the node gauges' labels
WELL_KNOWN = (L.NODEPOOL_LABEL, L.ZONE_LABEL, L.REGION_LABEL, L.INSTANCE_TYPE_LABEL, L.ARCH_LABEL, L.OS_LABEL,
              L.CAPACITY_TYPE_LABEL, "node.kubernetes.io/windows-build", "topology.k8s.aws/zone-id",
              *(AWS + k for k in (
                  "capacity-reservation-id", "capacity-reservation-type", "capacity-reservation-interruptible",
                  "instance-hypervisor", "instance-encryption-in-transit-supported", "nitro-sandbox",
                  "instance-category", "instance-capability-flex", "instance-family", "instance-generation",
                  "instance-local-nvme", "instance-size", "instance-cpu", "instance-cpu-manufacturer",
                  "instance-cpu-sustained-clock-speed-mhz", "instance-memory", "instance-ebs-bandwidth",
                  "instance-network-bandwidth", "instance-gpu-name", "instance-gpu-manufacturer", "instance-gpu-count",
                  "instance-gpu-memory", "instance-accelerator-name", "instance-accelerator-manufacturer",
                  "instance-accelerator-count", "instance-tenancy", "placement-group-id",
                  "placement-group-partition")))


def label_name(key: str) -> str:
    """getWellKnownLabels: the part after the slash in snake case ("karpenter.sh/capacity-type" -> capacity_type)."""
    return key.rsplit("/", 1)[-1].lower().replace("-", "_")


NODE_LABELS = (*(label_name(k) for k in WELL_KNOWN), "node_name", "phase", "managed")
POD_LABELS = ("name", "namespace", "owner", "node", "scheduled", "nodepool", "zone", "arch", "capacity_type",
              "instance_type", "phase", "ready", "managed")


def resource_type(name: str) -> str:
    return name.lower().replace("-", "_")


@functools.lru_cache(maxsize=4096)
def amount(resource: str, value: Any) -> float:
    """Karpenter's value of a quantity: cores for cpu (MilliValue/1000), else Value(). Cached: a cluster's pods
    repeat a few quantities ("500m", "1Gi") tens of thousands of times."""
    try:
        q = parse_quantity(value)
    except (QuantityError, ValueError, TypeError):
        return 0.0
    return float(q) if resource == "cpu" else float(q.to_integral_value(rounding="ROUND_CEILING"))


def _sum(into: dict[str, float], resources: dict[str, Any] | None) -> None:
    for name, value in (resources or {}).items():
        into[name] = into.get(name, 0.0) + amount(name, value)


def pod_resources(pod: Obj, field: str) -> dict[str, float]:
    """A pod's requests or limits: its containers' sum, at least its largest init container's, plus overhead."""
    spec = pod.get("spec") or {}
    total: dict[str, float] = {}
    for c in spec.get("containers") or []:
        _sum(total, (c.get("resources") or {}).get(field))
    for c in spec.get("initContainers") or []:
        for name, value in ((c.get("resources") or {}).get(field) or {}).items():
            total[name] = max(total.get(name, 0.0), amount(name, value))
    _sum(total, spec.get("overhead"))
    return total


def condition(obj: Obj, ctype: str) -> Obj | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == ctype), None)


def is_true(obj: Obj, ctype: str) -> bool:
    c = condition(obj, ctype)
    return c is not None and c.get("status") == "True"


def timestamp(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def is_daemon(pod: Obj) -> bool:
    return any(o.get("kind") == "DaemonSet" for o in (pod.get("metadata") or {}).get("ownerReferences") or [])


def is_terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


class ScrapeMemo:
    """What a scrape derived from a cached Pod, kept while the cache holds that very object (it replaces, never
    modifies, one: runtime/informer.py) and, for the pod's labels, while its Node is the very same object too: at
    5,000 nodes and 70,000 pods every scrape derived every pod's labels and requests again. Nothing that reads the
    clock is kept. What a scrape did not ask for goes when the next starts (planning/pass_store.py)."""

    def __init__(self) -> None:
        self.pod_labels: PassStore[int, tuple[Obj, Obj | None, dict[str, str]]] = PassStore()
        self.by_pod = IdentityMemo()  # what a pod alone decides (planning/identity_memo.py)

    def resources(self, pod: Obj) -> tuple[dict[str, float], dict[str, float], bool]:
        """(requests, limits, a DaemonSet's) of this very pod; read-only."""
        return self.by_pod.get("resources", pod, _resources_of)

    def next_scrape(self) -> None:
        self.pod_labels.next_pass()
        self.by_pod.next_pass()


def _resources_of(pod: Obj) -> tuple[dict[str, float], dict[str, float], bool]:
    return pod_resources(pod, "requests"), pod_resources(pod, "limits"), is_daemon(pod)


@dataclass
class _Nodes:
    """The pass's view: nodes by name, the pods bound to each."""

    nodes: dict[str, Obj]
    pods: dict[str, list[Obj]]


def _split(objects: Iterable[Obj]) -> tuple[list[Obj], _Nodes, list[Obj]]:
    pools: list[Obj] = []
    nodes: dict[str, Obj] = {}
    pods: list[Obj] = []
    for o in objects:
        kind = o.get("kind")
        if kind == "NodePool":
            pools.append(o)
        elif kind == "Node":
            nodes[o["metadata"]["name"]] = o
        elif kind == "Pod":
            pods.append(o)
    bound: dict[str, list[Obj]] = {}
    for p in pods:
        name = (p.get("spec") or {}).get("nodeName")
        if name and not is_terminal(p):
            bound.setdefault(name, []).append(p)
    return pools, _Nodes(nodes, bound), pods


def _gauge(name: str, doc: str, labels: Iterable[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=list(labels))


def node_families(view: _Nodes, now: float, memo: ScrapeMemo | None = None) -> list[Metric]:
    """karpenter_nodes_* per node and resource, and karpenter_cluster_utilization_percent (metrics/node)."""
    memo = memo or ScrapeMemo()
    with_type = (*NODE_LABELS, "resource_type")
    fams = {n: _gauge(f"karpenter_nodes_{n}", doc, with_type) for n, doc in (
        ("allocatable", "Node allocatable are the resources allocatable by nodes."),
        ("total_pod_requests", "Node total pod requests are the resources requested by pods bound to nodes, "
                               "including the DaemonSet pods."),
        ("total_pod_limits", "Node total pod limits are the resources specified by pod limits, including the "
                             "DaemonSet pods."),
        ("total_daemon_requests", "Node total daemon requests are the resource requested by DaemonSet pods bound "
                                  "to nodes."),
        ("total_daemon_limits", "Node total daemon limits are the resources specified by DaemonSet pod limits."),
        ("system_overhead", "Node system daemon overhead are the resources reserved for system overhead, the "
                            "difference between the node's capacity and allocatable values are reported by the "
                            "status."))}
    lifetime = _gauge("karpenter_nodes_current_lifetime_seconds", "Node age in seconds", NODE_LABELS)
    allocatable_total: dict[str, float] = {}
    requested_total: dict[str, float] = {}
    for name, node in view.nodes.items():
        meta, status = node.get("metadata") or {}, node.get("status") or {}
        node_labels = meta.get("labels") or {}
        # an empty label is no label to Prometheus: leaving them out keeps a 5,000-node scrape small
        values = {label_name(k): node_labels[k] for k in WELL_KNOWN if node_labels.get(k)}
        values.update(node_name=name, phase=status.get("phase", ""),
                      managed="true" if node_labels.get(L.NODEPOOL_LABEL) else "false")
        allocatable = {r: amount(r, v) for r, v in (status.get("allocatable") or {}).items()}
        capacity = {r: amount(r, v) for r, v in (status.get("capacity") or {}).items()}
        pods = [memo.resources(p) for p in view.pods.get(name, [])]
        daemons = [p for p in pods if p[2]]
        lists = {
            "allocatable": allocatable,
            "system_overhead": {r: capacity[r] - allocatable.get(r, 0.0) for r in capacity},
            "total_pod_requests": _total(p[0] for p in pods), "total_pod_limits": _total(p[1] for p in pods),
            # every allocatable resource, 0 without DaemonSet pods: the capacity dashboard adds these to pod
            # requests and would otherwise fall back to `karpenter_nodes_allocatable*0` per node
            "total_daemon_requests": {r: 0.0 for r in allocatable} | _total(p[0] for p in daemons),
            "total_daemon_limits": {r: 0.0 for r in allocatable} | _total(p[1] for p in daemons),
        }
        for metric, resources in lists.items():
            family = fams[metric]
            for r, v in resources.items():
                family.add_sample(family.name, {**values, "resource_type": resource_type(r)}, v)
        created = timestamp(meta.get("creationTimestamp"))
        if created is not None:
            lifetime.add_sample(lifetime.name, values, max(0.0, now - created))
        for r, v in allocatable.items():
            allocatable_total[r] = allocatable_total.get(r, 0.0) + v
        for r, v in lists["total_pod_requests"].items():
            requested_total[r] = requested_total.get(r, 0.0) + v
    utilization = _gauge("karpenter_cluster_utilization_percent",
                         "Utilization of allocatable resources by pod requests", ["resource_type"])
    for r, v in allocatable_total.items():
        if v:
            utilization.add_metric([resource_type(r)], 100 * requested_total.get(r, 0.0) / v)
    return [*fams.values(), lifetime, utilization]


def _total(per_pod: Iterable[dict[str, float]]) -> dict[str, float]:
    total: dict[str, float] = {}
    for resources in per_pod:
        for r, v in resources.items():
            total[r] = total.get(r, 0.0) + v
    return total


def nodepool_families(pools: list[Obj], view: _Nodes) -> list[Metric]:
    """karpenter_nodepools_limit (spec.limits) and _usage (status.resources, else its nodes' capacity summed, which
    is what Karpenter's counter controller writes there) (metrics/nodepool)."""
    limit = _gauge("karpenter_nodepools_limit", "Limits specified on the nodepool that restrict the quantity of "
                   "resources provisioned. Labeled by nodepool name and resource type.", ["resource_type", "nodepool"])
    usage = _gauge("karpenter_nodepools_usage", "The amount of resources that have been provisioned for a nodepool. "
                   "Labeled by nodepool name and resource type.", ["resource_type", "nodepool"])
    capacity: dict[str, dict[str, float]] = {}
    for node in view.nodes.values():
        pool = ((node.get("metadata") or {}).get("labels") or {}).get(L.NODEPOOL_LABEL)
        if pool:
            _sum(capacity.setdefault(pool, {}), (node.get("status") or {}).get("capacity"))
    for pool in pools:
        name = pool["metadata"]["name"]
        for r, v in ((pool.get("spec") or {}).get("limits") or {}).items():
            limit.add_metric([resource_type(r), name], amount(r, v))
        status = (pool.get("status") or {}).get("resources")
        used = {r: amount(r, v) for r, v in status.items()} if status else capacity.get(name, {})
        for r, v in used.items():
            usage.add_metric([resource_type(r), name], v)
    return [limit, usage]


def pod_state_family(pods: list[Obj], view: _Nodes, memo: ScrapeMemo | None = None) -> Metric:
    """karpenter_pods_state: 1 per pod, labelled with its node's zone, arch, capacity type, type and pool."""
    memo = memo or ScrapeMemo()
    kept = memo.pod_labels
    family = _gauge("karpenter_pods_state", "Pod state is the current state of pods.", POD_LABELS)
    name = family.name
    for pod in pods:
        node = view.nodes.get((pod.get("spec") or {}).get("nodeName") or "")
        key = id(pod)
        got = kept.get(key)
        if got is None or got[0] is not pod or got[1] is not node:
            got = (pod, node, dict(zip(POD_LABELS, pod_state_labels(pod, node), strict=True)))
        kept.now[key] = got
        family.add_sample(name, got[2], 1)  # the kept labels, read-only
    return family


def pod_state_labels(pod: Obj, node: Obj | None) -> list[str]:
    """The POD_LABELS values of a pod on `node` (its node's labels name the pool, zone, arch, type)."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    owners = meta.get("ownerReferences") or []
    owner = (f"/apis/{owners[0].get('apiVersion', '')}/namespaces/{meta.get('namespace', '')}/"
             f"{str(owners[0].get('kind', '')).lower()}s/{owners[0].get('name', '')}") if owners else ""
    node_name = spec.get("nodeName") or ""
    nl = ((node or {}).get("metadata") or {}).get("labels") or {}
    return [meta.get("name", ""), meta.get("namespace", ""), owner, node_name, "true" if node_name else "false",
            nl.get(L.NODEPOOL_LABEL, ""), nl.get(L.ZONE_LABEL, ""), nl.get(L.ARCH_LABEL, ""),
            nl.get(L.CAPACITY_TYPE_LABEL, ""), nl.get(L.INSTANCE_TYPE_LABEL, ""),
            (pod.get("status") or {}).get("phase", ""), "true" if is_true(pod, "Ready") else "false",
            "true" if nl.get(L.NODEPOOL_LABEL) else "false"]


class PodTracker:
    """What Karpenter's pod controller remembers between reconciles: the pods it saw pending (startup) and unbound
    (bound duration); a pod seen Ready (or bound) after that is observed once, from its condition's transition."""

    def __init__(self) -> None:
        self.pending: set[str] = set()
        self.unbound: set[str] = set()
        self.known: set[str] = set()
        self.since: float | None = None  # when watching began (begin(), else the first update)
        self._lock = threading.Lock()

    def begin(self, at: float) -> None:
        """Watching starts (a worker attached its cache): a pod created before and Ready after was pending then."""
        with self._lock:
            self.since = at

    def update(self, pods: Iterable[Obj], now: float) -> None:
        with self._lock:
            if self.since is None:
                self.since = now
            seen: set[str] = set()
            for pod in pods:
                meta = pod.get("metadata") or {}
                key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
                seen.add(key)
                phase = (pod.get("status") or {}).get("phase")
                if key in self.known and phase != "Pending" and key not in self.pending and key not in self.unbound:
                    continue  # the common case at 72k pods: a running pod already accounted for
                created = timestamp(meta.get("creationTimestamp"))
                if key not in self.known and self._started_while_watched(pod, created):
                    self.pending.add(key)  # pending when the tracker began, Ready before the cache showed it
                self._startup(key, pod, created, now)
                self._bound(key, pod, created, now)
            self.pending &= seen
            self.unbound &= seen
            self.known = seen

    def _started_while_watched(self, pod: Obj, created: float | None) -> bool:
        """A pod the cache shows first already Ready, that was created before the tracker began and turned Ready
        after: it was pending while this worker ran, though the cache had not synced its kind yet. The Ready time is
        known to the second only, so a pod that turned Ready in the second the tracker began counts: its
        transition, 20:52:00, may have come after a start at 20:52:00.05 (a test's worker that a fast world's pod
        outran was never observed)."""
        ready = condition(pod, "Ready")
        at = timestamp((ready or {}).get("lastTransitionTime"))
        return (self.since is not None and created is not None and at is not None
                and created < self.since < at + 1.0 and (ready or {}).get("status") == "True")

    def _startup(self, key: str, pod: Obj, created: float | None, now: float) -> None:
        if (pod.get("status") or {}).get("phase") == "Pending":
            self.pending.add(key)
        elif key in self.pending:
            ready = condition(pod, "Ready")
            if ready is not None and ready.get("status") == "True":
                at = timestamp(ready.get("lastTransitionTime")) or now
                if created is not None:
                    km.POD_STARTUP_DURATION.observe(max(0.0, at - created))
                self.pending.discard(key)
            elif is_terminal(pod):
                self.pending.discard(key)

    def _bound(self, key: str, pod: Obj, created: float | None, now: float) -> None:
        scheduled = condition(pod, "PodScheduled")
        bound = scheduled is not None and scheduled.get("status") == "True"
        if not bound and (pod.get("status") or {}).get("phase") == "Pending":
            self.unbound.add(key)
        elif bound and key in self.unbound:
            at = timestamp(scheduled.get("lastTransitionTime")) if scheduled else None
            if created is not None:
                km.POD_BOUND_DURATION.observe(max(0.0, (at or now) - created))
            self.unbound.discard(key)


def pending_families(pods: list[Obj], now: float) -> list[Metric]:
    """karpenter_pods_unstarted_time_seconds and _unbound_time_seconds: per pending pod, its age so far."""
    unstarted = _gauge("karpenter_pods_unstarted_time_seconds", "The time from pod creation until the pod is running.",
                       ["name", "namespace"])
    unbound = _gauge("karpenter_pods_unbound_time_seconds", "The time from pod creation until the pod is bound.",
                     ["name", "namespace"])
    for pod in pods:
        if (pod.get("status") or {}).get("phase") != "Pending":
            continue
        meta = pod.get("metadata") or {}
        created = timestamp(meta.get("creationTimestamp"))
        if created is None:
            continue
        labels = [meta.get("name", ""), meta.get("namespace", "")]
        unstarted.add_metric(labels, max(0.0, now - created))
        if not is_true(pod, "PodScheduled"):
            unbound.add_metric(labels, max(0.0, now - created))
    return [unstarted, unbound]


class KarpenterStateCollector:
    """The state gauges from the cache of the worker that attached last (one per process in production)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._sources: list[Source] = []
        self._clock = clock
        self.pods = PodTracker()
        self.memo = ScrapeMemo()
        self._unsynced_since: float | None = None
        self._lock = threading.Lock()

    def attach(self, source: Source) -> None:
        """A worker's cache, from now on: pods pending from here are this worker's to observe."""
        with self._lock:
            self._sources.append(source)
        self.pods.begin(self._clock())

    def detach(self, source: Source) -> None:
        with self._lock:
            if source in self._sources:
                self._sources.remove(source)

    def _source(self) -> Source | None:
        with self._lock:
            return self._sources[-1] if self._sources else None

    def tick(self) -> None:
        """Remember pending pods between scrapes (Karpenter's pod controller reconciles on every change)."""
        source = self._source()
        if source is not None:
            objects, _ = source()
            self.pods.update((o for o in objects if o.get("kind") == "Pod"), self._clock())

    def describe(self) -> Iterator[Metric]:
        return iter(())  # families are built from the cache; nothing to check at registration

    def collect(self) -> Iterator[Metric]:
        source = self._source()
        if source is None:
            return
        objects, synced = source()
        now = self._clock()
        pools, view, pods = _split(objects)
        self.pods.update(pods, now)
        yield from node_families(view, now, self.memo)
        yield from nodepool_families(pools, view)
        yield pod_state_family(pods, view, self.memo)
        self.memo.next_scrape()
        yield from pending_families(pods, now)
        yield from self._cluster_state(objects, synced, now)

    def _cluster_state(self, objects: list[Obj], synced: bool, now: float) -> Iterator[Metric]:
        """karpenter_cluster_state_*: nodes and claims by providerID (cluster state's key), the cache's sync."""
        ids = {(o.get("spec") or {}).get("providerID") or (o.get("status") or {}).get("providerID")
               or f"{o.get('kind')}/{o['metadata']['name']}"
               for o in objects if o.get("kind") in ("Node", "NodeClaim")}
        if synced:
            self._unsynced_since = None
        elif self._unsynced_since is None:
            self._unsynced_since = now
        yield GaugeMetricFamily("karpenter_cluster_state_node_count", "Current count of nodes in cluster state",
                                value=len(ids))
        yield GaugeMetricFamily("karpenter_cluster_state_synced", "Returns 1 if cluster state is synced and 0 "
                                "otherwise.", value=1 if synced else 0)
        unsynced = 0 if self._unsynced_since is None else now - self._unsynced_since
        yield GaugeMetricFamily("karpenter_cluster_state_unsynced_time_seconds",
                                "The time for which cluster state is not synced", value=unsynced)


STATE = KarpenterStateCollector()
REGISTRY.register(STATE)


def cache_source(cache: Any) -> Source:
    """A runtime.cluster_cache.ClusterCache as a Source: its objects, and whether it is healthy (synced)."""
    return lambda: (cache.objects(), bool(cache.healthy()))
