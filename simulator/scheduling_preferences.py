"""The preferred pod (anti-)affinity part of kube-scheduler's InterPodAffinity score, for the emulator's scheduler to
rank feasible nodes by (`interpodaffinity/scoring.go`): each preferred term adds its weight (anti-affinity: takes
it away) for every pod it selects in the node's domain of its topologyKey. The existing pods' own preferred terms
towards the incoming pod, which kube also scores, are left out (decisions §20). Counts are built once per round per
distinct (namespace, terms) and kept current as the round binds pods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from simulator.pods import meta
from simulator.scheduling_affinity import term_matches

Obj = dict[str, Any]
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def preferred_terms(pod: Obj) -> list[tuple[int, Obj]]:
    """(signed weight, term): affinity terms positive, anti-affinity terms negative."""
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    out = []
    for kind, sign in (("podAffinity", 1), ("podAntiAffinity", -1)):
        for t in (affinity.get(kind) or {}).get(PREFERRED) or ():
            term = t.get("podAffinityTerm") or {}
            if term.get("topologyKey") and t.get("weight"):
                out.append((sign * int(t["weight"]), term))
    return out


class _Counts:
    def __init__(self, owner: Obj, terms: list[tuple[int, Obj]], ns_labels: Callable[[str], dict[str, str]]) -> None:
        self.owner, self.terms, self.ns_labels = owner, terms, ns_labels
        self.by_term: list[dict[str, int]] = [{} for _ in terms]

    def add(self, other: Obj, node: Obj) -> None:
        node_labels = meta(node).get("labels") or {}
        for (_, term), counts in zip(self.terms, self.by_term, strict=True):
            value = node_labels.get(term["topologyKey"])
            if value is not None and term_matches(term, self.owner, other, self.ns_labels):
                counts[value] = counts.get(value, 0) + 1

    def score(self, node: Obj) -> int:
        node_labels = meta(node).get("labels") or {}
        return sum(weight * counts.get(node_labels.get(term["topologyKey"]) or "", 0)
                   for (weight, term), counts in zip(self.terms, self.by_term, strict=True)
                   if term["topologyKey"] in node_labels)


class PreferredRound:
    """One scheduling round's counts for preferred pod (anti-)affinity, shared by pods with the same terms."""

    def __init__(self, nodes: Callable[[], Iterable[Obj]], pods_on: Callable[[str], Iterable[Obj]],
                 ns_labels: Callable[[str], dict[str, str]]) -> None:
        self._nodes, self._pods_on, self._ns_labels = nodes, pods_on, ns_labels
        self._cache: dict[tuple[str, str], _Counts] = {}

    def scorer(self, pod: Obj) -> Callable[[Obj], int] | None:
        """The pod's score function over nodes (higher is better), or None when it has no preferred pod terms."""
        terms = preferred_terms(pod)
        if not terms:
            return None
        ident = (meta(pod).get("namespace") or "", repr(terms))
        entry = self._cache.get(ident)
        if entry is None:
            entry = self._cache[ident] = _Counts(pod, terms, self._ns_labels)
            for node in self._nodes():
                for other in self._pods_on(meta(node).get("name") or ""):
                    entry.add(other, node)
        return entry.score

    def bind(self, pod: Obj, node: Obj) -> None:
        for entry in self._cache.values():
            entry.add(pod, node)
