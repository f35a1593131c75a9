"""The PodInfos a simulation tries for one pod: its preferences as requirements first, then relaxed one step at a
time in Karpenter's order (scheduling_preferences.py). A pod with nothing to relax is tried as itself.

Each variant is parsed from the relaxed spec like any pod (planning/cluster.py parse_pod) and given the pod's
volume topology again (Cluster.with_volumes), so every check reads it the usual way. docs/semantics.md §3.5.
"""

from __future__ import annotations

import dataclasses

from planning.cluster import Cluster, PodInfo, parse_pod, pod_sig
from planning.scheduling_pod import MoreConstraints
from planning.scheduling_preferences import ladder


def pod_ladder(pod: PodInfo, cluster: Cluster, prefer_no_schedule: bool) -> list[PodInfo]:
    """Variants to try, strictest first; [pod] when there is nothing to relax."""
    if not prefer_no_schedule and (pod.more is None or not pod.more.relaxable):
        return [pod]
    out: list[PodInfo] = []
    for spec, strict_pns in ladder(dict(pod.raw.get("spec") or {}), prefer_no_schedule):
        variant = parse_pod({**pod.raw, "spec": spec})
        if strict_pns:
            variant.more = dataclasses.replace(variant.more or MoreConstraints(), strict_pns=True)
        variant.sig = pod_sig(variant)
        out.append(cluster.with_volumes(variant))
    return out
