"""`nodeflow validate` for the launch and expiry controls of DisruptionPolicies (docs/semantics.md §15.10-15.12):
what only the documents together show. A deprecation that leaves no NodePool to launch in, and an expiry jitter
on pools that never expire, are valid documents that cannot do what their author meant.
"""

from __future__ import annotations

from collections.abc import Sequence

from api.disruption_policy import DisruptionPolicy
from api.nodepool import NodePool


def deprecation_problems(nodepools: Sequence[NodePool], policies: Sequence[DisruptionPolicy]) -> list[tuple[str, str]]:
    """(policy, problem) when the deprecations leave no dynamic NodePool to launch in: no pending pod could get a
    node (static pools keep their replicas and launch for no pod)."""
    dynamic = [p for p in nodepools if not p.is_static]
    deprecating = [p for p in policies if p.spec.provisioning is not None and p.spec.provisioning.deprecated]
    if not dynamic or not deprecating:
        return []
    if any(not any(pol.applies_to(pool) for pol in deprecating) for pool in dynamic):
        return []
    names = ", ".join(sorted(p.name for p in dynamic))
    return [(pol.name, f"spec.provisioning.deprecated: every NodePool ({names}) is deprecated; no pending pod can "
                       "get a new node until one is not") for pol in deprecating if any(map(pol.applies_to, dynamic))]


def jitter_problems(nodepools: Sequence[NodePool], policies: Sequence[DisruptionPolicy]) -> list[tuple[str, str]]:
    """(policy, problem) for an `expiration.jitter` whose pools all never expire: no expireAfter (Never) and no
    gracefulExpireAfter, so there is nothing to move earlier."""
    out = []
    for policy in policies:
        expiration = policy.spec.expiration
        if expiration is None or not expiration.jitter_fraction or expiration.graceful_after is not None:
            continue
        selected = [p for p in nodepools if policy.applies_to(p)]
        if selected and all(p.expire_after is None for p in selected):
            out.append((policy.name, f"spec.expiration.jitter: {expiration.jitter} has no effect: the selected "
                                     f"NodePools ({', '.join(sorted(p.name for p in selected))}) never expire "
                                     "(expireAfter Never) and there is no gracefulExpireAfter"))
    return out


def limits_set_problems(nodepools: Sequence[NodePool], policies: Sequence[DisruptionPolicy]) -> list[tuple[str, str]]:
    return deprecation_problems(nodepools, policies) + jitter_problems(nodepools, policies)
