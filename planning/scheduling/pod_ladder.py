"""The PodInfos a simulation tries for one pod: its preferences as requirements first, then relaxed one step at a
time in Karpenter's order (preferences.py). A pod with nothing to relax is tried as itself.

Each rung is parsed from the relaxed spec like any pod (planning/cluster.py parse_pod) once per distinct
constraint set (a Deployment's replicas share one; kept across passes), then laid over each pod, which keeps
its identity, requests and volume topology (Cluster.with_volumes). docs/semantics.md §3.5.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from planning.cluster import Cluster, PodInfo, parse_pod, pod_sig
from planning.scheduling.pod_constraints import MoreConstraints
from planning.scheduling.preferences import ladder

CONSTRAINT_FIELDS = ("affinity", "topologySpreadConstraints", "nodeSelector", "tolerations")


def constraint_key(pod: PodInfo, prefer_no_schedule: bool) -> str:
    """What a pod's rungs depend on, beyond its identity: namespace, scheduling constraints, and its labels only
    where a spread's matchLabelKeys reads them."""
    spec = pod.raw.get("spec") or {}
    reads_labels = any(c.get("matchLabelKeys") for c in spec.get("topologySpreadConstraints") or ())
    return repr((pod.namespace, sorted(pod.labels.items()) if reads_labels else None,
                 [spec.get(f) for f in CONSTRAINT_FIELDS], prefer_no_schedule))


def rungs(pod: PodInfo, prefer_no_schedule: bool) -> list[PodInfo]:
    """The relaxation rungs parsed from `pod`'s spec (its identity fields are the first pod's)."""
    out: list[PodInfo] = []
    for spec, strict_pns in ladder(dict(pod.raw.get("spec") or {}), prefer_no_schedule):
        variant = parse_pod({**pod.raw, "spec": spec})
        if strict_pns:
            variant.more = dataclasses.replace(variant.more or MoreConstraints(), strict_pns=True)
        variant.sig = pod_sig(variant)
        out.append(variant)
    return out


# rungs per constraint_key, kept across passes (a pure function of the key); bounded, cleared when full
_TEMPLATES: dict[str, list[PodInfo]] = {}
TEMPLATE_LIMIT = 8192


def pod_ladder(pod: PodInfo, cluster: Cluster, prefer_no_schedule: bool) -> list[PodInfo]:
    """Variants to try, strictest first; [pod] when there is nothing to relax."""
    if not prefer_no_schedule and (pod.more is None or not pod.more.relaxable):
        return [pod]
    key = constraint_key(pod, prefer_no_schedule)
    parsed = _TEMPLATES.get(key)
    if parsed is None:
        if len(_TEMPLATES) >= TEMPLATE_LIMIT:
            _TEMPLATES.clear()
        parsed = _TEMPLATES[key] = rungs(pod, prefer_no_schedule)
    return [cluster.with_volumes(_overlay(pod, rung)) for rung in parsed]


def _overlay(pod: PodInfo, rung: PodInfo) -> PodInfo:
    """`pod` with the rung's constraints; host ports stay the pod's own (the key does not cover containers)."""
    fields: dict[str, Any] = {f: getattr(rung, f) for f in (
        "tolerations", "node_selector", "affinity_terms", "anti_affinity", "spread", "sig")}
    ports = pod.more.host_ports if pod.more is not None else frozenset()
    more = rung.more
    if more is not None and more.host_ports != ports:
        more = dataclasses.replace(more, host_ports=ports)
    elif more is None and ports:
        more = MoreConstraints(host_ports=ports)
    return dataclasses.replace(pod, more=more, **fields)
