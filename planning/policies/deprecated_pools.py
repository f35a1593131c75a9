"""Deprecated NodePools (docs/semantics.md §15.11, kubernetes-sigs/karpenter issue 2667): a DisruptionPolicy's
`provisioning.deprecated: true` stops every new launch in the pools it selects, for pending pods and for
disruption replacements alike; other pools serve the pods. The pool's nodes stay until they go the usual ways
(emptiness, consolidation, expiry, drift, deletion), so retiring a pool needs no drain of its own.

A pool selected by two policies is deprecated when either says so (fail closed: adding a second policy must not
bring launches back).
"""

from __future__ import annotations

from typing import Any


def deprecated_pools(snapshot: Any) -> dict[str, str]:
    """NodePool name -> the DisruptionPolicy that deprecates it."""
    out: dict[str, str] = {}
    for policy in getattr(snapshot, "disruption_policies", None) or ():
        rule = policy.spec.provisioning
        if rule is None or not rule.deprecated:
            continue
        for pool in getattr(snapshot, "node_pools", ()):
            if policy.applies_to(pool):
                out.setdefault(pool.name, policy.name)
    return out


def pool_deprecated(policy: str) -> str:
    """Why a deprecated pool serves no pod (in the pod's FailedScheduling message, after the pool's name)."""
    return f"deprecated by DisruptionPolicy {policy} (provisioning.deprecated): launches no new nodes"
