"""Kubernetes label selectors, node selector requirements and taint tolerations, evaluated on plain dicts.

Shared by candidates, drift and the scheduling simulation, which call them many thousands of times per
pass, so they are small functions over dicts with no model objects in between.
"""

from __future__ import annotations

import operator as operator_mod
from collections.abc import Callable, Mapping, Sequence
from typing import Any

# Numeric operators: Gt and Lt as in Kubernetes, Gte and Lte as Karpenter's NodePool and NodeClaim requirements
# allow them (kubernetes-sigs/karpenter#2674, enumerated in v1.15 by kubernetes-sigs/karpenter#2924).
_COMPARE: dict[str, Callable[[int, int], bool]] = {
    "Gt": operator_mod.gt, "Lt": operator_mod.lt, "Gte": operator_mod.ge, "Lte": operator_mod.le}


def match_requirement(key: str, operator: str, values: Sequence[str], labels: Mapping[str, str]) -> bool:
    """One NodeSelectorRequirement / LabelSelectorRequirement against a label set."""
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in _COMPARE:
        if not present or not values:
            return False
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return _COMPARE[operator](have, want)
    return False


def match_label_selector(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector: matchLabels AND matchExpressions. None matches nothing, {} matches all."""
    if selector is None:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or ():
        if not match_requirement(expr.get("key", ""), expr.get("operator", ""), expr.get("values") or (), labels):
            return False
    return True


def match_node_selector_terms(terms: Sequence[Mapping[str, Any]], labels: Mapping[str, str]) -> bool:
    """Required node affinity: the terms are ORed, the expressions of a term ANDed. No terms: match."""
    if not terms:
        return True
    for term in terms:
        exprs = term.get("matchExpressions") or ()
        if all(match_requirement(e.get("key", ""), e.get("operator", ""), e.get("values") or (), labels)
               for e in exprs):
            return True
    return False


def tolerates(tolerations: Sequence[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    """Whether a pod's tolerations cover one taint (core/v1 ToleratesTaint)."""
    key, value, effect = taint.get("key", ""), taint.get("value", "") or "", taint.get("effect", "")
    for tol in tolerations:
        t_effect = tol.get("effect") or ""
        if t_effect and t_effect != effect:
            continue
        t_key = tol.get("key") or ""
        op = tol.get("operator") or "Equal"
        if not t_key:
            if op == "Exists":
                return True
            continue
        if t_key != key:
            continue
        if op == "Exists" or (tol.get("value") or "") == value:
            return True
    return False


def tolerates_all(tolerations: Sequence[Mapping[str, Any]], taints: Sequence[Mapping[str, Any]]) -> bool:
    """Scheduling check: every NoSchedule / NoExecute taint is tolerated (PreferNoSchedule never blocks)."""
    for taint in taints:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, taint):
            return False
    return True


def selector_key(selector: Mapping[str, Any] | None) -> str:
    """A hashable, order-independent identity for a selector (for caches)."""
    if selector is None:
        return "<none>"
    ml = sorted((selector.get("matchLabels") or {}).items())
    me = sorted(
        (e.get("key", ""), e.get("operator", ""), tuple(sorted(e.get("values") or ())))
        for e in selector.get("matchExpressions") or ()
    )
    return repr((ml, me))
