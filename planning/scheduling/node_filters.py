"""Which existing nodes may a pod go on: kube-scheduler's filters, one pod at a time, on plain objects.

The reference the planner's simulation (planning/scheduling/simulation.py) and the emulator's scheduler are both held to
(tests/planning/data/kube_scheduler_cases.yaml, the differential test): NodeUnschedulable, NodeResourcesFit
(init containers, sidecars, overhead: pod_requests.py), NodeAffinity, TaintToleration, NodePorts,
InterPodAffinity, PodTopologySpread and VolumeBinding / VolumeZone, in the modules named for them. Slow and
simple on purpose (every pod against every node): a few hundred nodes at most. docs/semantics.md §3.5.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from planning.pod_requests import Requests, pod_requests, resource_list
from planning.scheduling.host_ports import conflicts, host_ports
from planning.scheduling.pod_affinity import Placed, affinity_ok, anti_affinity_ok, required_terms
from planning.scheduling.topology_spread import SpreadRule, counts_pod, node_counts, parse_spread, skew_ok
from planning.scheduling.volume_topology import Volumes, needs_ok, volume_needs
from planning.selectors import match_requirement, tolerates, tolerates_all

UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


@dataclass
class _Node:
    name: str
    labels: dict[str, str]
    taints: list[dict[str, Any]]
    unschedulable: bool
    alloc: Requests
    max_pods: int
    pods: list[dict[str, Any]]


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def _ns(pod: Mapping[str, Any]) -> str:
    return _meta(pod).get("namespace") or "default"


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict(_meta(obj).get("labels") or {})


def _node(raw: Mapping[str, Any], pods: list[dict[str, Any]]) -> _Node:
    status = raw.get("status") or {}
    alloc = status.get("allocatable") or status.get("capacity") or {}
    return _Node(_meta(raw).get("name", ""), _labels(raw), list(_spec(raw).get("taints") or ()),
                 bool(_spec(raw).get("unschedulable")), resource_list(alloc), int(alloc.get("pods") or 0), pods)


def _terms_match(terms: Sequence[Mapping[str, Any]], labels: Mapping[str, str], name: str) -> bool:
    """Required node affinity: terms ORed, their matchExpressions (labels) and matchFields (metadata.name) ANDed;
    a term with neither matches nothing."""
    if not terms:
        return True
    for t in terms:
        exprs, fields = t.get("matchExpressions") or (), t.get("matchFields") or ()
        if (exprs or fields) and all(
                match_requirement(e.get("key", ""), e.get("operator", ""), e.get("values") or (), labels)
                for e in exprs) and all(
                match_requirement(f.get("key", ""), f.get("operator", ""), f.get("values") or (),
                                  {"metadata.name": name}) for f in fields):
            return True
    return False


def _node_affinity(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    req = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    return list((req or {}).get("nodeSelectorTerms") or ())


def _selects(spec: Mapping[str, Any], labels: Mapping[str, str], name: str) -> bool:
    return all(labels.get(k) == v for k, v in (spec.get("nodeSelector") or {}).items()) and \
        _terms_match(_node_affinity(spec), labels, name)


def _fits(req: Requests, node: _Node) -> bool:
    used = Requests()
    for p in node.pods:
        used = used + pod_requests(_spec(p), p.get("status"))  # a bound pod's resize counts
    if len(node.pods) + 1 > node.max_pods:
        return False
    if req.cpu and req.cpu > node.alloc.cpu - used.cpu + 1e-9:
        return False
    if req.mem and req.mem > node.alloc.mem - used.mem:
        return False
    return not (req.eph and req.eph > node.alloc.eph - used.eph)


def _placed(nodes: Sequence[_Node]) -> list[Placed]:
    out: list[Placed] = []
    for n in nodes:
        for p in n.pods:
            anti = required_terms(_spec(p).get("affinity") or {}, "podAntiAffinity", _ns(p))
            out.append((n.labels, _ns(p), _labels(p), anti))
    return out


def _spread_ok(pod: Mapping[str, Any], rules: Sequence[SpreadRule], node: _Node, nodes: Sequence[_Node]) -> bool:
    spec, ns, labels = _spec(pod), _ns(pod), _labels(pod)
    keys = [r.key for r in rules]
    for rule in rules:
        if rule.key not in node.labels:
            return False
        counts: dict[str, int] = {}
        for n in nodes:
            if not node_counts(rule, keys, n.labels, n.taints, spec.get("nodeSelector") or {},
                               _node_affinity(spec), spec.get("tolerations") or ()):
                continue
            value = n.labels[rule.key]
            counts[value] = counts.get(value, 0) + sum(
                1 for p in n.pods if not _meta(p).get("deletionTimestamp") and counts_pod(rule, ns, _ns(p), _labels(p)))
        if not skew_ok(rule, counts_pod(rule, ns, ns, labels), counts, counts, node.labels[rule.key]):
            return False
    return True


def feasible_nodes(pod: Mapping[str, Any], nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]],
                   volumes: Iterable[Mapping[str, Any]] = ()) -> list[str]:
    """Names of the `nodes` kube-scheduler's filters let `pod` go on, given the bound `pods` and the PVs, PVCs and
    StorageClasses in `volumes`; in the nodes' order."""
    by_node: dict[str, list[dict[str, Any]]] = {}
    for p in pods:
        if _spec(p).get("nodeName") and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            by_node.setdefault(_spec(p)["nodeName"], []).append(dict(p))
    infos = [_node(n, by_node.get(_meta(n).get("name", ""), [])) for n in nodes]
    spec, ns, labels = _spec(pod), _ns(pod), _labels(pod)
    req, ports = pod_requests(spec, pod.get("status")), host_ports(spec)
    affinity = spec.get("affinity") or {}
    aff, anti = required_terms(affinity, "podAffinity", ns), required_terms(affinity, "podAntiAffinity", ns)
    rules = [r for r in parse_spread(spec.get("topologySpreadConstraints") or (), labels) if r.hard]
    needs = volume_needs(ns, spec, Volumes.from_objects(volumes))
    placed = _placed(infos)
    tolerations = spec.get("tolerations") or ()
    out = []
    for n in infos:
        if n.unschedulable and not tolerates(tolerations, UNSCHEDULABLE_TAINT):
            continue
        if not (_fits(req, n) and _selects(spec, n.labels, n.name) and tolerates_all(tolerations, n.taints)):
            continue
        if ports and conflicts(ports, (hp for p in n.pods for hp in host_ports(_spec(p)))):
            continue
        if not (affinity_ok(aff, ns, labels, n.labels, placed)
                and anti_affinity_ok(anti, ns, labels, n.labels, placed)):
            continue
        if (rules and not _spread_ok(pod, rules, n, infos)) or not needs_ok(needs, n.labels):
            continue
        out.append(n.name)
    return out
