"""`scheduling` of `nodeflow plan`: the simulation's settings and what they changed in this snapshot (the default
topology spread, docs/semantics.md §3.5; pods whose requests count an in-place resize)."""

from __future__ import annotations

from typing import Any

from planning.cluster import parse_pod, with_default_spread
from planning.scheduling.default_spread import DefaultSpread, Workloads


def scheduling_report(snapshot: Any, spread: DefaultSpread) -> dict[str, Any]:
    """{"defaultTopologySpread": {"mode", "source", "constraints", "podsDefaulted"}, "podsResizing"}: the setting,
    the pods it gave the defaults, and the pods whose status reports other resources than their spec asks."""
    workloads = Workloads(getattr(snapshot, "others", ()))
    defaulted = resizing = 0
    for raw in snapshot.pods:
        pod = parse_pod(raw)
        if spread and with_default_spread(pod, spread, workloads) is not pod:
            defaulted += 1
        resizing += pod.resized
    return {"defaultTopologySpread": {**spread.to_public(), "podsDefaulted": defaulted}, "podsResizing": resizing}

