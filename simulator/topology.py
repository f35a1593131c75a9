"""kube-scheduler's PodTopologySpread filter (whenUnsatisfiable: DoNotSchedule), for the simulator's scheduler:
without it a spread workload landed packed, so a provisioner that spreads (as Karpenter's does) launched nodes the
simulator then left empty (docs/decisions.md §16).

As in kubernetes `pkg/scheduler/framework/plugins/podtopologyspread` (common.go, filtering.go):
- a constraint's selector is its labelSelector, plus `key=value` for each of `matchLabelKeys` the pod carries;
- its domains are the values of `topologyKey` on every node that carries ALL the pod's constraints' keys and
  passes its inclusion policies: `nodeAffinityPolicy` (default Honor: the pod's nodeSelector and required node
  affinity) and `nodeTaintsPolicy` (default Ignore; Honor: no untolerated NoSchedule / NoExecute taint). Resource
  fit, cordon and every other filter play no part, so a full or cordoned node is still a domain;
- a domain's count is the pods of the pod's namespace matching the selector on its nodes, terminating pods aside;
- a node passes when count(its domain) + (1 if the pod matches the selector) - global minimum <= maxSkew, the
  global minimum being 0 while there are fewer domains than `minDomains`; a node without the key fails outright.
Counts are built once per scheduling round per distinct (selector, key, policy inputs) and updated as the round
binds pods, so a round of spread pods over thousands of nodes stays linear.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from simulator.pods import is_deleting, meta
from simulator.scheduling import node_affinity_matches, untolerated_taint
from simulator.selectors import match_label_selector_object

Obj = dict[str, Any]
ERR_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_MISSING_LABEL = "node(s) didn't match pod topology spread constraints (missing required label)"


@dataclass(frozen=True)
class Spread:
    """One DoNotSchedule constraint as the filter reads it (selector already merged with matchLabelKeys)."""

    max_skew: int
    key: str
    selector: Obj | None
    min_domains: int
    honor_affinity: bool
    honor_taints: bool

    def ident(self, pod: Obj, keys: tuple[str, ...]) -> tuple[Any, ...]:
        """What decides this constraint's counts for `pod`: the cache key of a round."""
        spec = pod.get("spec") or {}
        affinity = repr((spec.get("nodeSelector"), ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"))) if self.honor_affinity else ""
        taints = repr(spec.get("tolerations")) if self.honor_taints else ""
        return meta(pod).get("namespace") or "", repr(self.selector), self.key, keys, affinity, taints


def _merge_match_label_keys(constraint: Obj, pod_labels: dict[str, str]) -> Obj | None:
    selector = constraint.get("labelSelector")
    extra = {k: pod_labels[k] for k in constraint.get("matchLabelKeys") or () if k in pod_labels}
    if not extra:
        return selector
    merged = dict(selector or {})
    merged["matchLabels"] = {**(merged.get("matchLabels") or {}), **extra}
    return merged


def spread_constraints(pod: Obj) -> list[Spread]:
    spec = pod.get("spec") or {}
    pod_labels = meta(pod).get("labels") or {}
    return [Spread(int(c.get("maxSkew") or 1), c.get("topologyKey") or "", _merge_match_label_keys(c, pod_labels),
                   int(c.get("minDomains") or 1), c.get("nodeAffinityPolicy", "Honor") == "Honor",
                   c.get("nodeTaintsPolicy", "Ignore") == "Honor")
            for c in spec.get("topologySpreadConstraints") or ()
            if c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"]


def _includes(pod: Obj, c: Spread, keys: tuple[str, ...]) -> Callable[[Obj], bool]:
    spec = pod.get("spec") or {}

    def included(node: Obj) -> bool:
        node_labels = meta(node).get("labels") or {}
        if any(k not in node_labels for k in keys):
            return False
        if c.honor_affinity and not node_affinity_matches(spec, node):
            return False
        return not (c.honor_taints and untolerated_taint(spec, node) is not None)
    return included


@dataclass
class _Counts:
    namespace: str
    constraint: Spread
    included: Callable[[Obj], bool]
    by_domain: dict[str, int]


class SpreadCounts:
    """One scheduling round's domain counts, shared by the round's pods and kept current as it binds them."""

    def __init__(self, nodes: Callable[[], Iterable[Obj]], pods_on: Callable[[str], Iterable[Obj]]) -> None:
        self._nodes = nodes
        self._pods_on = pods_on
        self._cache: dict[tuple[Any, ...], _Counts] = {}

    def counts(self, pod: Obj, c: Spread, keys: tuple[str, ...]) -> dict[str, int]:
        ident = c.ident(pod, keys)
        entry = self._cache.get(ident)
        if entry is None:
            ns = ident[0]
            included = _includes(pod, c, keys)
            by_domain: dict[str, int] = {}
            for node in self._nodes():
                if not included(node):
                    continue
                domain = meta(node)["labels"][c.key]
                by_domain[domain] = by_domain.get(domain, 0) + sum(
                    1 for p in self._pods_on(meta(node).get("name") or "") if _counts_for(p, ns, c.selector))
            entry = self._cache[ident] = _Counts(ns, c, included, by_domain)
        return entry.by_domain

    def bind(self, pod: Obj, node: Obj) -> None:
        """Count a pod the round has just bound."""
        for entry in self._cache.values():
            if _counts_for(pod, entry.namespace, entry.constraint.selector) and entry.included(node):
                domain = meta(node)["labels"][entry.constraint.key]
                entry.by_domain[domain] = entry.by_domain.get(domain, 0) + 1


def _counts_for(pod: Obj, namespace: str, selector: Obj | None) -> bool:
    return (meta(pod).get("namespace") or "") == namespace and not is_deleting(pod) and \
        match_label_selector_object(selector, meta(pod).get("labels") or {})


class SpreadCheck:
    """One pod's constraints with their counts and global minimums, computed once and asked per node."""

    def __init__(self, pod: Obj, constraints: list[Spread], counts: SpreadCounts) -> None:
        keys = tuple(c.key for c in constraints)
        pod_labels = meta(pod).get("labels") or {}
        self._rows = []
        for c in constraints:
            by_domain = counts.counts(pod, c, keys)
            minimum = 0 if len(by_domain) < c.min_domains else min(by_domain.values(), default=0)
            self_match = 1 if match_label_selector_object(c.selector, pod_labels) else 0
            self._rows.append((c, by_domain, minimum, self_match))

    def reason(self, node: Obj) -> str | None:
        """Why the node fails the filter, or None when it passes."""
        node_labels = meta(node).get("labels") or {}
        for c, by_domain, minimum, self_match in self._rows:
            domain = node_labels.get(c.key)
            if domain is None:
                return ERR_MISSING_LABEL
            if by_domain.get(domain, 0) + self_match - minimum > c.max_skew:
                return ERR_NOT_MATCH
        return None
