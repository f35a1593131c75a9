"""Karpenter's preference relaxation (pkg/controllers/provisioning/scheduling/preferences.go), on pod dicts.

Karpenter first schedules a pod as if its preferences were requirements; when it fits nowhere, it relaxes one
of them and tries again, in this order, one step per try:
1. a required node affinity term, the first of several (they are ORed; Karpenter tries them one at a time);
2. a preferred pod affinity term, heaviest first;
3. a preferred pod anti-affinity term, heaviest first;
4. a preferred node affinity term, heaviest first (only the heaviest is ever required);
5. a ScheduleAnyway topology spread constraint;
6. when a node or NodePool carries a PreferNoSchedule taint: tolerate those taints.
`ladder` returns the pod specs to try, strictest first; `strict_spec` writes one rung's preferences as
requirements for the simulation. docs/semantics.md §3.5.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def _section(spec: dict[str, Any], kind: str) -> dict[str, Any]:
    return (spec.get("affinity") or {}).get(kind) or {}


def _heaviest_first(terms: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(terms, key=lambda t: -int(t.get("weight") or 0))


def _drop_required_node_term(spec: dict[str, Any]) -> bool:
    req = _section(spec, "nodeAffinity").get(REQUIRED) or {}
    terms = req.get("nodeSelectorTerms") or []
    if len(terms) > 1:
        req["nodeSelectorTerms"] = terms[1:]
        return True
    return False


def _drop_preferred(kind: str) -> Callable[[dict[str, Any]], bool]:
    def drop(spec: dict[str, Any]) -> bool:
        section = _section(spec, kind)
        terms = section.get(PREFERRED) or []
        if terms:
            section[PREFERRED] = _heaviest_first(terms)[1:]
            return True
        return False
    return drop


def _drop_schedule_anyway(spec: dict[str, Any]) -> bool:
    constraints = spec.get("topologySpreadConstraints") or []
    for i, c in enumerate(constraints):
        if c.get("whenUnsatisfiable") == "ScheduleAnyway":
            spec["topologySpreadConstraints"] = constraints[:i] + constraints[i + 1:]
            return True
    return False


RELAXATIONS: tuple[Callable[[dict[str, Any]], bool], ...] = (
    _drop_required_node_term, _drop_preferred("podAffinity"), _drop_preferred("podAntiAffinity"),
    _drop_preferred("nodeAffinity"), _drop_schedule_anyway)


def strict_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """A copy of `spec` with its preferences as requirements: the first required node term ANDed with the heaviest
    preferred one, preferred pod (anti-)affinity terms required, ScheduleAnyway spread as DoNotSchedule."""
    out = copy.deepcopy(spec)
    affinity = out.get("affinity") or {}
    out["affinity"] = affinity
    node_aff = affinity.get("nodeAffinity") or {}
    required = list((node_aff.get(REQUIRED) or {}).get("nodeSelectorTerms") or [])[:1]
    preferred = _heaviest_first(list(node_aff.get(PREFERRED) or []))
    if preferred:
        extra = list((preferred[0].get("preference") or {}).get("matchExpressions") or [])
        required = [{"matchExpressions": [*(t.get("matchExpressions") or []), *extra]} for t in required] or [
            {"matchExpressions": extra}]
    if required:
        affinity["nodeAffinity"] = {REQUIRED: {"nodeSelectorTerms": required}}
    for kind in ("podAffinity", "podAntiAffinity"):
        section = affinity.get(kind) or {}
        terms = [*(section.get(REQUIRED) or []), *(w.get("podAffinityTerm") or {}
                                                   for w in _heaviest_first(list(section.get(PREFERRED) or [])))]
        if terms:
            affinity[kind] = {REQUIRED: terms}
    out["topologySpreadConstraints"] = [{**c, "whenUnsatisfiable": "DoNotSchedule"}
                                        for c in out.get("topologySpreadConstraints") or []]
    return out


def ladder(spec: dict[str, Any], prefer_no_schedule: bool) -> list[tuple[dict[str, Any], bool]]:
    """(strict spec, PreferNoSchedule taints still required) for each try, strictest first."""
    work = copy.deepcopy(spec)
    out = [(strict_spec(work), prefer_no_schedule)]
    while True:
        if not any(relax(work) for relax in RELAXATIONS):
            break
        out.append((strict_spec(work), prefer_no_schedule))
    if prefer_no_schedule:
        out.append((strict_spec(work), False))
    return out
