"""Pod affinity and anti-affinity terms on any topology key, and preferred node affinity (kube InterPodAffinity).

A term matches a pod by namespace and label selector; it is satisfied or violated per topology domain (the
nodes sharing the term's `topologyKey` value). kube's rules, which Karpenter's topology.go follows:
- required affinity: the node has every term's key, and some pod matching ALL the terms runs in the node's
  domain of each term; when no pod anywhere matches them and the pod matches its own terms, it may go on any
  node carrying the keys (the first pod of a group that attracts itself);
- required anti-affinity: no pod matching a term runs in the node's domain of that term; and, symmetric, no
  pod already placed has an anti-affinity term that matches this pod in the node's domain of that term.
Preferred terms are the same shapes with a weight: the simulation treats them as required and relaxes them in
Karpenter's order (preferences.py). docs/semantics.md §3.5.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from planning.selectors import match_label_selector

NS_NAME_LABEL = "kubernetes.io/metadata.name"  # every namespace carries its own name as this label


@dataclass(frozen=True, slots=True)
class PodTerm:
    """One PodAffinityTerm: which pods (namespaces, selector) and over which topology key."""

    selector: Mapping[str, Any] | None
    key: str
    namespaces: frozenset[str] = frozenset()
    ns_selector: Mapping[str, Any] | None = field(default=None, compare=False)
    weight: int = 0

    def matches(self, namespace: str, labels: Mapping[str, str]) -> bool:
        if namespace not in self.namespaces and not (
                self.ns_selector is not None and match_label_selector(self.ns_selector, {NS_NAME_LABEL: namespace})):
            return False
        return match_label_selector(self.selector, labels)


def parse_term(raw: Mapping[str, Any], namespace: str, weight: int = 0) -> PodTerm:
    """A term's namespaces: those listed, those its namespaceSelector picks (by name only: the simulation does not
    know namespace labels; `{}` picks all), and the pod's own when neither is given."""
    names = frozenset(raw.get("namespaces") or ())
    ns_sel = raw.get("namespaceSelector")
    if not names and ns_sel is None:
        names = frozenset((namespace,))
    return PodTerm(raw.get("labelSelector"), raw.get("topologyKey") or "", names, ns_sel, weight)


def required_terms(affinity: Mapping[str, Any], kind: str, namespace: str) -> tuple[PodTerm, ...]:
    """`kind` is podAffinity or podAntiAffinity."""
    section = affinity.get(kind) or {}
    return tuple(parse_term(t, namespace) for t in section.get("requiredDuringSchedulingIgnoredDuringExecution") or ())


def preferred_terms(affinity: Mapping[str, Any], kind: str, namespace: str) -> tuple[PodTerm, ...]:
    """Weighted terms, heaviest first (stable): the order Karpenter relaxes them in."""
    section = affinity.get(kind) or {}
    weighted = section.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
    terms = [parse_term(w.get("podAffinityTerm") or {}, namespace, int(w.get("weight") or 0)) for w in weighted]
    return tuple(sorted(terms, key=lambda t: -t.weight))


def matches_all(terms: Sequence[PodTerm], namespace: str, labels: Mapping[str, str]) -> bool:
    return all(t.matches(namespace, labels) for t in terms)


Placed = tuple[Mapping[str, str], str, Mapping[str, str], Sequence[PodTerm]]  # node labels, ns, labels, anti


def affinity_ok(terms: Sequence[PodTerm], namespace: str, labels: Mapping[str, str],
                node_labels: Mapping[str, str], placed: Iterable[Placed]) -> bool:
    """kube satisfyPodAffinity over `placed` (every running pod with its node's labels)."""
    if not terms:
        return True
    if any(t.key not in node_labels for t in terms):
        return False
    found_any = False
    satisfied = [False] * len(terms)
    for n_labels, ns, p_labels, _ in placed:
        if not matches_all(terms, ns, p_labels):
            continue
        found_any = True
        for i, t in enumerate(terms):
            if n_labels.get(t.key) == node_labels[t.key] and t.key in n_labels:
                satisfied[i] = True
    if all(satisfied):
        return True
    return not found_any and matches_all(terms, namespace, labels)


def anti_affinity_ok(terms: Sequence[PodTerm], namespace: str, labels: Mapping[str, str],
                     node_labels: Mapping[str, str], placed: Iterable[Placed]) -> bool:
    """kube satisfyPodAntiAffinity and satisfyExistingPodsAntiAffinity: the pod's terms and theirs."""
    for n_labels, ns, p_labels, their_anti in placed:
        for t in terms:
            if t.key in node_labels and n_labels.get(t.key) == node_labels[t.key] and t.key in n_labels \
                    and t.matches(ns, p_labels):
                return False
        for t in their_anti:
            if t.key in node_labels and n_labels.get(t.key) == node_labels[t.key] and t.key in n_labels \
                    and t.matches(namespace, labels):
                return False
    return True
