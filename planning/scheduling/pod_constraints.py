"""A pod's scheduling constraints as the simulation reads them, parsed once (planning/cluster.py parse_pod).

The fast path (planning/scheduling/simulation.py) keeps hostname anti-affinity and zone / hostname DoNotSchedule spread
in PodInfo's `anti_affinity` and `spread` (a zone spread only where every node's pods count for it: no
nodeSelector or required node affinity under nodeAffinityPolicy Honor, no nodeTaintsPolicy Honor); everything
else a pod may ask lives in a `MoreConstraints`, None on the many pods that ask nothing more, so they pay
nothing for it. docs/semantics.md §3.5.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from api import labels as L
from planning.scheduling.host_ports import HostPort, host_ports
from planning.scheduling.pod_affinity import PodTerm, preferred_terms, required_terms
from planning.scheduling.topology_spread import SpreadRule, parse_spread

FAST_KEYS = (L.ZONE_LABEL, L.HOSTNAME_LABEL)
Spread = tuple[str, int, Any]  # key, maxSkew, label selector (None selects no pod, as in kube)


@dataclass(frozen=True, slots=True)
class MoreConstraints:
    """Constraints beyond the fast path's."""

    pod_affinity: tuple[PodTerm, ...] = ()  # required pod affinity, any key
    anti_terms: tuple[PodTerm, ...] = ()  # required anti-affinity on keys other than hostname
    spread_rules: tuple[SpreadRule, ...] = ()  # DoNotSchedule spread on keys other than zone and hostname
    zone_min_domains: int = 1  # the largest minDomains of the pod's zone spread
    host_ports: frozenset[HostPort] = frozenset()
    relaxable: bool = False  # preferences Karpenter would first treat as required (preferences.py)
    strict_pns: bool = False  # PreferNoSchedule taints count as NoSchedule (a strict variant, until relaxed)

    def __bool__(self) -> bool:
        return bool(self.pod_affinity or self.anti_terms or self.spread_rules or self.zone_min_domains > 1
                    or self.host_ports or self.relaxable or self.strict_pns)


def relaxable(spec: Mapping[str, Any]) -> bool:
    """Whether Karpenter's preferences.go has anything to relax on this pod."""
    affinity = spec.get("affinity") or {}
    node_aff = affinity.get("nodeAffinity") or {}
    required = (node_aff.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or ()
    if len(required) > 1 or node_aff.get("preferredDuringSchedulingIgnoredDuringExecution"):
        return True
    if any((affinity.get(k) or {}).get("preferredDuringSchedulingIgnoredDuringExecution")
           for k in ("podAffinity", "podAntiAffinity")):
        return True
    return any(c.get("whenUnsatisfiable") == "ScheduleAnyway" for c in spec.get("topologySpreadConstraints") or ())


def parse_constraints(spec: Mapping[str, Any], namespace: str, labels: Mapping[str, str]
                      ) -> tuple[list[tuple[Any, frozenset[str]]], list[Spread], MoreConstraints | None]:
    """(hostname anti-affinity, fast-path spread, the rest or None)."""
    affinity = spec.get("affinity")
    spreads = spec.get("topologySpreadConstraints")
    if not affinity and not spreads and not spec.get("initContainers") and not any(
            c.get("ports") for c in spec.get("containers") or ()):
        return [], [], None  # most pods: nothing but resources and node selection
    affinity = affinity or {}
    anti_all = required_terms(affinity, "podAntiAffinity", namespace)
    anti = [(t.selector, t.namespaces) for t in anti_all
            if t.key == L.HOSTNAME_LABEL and t.ns_selector is None]
    rules = [r for r in parse_spread(spec.get("topologySpreadConstraints") or (), labels) if r.hard]
    selective = bool(spec.get("nodeSelector") or ((affinity.get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms"))
    fast = [r for r in rules if r.key == L.HOSTNAME_LABEL or (
        r.key == L.ZONE_LABEL and not r.honor_taints and not (selective and r.honor_affinity))]
    spread = [(r.key, r.max_skew, r.selector) for r in fast]
    more = MoreConstraints(
        pod_affinity=required_terms(affinity, "podAffinity", namespace),
        anti_terms=tuple(t for t in anti_all if t.key != L.HOSTNAME_LABEL or t.ns_selector is not None),
        spread_rules=tuple(r for r in rules if r not in fast),  # counted on the nodes the policies include
        zone_min_domains=max((r.min_domains for r in fast if r.key == L.ZONE_LABEL), default=1),
        host_ports=host_ports(spec), relaxable=relaxable(spec))
    return anti, spread, (more or None)


def preferred_pod_terms(spec: Mapping[str, Any], namespace: str) -> tuple[tuple[PodTerm, ...], tuple[PodTerm, ...]]:
    """(preferred affinity, preferred anti-affinity), heaviest first."""
    affinity = spec.get("affinity") or {}
    return (preferred_terms(affinity, "podAffinity", namespace),
            preferred_terms(affinity, "podAntiAffinity", namespace))
