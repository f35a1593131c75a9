"""kube-scheduler's PodTopologySpread (whenUnsatisfiable: DoNotSchedule) and required pod anti-affinity filters,
for the simulator's scheduler: without them a spread workload landed packed, so a provisioner that spreads (as
Karpenter's does) launched nodes the simulator then left empty (docs/decisions.md §16).

Domains are node names (`kubernetes.io/hostname`) or a node label's values (zones); a domain's count is the
number of the namespace's pods matching the constraint's selector bound to nodes of that domain. As in
kube-scheduler, a node passes when its domain's count + 1 - the smallest count among eligible domains (the nodes
the pod could otherwise use) is at most maxSkew. Counts are built once per scheduling round per selector and
updated as the round binds pods.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from simulator.pods import is_deleting, meta, pod_terminal
from simulator.selectors import match_label_selector_object

HOSTNAME = "kubernetes.io/hostname"
Obj = dict[str, Any]


def _domain(node: Obj, key: str) -> str | None:
    labels = meta(node).get("labels") or {}
    if key == HOSTNAME:
        return labels.get(HOSTNAME) or meta(node).get("name")
    return labels.get(key)


def _constraints(spec: Obj) -> list[tuple[str, int, Obj]]:
    """(topologyKey, maxSkew, selector) of the hard spread constraints and of required hostname anti-affinity
    (which is a spread with maxSkew 0 against pods already there)."""
    out = [(c.get("topologyKey") or "", int(c.get("maxSkew") or 1), c.get("labelSelector") or {})
           for c in spec.get("topologySpreadConstraints") or ()
           if c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"]
    anti = ((spec.get("affinity") or {}).get("podAntiAffinity") or {})
    out += [(t.get("topologyKey") or "", 0, t.get("labelSelector") or {})
            for t in anti.get("requiredDuringSchedulingIgnoredDuringExecution") or ()]
    return [c for c in out if c[0]]


class TopologyRound:
    """One scheduling round's counts: (namespace, topologyKey, selector) -> domain -> matching pods."""

    def __init__(self, pods: Iterable[Obj], nodes: dict[str, Obj]) -> None:
        self._pods = [p for p in pods if (p.get("spec") or {}).get("nodeName") and not pod_terminal(p)
                      and not is_deleting(p)]
        self._nodes = nodes
        self._counts: dict[tuple[str, str, str], dict[str, int]] = {}
        self._selectors: dict[tuple[str, str, str], Obj] = {}

    def _count(self, ns: str, key: str, selector: Obj) -> dict[str, int]:
        ident = (ns, key, repr(sorted(selector.items())))
        counts = self._counts.get(ident)
        if counts is None:
            counts = self._counts[ident] = {}
            self._selectors[ident] = selector
            for p in self._pods:
                node = self._nodes.get(p["spec"]["nodeName"])
                if node is None or meta(p).get("namespace") != ns or \
                        not match_label_selector_object(selector, meta(p).get("labels") or {}):
                    continue
                domain = _domain(node, key)
                if domain is not None:
                    counts[domain] = counts.get(domain, 0) + 1
        return counts

    def allows(self, pod: Obj, node: Obj, eligible: list[Obj]) -> bool:
        """Whether binding `pod` to `node` keeps every hard constraint; `eligible`: the nodes that pass the pod's
        other filters (their domains are the ones whose minimum counts)."""
        ns = meta(pod).get("namespace") or ""
        for key, max_skew, selector in _constraints(pod.get("spec") or {}):
            domain = _domain(node, key)
            if domain is None:
                return False
            counts = self._count(ns, key, selector)
            if max_skew == 0:  # anti-affinity: no matching pod in the domain
                if counts.get(domain, 0) > 0:
                    return False
                continue
            domains = {d for d in (_domain(n, key) for n in eligible) if d is not None} | {domain}
            if counts.get(domain, 0) + 1 - min(counts.get(d, 0) for d in domains) > max_skew:
                return False
        return True

    def bind(self, pod: Obj, node: Obj) -> None:
        """Count a pod the round has just bound."""
        ns = meta(pod).get("namespace") or ""
        labels = meta(pod).get("labels") or {}
        for ident, counts in self._counts.items():
            if ident[0] == ns and match_label_selector_object(self._selectors[ident], labels):
                domain = _domain(node, ident[1])
                if domain is not None:
                    counts[domain] = counts.get(domain, 0) + 1


def has_constraints(spec: Obj) -> bool:
    return bool(_constraints(spec))
