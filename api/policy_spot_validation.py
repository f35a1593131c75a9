"""`nodeflow validate` for the spot and zone controls of DisruptionPolicies (docs/semantics.md §15.5-15.6): what only
the documents together show. Spot fallback needs a pool that admits both spot and on-demand, and zone balance a pool
that may launch in more than one zone; a policy whose selected pools offer neither cannot do what its author meant.
"""

from __future__ import annotations

from collections.abc import Sequence

from api import labels
from api.disruption_policy import DisruptionPolicy
from api.meta import NodeSelectorRequirement
from api.nodepool import NodePool


def _admits(requirements: Sequence[NodeSelectorRequirement], key: str, value: str) -> bool:
    """Whether every requirement on `key` lets a node carry `key=value` (no requirement: it may)."""
    for r in requirements:
        if r.key != key:
            continue
        values = r.values or []
        if (r.operator == "In" and value not in values) or (r.operator == "NotIn" and value in values) \
                or r.operator == "DoesNotExist":
            return False
    return True


def _one_zone(requirements: Sequence[NodeSelectorRequirement]) -> bool:
    return any(r.key == labels.ZONE_LABEL and r.operator == "In" and len(r.values or []) <= 1 for r in requirements)


def spot_set_problems(nodepools: Sequence[NodePool], policies: Sequence[DisruptionPolicy]) -> list[tuple[str, str]]:
    """(policy, problem) for `spot` controls none of whose pools admits both capacity types, and a `zoneBalance`
    all of whose pools are pinned to one zone."""
    out = []
    for policy in policies:
        selected = [p for p in nodepools if policy.applies_to(p)]
        if not selected:
            continue
        names = ", ".join(sorted(p.name for p in selected))
        spot = policy.spec.spot
        if spot is not None and (spot.return_after is not None or spot.max_on_demand_fraction is not None) and not any(
                _admits(p.requirements, labels.CAPACITY_TYPE_LABEL, labels.CAPACITY_SPOT)
                and _admits(p.requirements, labels.CAPACITY_TYPE_LABEL, labels.CAPACITY_ON_DEMAND) for p in selected):
            out.append((policy.name, f"spec.spot: has no effect: no selected NodePool ({names}) admits both spot and "
                                     f"on-demand ({labels.CAPACITY_TYPE_LABEL}), so none falls back from spot"))
        rule = policy.spec.provisioning
        if rule is not None and rule.zone_balance is not None and all(_one_zone(p.requirements) for p in selected):
            out.append((policy.name, f"spec.provisioning.zoneBalance: has no effect: every selected NodePool "
                                     f"({names}) launches in one zone"))
    return out
