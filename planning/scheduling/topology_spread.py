"""Topology spread constraints on any key (kube PodTopologySpread, Karpenter topologygroup.go).

A constraint counts the pods its selector matches, in the pod's namespace, per value ("domain") of its
topology key, over the eligible nodes: those carrying every constraint's key, matching the pod's nodeSelector
and required node affinity unless `nodeAffinityPolicy: Ignore`, and whose taints the pod tolerates when
`nodeTaintsPolicy: Honor`. `matchLabelKeys` ANDs the pod's own value of each key into the selector. A node is
allowed when its domain's count, plus one if the pod matches the selector itself, minus the smallest count over
the domains (0 when fewer than `minDomains` domains exist) is at most `maxSkew`. Terminating pods do not count.
`ScheduleAnyway` constraints never filter; the simulation treats them as `DoNotSchedule` until relaxed
(Karpenter preferences.go). docs/semantics.md §3.5.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from planning.selectors import match_label_selector, match_node_selector_terms, tolerates_all


@dataclass(frozen=True, slots=True)
class SpreadRule:
    """One topologySpreadConstraint, its selector already narrowed by matchLabelKeys."""

    key: str
    max_skew: int
    selector: Mapping[str, Any] | None
    min_domains: int = 1
    honor_affinity: bool = True
    honor_taints: bool = False
    hard: bool = True  # DoNotSchedule


def _with_label_keys(selector: Mapping[str, Any] | None, keys: Sequence[str],
                     labels: Mapping[str, str]) -> Mapping[str, Any] | None:
    """kube (1.27+) merges `key In (pod's value)` for each matchLabelKeys key the pod carries."""
    extra = [{"key": k, "operator": "In", "values": [labels[k]]} for k in keys if k in labels]
    if selector is None or not extra:
        return selector
    return {**selector, "matchExpressions": [*(selector.get("matchExpressions") or ()), *extra]}


def parse_spread(constraints: Iterable[Mapping[str, Any]], labels: Mapping[str, str]) -> tuple[SpreadRule, ...]:
    out = []
    for c in constraints:
        out.append(SpreadRule(
            key=c.get("topologyKey") or "", max_skew=int(c.get("maxSkew") or 1),
            selector=_with_label_keys(c.get("labelSelector"), c.get("matchLabelKeys") or (), labels),
            min_domains=int(c.get("minDomains") or 1),
            honor_affinity=(c.get("nodeAffinityPolicy") or "Honor") == "Honor",
            honor_taints=(c.get("nodeTaintsPolicy") or "Ignore") == "Honor",
            hard=(c.get("whenUnsatisfiable") or "DoNotSchedule") == "DoNotSchedule"))
    return tuple(out)


def counts_pod(rule: SpreadRule, namespace: str, pod_ns: str, pod_labels: Mapping[str, str]) -> bool:
    return pod_ns == namespace and rule.selector is not None and match_label_selector(rule.selector, pod_labels)


def node_counts(rule: SpreadRule, keys: Sequence[str], node_labels: Mapping[str, str],
                taints: Sequence[Mapping[str, Any]], node_selector: Mapping[str, str],
                affinity_terms: Sequence[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a node's pods count for `rule` (kube's nodeInclusionPolicy and all-keys rule)."""
    if any(k not in node_labels for k in keys):
        return False
    if rule.honor_affinity and not (all(node_labels.get(k) == v for k, v in node_selector.items())
                                    and match_node_selector_terms(affinity_terms, node_labels)):
        return False
    return not rule.honor_taints or tolerates_all(tolerations, taints)


def skew_ok(rule: SpreadRule, self_match: bool, counts: Mapping[str, int], domains: Iterable[str],
            value: str) -> bool:
    """The skew the pod would make in domain `value`, against the smallest domain."""
    values = list(domains)
    low = min((counts.get(d, 0) for d in values), default=0)
    if len(values) < rule.min_domains:
        low = 0
    return counts.get(value, 0) + int(self_match) - low <= rule.max_skew
