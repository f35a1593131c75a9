"""kube-scheduler's InterPodAffinity filter: required pod affinity, required pod anti-affinity, and the existing
pods' required anti-affinity against the incoming pod (kubernetes `pkg/scheduler/framework/plugins/
interpodaffinity/filtering.go`).

- A term selects pods by labelSelector (none selects nothing) narrowed by `matchLabelKeys` / `mismatchLabelKeys`
  (the owning pod's values), in its namespaces: `namespaces` plus those matching `namespaceSelector` (`{}`: all),
  or the owning pod's own namespace when both are unset. Terminating pods count.
- Affinity: every term's topologyKey must be on the node, and for each term the node's (key, value) must hold a pod
  matching ALL the pod's affinity terms; unless no pod anywhere matches them all and the pod matches its own terms
  (the first pod of a group with affinity to itself), which then passes on any node with the keys.
- Anti-affinity: no pod matching a term in the node's (key, value) of that term.
- Existing anti-affinity: no pod in any of the node's (key, value) pairs has a required anti-affinity term
  matching the incoming pod.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from simulator.pods import meta
from simulator.selectors import match_label_selector_object

Obj = dict[str, Any]
ERR_EXISTING_ANTI = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_ANTI = "node(s) didn't match pod anti-affinity rules"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def required_terms(pod: Obj, kind: str) -> list[Obj]:
    """`kind`: podAffinity or podAntiAffinity."""
    return list((((pod.get("spec") or {}).get("affinity") or {}).get(kind) or {}).get(REQUIRED) or ())


def has_required_anti_affinity(pod: Obj) -> bool:
    return bool(required_terms(pod, "podAntiAffinity"))


def term_matches(term: Obj, owner: Obj, target: Obj, ns_labels: Callable[[str], dict[str, str]]) -> bool:
    """Whether `target` is selected by `owner`'s term (namespace and label selector)."""
    target_ns = meta(target).get("namespace") or ""
    names = term.get("namespaces") or ()
    ns_selector = term.get("namespaceSelector")
    if not names and ns_selector is None:
        in_ns = target_ns == (meta(owner).get("namespace") or "")
    else:
        in_ns = target_ns in names or (ns_selector is not None and
                                       match_label_selector_object(ns_selector, ns_labels(target_ns)))
    selector = term.get("labelSelector")
    if term.get("matchLabelKeys") or term.get("mismatchLabelKeys"):
        selector = _with_label_keys(term, selector, meta(owner).get("labels") or {})
    return in_ns and match_label_selector_object(selector, meta(target).get("labels") or {})


def _with_label_keys(term: Obj, selector: Obj | None, owner_labels: dict[str, str]) -> Obj | None:
    """The term's selector with `matchLabelKeys` (key In [the owner's value]) and `mismatchLabelKeys` (NotIn) merged
    in, as the API server merges them at the owner's creation (MatchLabelKeysInPodAffinity)."""
    exprs = [{"key": k, "operator": op, "values": [owner_labels[k]]}
             for field, op in (("matchLabelKeys", "In"), ("mismatchLabelKeys", "NotIn"))
             for k in term.get(field) or () if k in owner_labels]
    if not exprs or selector is None:
        return selector
    return {**selector, "matchExpressions": [*(selector.get("matchExpressions") or ()), *exprs]}


class _Incoming:
    """The counts of existing pods matching an incoming pod's own terms (its namespace and terms decide them)."""

    def __init__(self, owner: Obj, ns_labels: Callable[[str], dict[str, str]]) -> None:
        self.owner, self.ns_labels = owner, ns_labels
        self.affinity = required_terms(owner, "podAffinity")
        self.anti = required_terms(owner, "podAntiAffinity")
        self.affinity_counts: dict[tuple[str, str], int] = {}
        self.anti_counts: dict[tuple[str, str], int] = {}

    def add(self, other: Obj, node: Obj) -> None:
        """Count a pod on `node` (an existing one, or one the round has just bound)."""
        node_labels = meta(node).get("labels") or {}
        if self.affinity and all(term_matches(t, self.owner, other, self.ns_labels) for t in self.affinity):
            for t in self.affinity:
                value = node_labels.get(t.get("topologyKey") or "")
                if value is not None:
                    pair = (t["topologyKey"], value)
                    self.affinity_counts[pair] = self.affinity_counts.get(pair, 0) + 1
        for t in self.anti:
            value = node_labels.get(t.get("topologyKey") or "")
            if value is not None and term_matches(t, self.owner, other, self.ns_labels):
                pair = (t["topologyKey"], value)
                self.anti_counts[pair] = self.anti_counts.get(pair, 0) + 1


class AffinityRound:
    """One scheduling round's affinity counts, built once per distinct (namespace, terms) and kept current as the
    round binds pods (kube's PreFilter state with its AddPod extension)."""

    def __init__(self, nodes: Callable[[], Iterable[Obj]], pods_on: Callable[[str], Iterable[Obj]],
                 anti_pods: Callable[[], Iterable[tuple[Obj, Obj]]],
                 ns_labels: Callable[[str], dict[str, str]] | None = None) -> None:
        self._nodes, self._pods_on, self._anti_source = nodes, pods_on, anti_pods
        self._anti: list[tuple[Obj, Obj]] | None = None
        self.ns_labels = ns_labels or (lambda _ns: {})
        self._incoming: dict[tuple[str, str], _Incoming] = {}

    def anti_pods(self) -> list[tuple[Obj, Obj]]:
        if self._anti is None:
            self._anti = list(self._anti_source())
        return self._anti

    def incoming(self, pod: Obj) -> _Incoming:
        ident = (meta(pod).get("namespace") or "", repr((required_terms(pod, "podAffinity"),
                                                          required_terms(pod, "podAntiAffinity"))))
        entry = self._incoming.get(ident)
        if entry is None:
            entry = self._incoming[ident] = _Incoming(pod, self.ns_labels)
            if entry.affinity or entry.anti:
                for node in self._nodes():
                    for other in self._pods_on(meta(node).get("name") or ""):
                        entry.add(other, node)
        return entry

    def bind(self, pod: Obj, node: Obj) -> None:
        for entry in self._incoming.values():
            entry.add(pod, node)
        if self._anti is not None and has_required_anti_affinity(pod):
            self._anti.append((pod, node))


class AffinityCheck:
    """One pod's affinity state over the cluster (kube's PreFilter), asked per node (its Filter)."""

    def __init__(self, pod: Obj, round_: AffinityRound) -> None:
        self.existing_anti: dict[tuple[str, str], int] = {}
        for existing, node in round_.anti_pods():
            node_labels = meta(node).get("labels") or {}
            for term in required_terms(existing, "podAntiAffinity"):
                value = node_labels.get(term.get("topologyKey") or "")
                if value is not None and term_matches(term, existing, pod, round_.ns_labels):
                    pair = (term["topologyKey"], value)
                    self.existing_anti[pair] = self.existing_anti.get(pair, 0) + 1
        self.incoming = round_.incoming(pod) if (required_terms(pod, "podAffinity") or
                                                  required_terms(pod, "podAntiAffinity")) else None
        self.self_match = self.incoming is not None and bool(self.incoming.affinity) and all(
            term_matches(t, pod, pod, round_.ns_labels) for t in self.incoming.affinity)

    def needed(self) -> bool:
        return bool(self.existing_anti) or self.incoming is not None

    def reason(self, node: Obj) -> str | None:
        node_labels = meta(node).get("labels") or {}
        if self.existing_anti and any(self.existing_anti.get(pair, 0) > 0 for pair in node_labels.items()):
            return ERR_EXISTING_ANTI
        inc = self.incoming
        if inc is None:
            return None
        if inc.affinity and not self._affinity_ok(inc, node_labels):
            return ERR_AFFINITY
        for t in inc.anti:
            value = node_labels.get(t.get("topologyKey") or "")
            if value is not None and inc.anti_counts.get((t["topologyKey"], value), 0) > 0:
                return ERR_ANTI
        return None

    def _affinity_ok(self, inc: _Incoming, node_labels: dict[str, str]) -> bool:
        pods_exist = True
        for t in inc.affinity:
            value = node_labels.get(t.get("topologyKey") or "")
            if value is None:
                return False
            if inc.affinity_counts.get((t["topologyKey"], value), 0) <= 0:
                pods_exist = False
        return pods_exist or (not inc.affinity_counts and self.self_match)
