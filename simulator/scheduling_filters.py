"""kube-scheduler's Filter plugins in their order, over a view of the cluster: which nodes may a pod go on, and the
`0/N nodes are available: ...` message when none may.

Order (kube-scheduler's default profile): NodeUnschedulable, TaintToleration, NodeAffinity, NodePorts,
NodeResourcesFit, VolumeBinding, VolumeZone, PodTopologySpread, InterPodAffinity. A node's reasons are those of the
first plugin that rejects it, as the framework stops there. `feasible_nodes` is the pure entry point the tests and
the differential test call; the emulator's scheduler (simulator/scheduler.py) drives the same classes over its
store, with incremental resource usage.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from simulator.pods import meta, pod_terminal
from simulator.scheduling import node_affinity_matches, tolerates, untolerated_taint
from simulator.scheduling_affinity import AffinityCheck, AffinityRound, has_required_anti_affinity
from simulator.scheduling_ports import ERR_REASON as ERR_PORTS
from simulator.scheduling_ports import conflicts, host_ports
from simulator.scheduling_preferences import PreferredRound
from simulator.scheduling_requests import PODS, Requests, checked, insufficient, node_allocatable, pod_requests
from simulator.scheduling_volumes import VolumeCheck, Volumes, claim_names
from simulator.topology import ERR_NOT_MATCH, SpreadCheck, SpreadCounts, spread_constraints

Obj = dict[str, Any]
ERR_UNSCHEDULABLE = "node(s) were unschedulable"
ERR_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
# Reasons kube-scheduler returns as Unschedulable (preemption could help); every other is UnschedulableAndUnresolvable.
_RESOLVABLE = (ERR_PORTS, "Too many pods", "Insufficient ", ERR_NOT_MATCH, "node(s) didn't match pod anti-affinity",
               "node(s) didn't satisfy existing pods anti-affinity")


@dataclass
class ClusterView:
    """What the filters read: every node (a spread domain even when the pod may not use it), the pods on a node
    (assigned, not terminal), a node's requested resources and pod count, pods with required anti-affinity and
    their nodes, volumes, namespace labels. Callables, so the emulator can answer from its indexes."""

    nodes: Callable[[], Iterable[Obj]]
    pods_on: Callable[[str], list[Obj]]
    usage: Callable[[str], tuple[Requests, int]]
    anti_pods: Callable[[], Iterable[tuple[Obj, Obj]]]
    volumes: Volumes
    ns_labels: Callable[[str], dict[str, str]]

    alloc_cache: dict[str, tuple[Any, Requests]] = field(default_factory=dict)  # may outlive the round

    def __post_init__(self) -> None:
        self.spread = SpreadCounts(self.nodes, self.pods_on)
        self.affinity = AffinityRound(self.nodes, self.pods_on, self.anti_pods, self.ns_labels)
        self.preferred = PreferredRound(self.nodes, self.pods_on, self.ns_labels)

    def allocatable(self, node: Obj) -> Requests:
        """The node's allocatable, parsed once per round per node version."""
        name, version = node["metadata"]["name"], node["metadata"].get("resourceVersion")
        cached = self.alloc_cache.get(name)
        if cached is None or cached[0] != version:
            cached = self.alloc_cache[name] = (version, node_allocatable(node))
        return cached[1]

    def bind(self, pod: Obj, node: Obj) -> None:
        """Keep the round's counts current once `pod` is bound to `node` (the pod indexes are the caller's)."""
        self.spread.bind(pod, node)
        self.affinity.bind(pod, node)
        self.preferred.bind(pod, node)


class PodFilters:
    """One pod's PreFilter state; `reasons(node)` runs the Filter plugins on a node."""

    def __init__(self, pod: Obj, view: ClusterView) -> None:
        self.pod, self.spec, self.view = pod, pod.get("spec") or {}, view
        self.request = pod_requests(pod)
        self._checked = checked(self.request)
        self.ports = host_ports(pod)
        self.volumes = VolumeCheck(pod, view.volumes) if claim_names(pod) else None
        self.prefilter = self.volumes.refusal if self.volumes is not None else None
        constraints = spread_constraints(pod)
        self.spread = SpreadCheck(pod, constraints, view.spread) if constraints and not self.prefilter else None
        affinity = AffinityCheck(pod, view.affinity) if not self.prefilter else None
        self.affinity = affinity if affinity is not None and affinity.needed() else None
        self._asks_node = bool(self.spec.get("nodeSelector") or self.spec.get("affinity") or self.ports)
        self._cluster = any(c is not None for c in (self.volumes, self.spread, self.affinity))

    def fits(self, node: Obj) -> bool:
        """reasons(node) == []."""
        used, count = self.view.usage(node["metadata"]["name"])
        return self.fits_with(node, used, count, self.view.allocatable(node))

    def fits_with(self, node: Obj, used: Requests, count: int, alloc: Requests) -> bool:
        """fits(node) given the node's usage and allocatable, with the resource check first: on a busy cluster
        most nodes fail it, cheaply."""
        if self.prefilter or count + 1 > alloc.get(PODS, 0):
            return False
        for name, amount in self._checked:
            if amount > alloc.get(name, 0) - used.get(name, 0):
                return False
        if (self._asks_node or node.get("spec")) and self._node_rules(node):
            return False
        return not (self._cluster and self._cluster_rules(node))

    def reasons(self, node: Obj) -> list[str]:
        """The first rejecting plugin's reasons, in kube-scheduler's plugin order; [] when the node passes all."""
        if self.prefilter:
            return [self.prefilter]
        return self._node_rules(node) or self._lacking(node) or self._cluster_rules(node)

    def _node_rules(self, node: Obj) -> list[str]:
        """NodeUnschedulable, TaintToleration, NodeAffinity, NodePorts."""
        spec = node.get("spec") or {}
        if spec.get("unschedulable") and not tolerates(self.spec.get("tolerations") or [], UNSCHEDULABLE_TAINT):
            return [ERR_UNSCHEDULABLE]
        taint = untolerated_taint(self.spec, node) if spec.get("taints") else None
        if taint is not None:
            return [f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value') or ''}}}"]
        if (self.spec.get("nodeSelector") or self.spec.get("affinity")) and not node_affinity_matches(self.spec, node):
            return [ERR_NODE_AFFINITY]
        if self.ports and conflicts(self.ports, (p for o in self.view.pods_on(node["metadata"]["name"])
                                                 for p in host_ports(o))):
            return [ERR_PORTS]
        return []

    def _lacking(self, node: Obj) -> list[str]:
        """NodeResourcesFit."""
        used, count = self.view.usage(node["metadata"]["name"])
        return insufficient(self._checked, self.view.allocatable(node), used, count)

    def _cluster_rules(self, node: Obj) -> list[str]:
        """VolumeBinding + VolumeZone, PodTopologySpread, InterPodAffinity."""
        for check in (self.volumes, self.spread, self.affinity):
            reason = check.reason(node) if check is not None else None
            if reason:
                return [reason]
        return []


def fit_error(total: int, reasons: dict[str, list[str]], prefilter: str | None = None) -> str:
    """kube-scheduler's FitError message with its preemption part (the emulator never preempts, so every node is
    one kube's default preemption would find no victims on, or not helpful on; after a PreFilter refusal a
    v1.3x cluster says `N No preemption victims found for incoming pod`)."""
    if total == 0:
        return "no nodes available to schedule pods"  # kube-scheduler's ErrNoNodesAvailable
    msg = f"0/{total} nodes are available:"
    histogram: dict[str, int] = {}
    helpless = 0
    if prefilter:
        msg += f" {prefilter}."
    else:
        for node_reasons in reasons.values():
            for r in node_reasons:
                histogram[r] = histogram.get(r, 0) + 1
            if not any(r.startswith(_RESOLVABLE) for r in node_reasons):
                helpless += 1
        if histogram:
            msg += " " + ", ".join(sorted(f"{n} {r}" for r, n in histogram.items())) + "."
    parts = sorted(p for p in (f"{helpless} Preemption is not helpful for scheduling" if helpless else "",
                               f"{total - helpless} No preemption victims found for incoming pod"
                               if total - helpless else "") if p)
    return msg + f" preemption: 0/{total} nodes are available: {', '.join(parts)}.."


def view_of(nodes: Iterable[Obj], pods: Iterable[Obj], volumes: Volumes | None = None,
            namespaces: Iterable[Obj] = ()) -> tuple[ClusterView, dict[str, list[Obj]]]:
    """A view over plain lists (for tests and the differential test), and its pods-by-node index."""
    node_list = list(nodes)
    by_name = {meta(n).get("name") or "": n for n in node_list}
    by_node: dict[str, list[Obj]] = {name: [] for name in by_name}
    for p in pods:
        where = (p.get("spec") or {}).get("nodeName")
        if where in by_node and not pod_terminal(p):
            by_node[where].append(p)
    ns_labels = {meta(n).get("name") or "": meta(n).get("labels") or {} for n in namespaces}

    def usage(name: str) -> tuple[Requests, int]:
        used: Requests = {}
        for p in by_node.get(name, ()):
            for k, v in pod_requests(p).items():
                used[k] = used.get(k, 0) + v
        return used, len(by_node.get(name, ()))

    view = ClusterView(lambda: node_list, lambda name: by_node.get(name, []), usage,
                       lambda: [(p, by_name[n]) for n, ps in by_node.items() for p in ps
                                if has_required_anti_affinity(p)],
                       volumes or Volumes(), lambda ns: ns_labels.get(ns, {}))
    return view, by_node


def filter_reasons(pod: Obj, nodes: Iterable[Obj], pods: Iterable[Obj] = (), pvs: Iterable[Obj] = (),
                   pvcs: Iterable[Obj] = (), storage_classes: Iterable[Obj] = (),
                   namespaces: Iterable[Obj] = ()) -> dict[str, list[str]]:
    """Every node's rejecting reasons for `pod` ([] where it fits), as kube-scheduler's filters decide."""
    node_list = list(nodes)
    view, _ = view_of(node_list, pods, Volumes.of(pvs, pvcs, storage_classes), namespaces)
    filters = PodFilters(pod, view)
    return {meta(n).get("name") or "": filters.reasons(n) for n in node_list}


def feasible_nodes(pod: Obj, nodes: Iterable[Obj], pods: Iterable[Obj] = (), pvs: Iterable[Obj] = (),
                   pvcs: Iterable[Obj] = (), storage_classes: Iterable[Obj] = (),
                   namespaces: Iterable[Obj] = ()) -> list[str]:
    """The names of the nodes `pod` may be bound to, in the order given."""
    return [name for name, why in filter_reasons(pod, nodes, pods, pvs, pvcs, storage_classes, namespaces).items()
            if not why]

