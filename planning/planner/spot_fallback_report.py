"""The `spotFallbacks` entries of `nodeflow plan -o json` (docs/semantics.md §15.5): each node recorded as a spot
fallback (planning/provisioning/spot_fallback.py) and what the plan does about it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from api import labels as L
from api.catalog import InstanceTypeCatalog
from planning.cluster import Cluster
from planning.disruption.commands import Command
from planning.disruption.method_names import MethodName
from planning.policies.view import PolicyView
from planning.provisioning.spot_fallback import fallback_since, fallback_value


def spot_fallback_rows(snapshot: Any, at: datetime, catalog: InstanceTypeCatalog | None, commands: Iterable[Command],
                       blocked: Iterable[Any]) -> list[dict[str, Any]]:
    """The `spotFallbacks` entries of `nodeflow plan -o json`: every node recorded as a spot fallback, when it fell
    back, when its pool's returnAfter lets it return, and what this plan does about it (`state`: Returning in a
    SpotReturn command, Blocked with the reason, Waiting for returnAt, or Kept without a returnAfter)."""
    returning = {n for c in commands if c.method == MethodName.SPOT_RETURN for n in c.nodes}
    why = {b.node: b.reason for b in blocked}
    policies = PolicyView.build(snapshot, at)
    rows = []
    for node in Cluster.from_parts(snapshot, (), catalog).nodes:
        since = fallback_since(node.claim.annotations) if node.claim is not None else None
        if since is None or node.capacity_type != L.CAPACITY_ON_DEMAND:
            continue
        policy = policies.of(node.pool)
        delay = policy.spec.spot.return_delay if policy is not None and policy.spec.spot is not None else None
        due = since + delay if delay is not None else None
        state, reason = ("Returning", None) if node.name in returning else \
            ("Blocked", why[node.name]) if node.name in why else \
            ("Kept", None) if due is None else ("Waiting", None)
        rows.append({"node": node.name, "nodePool": node.pool, "since": fallback_value(since),
                     "returnAt": fallback_value(due) if due is not None else None, "state": state, "reason": reason})
    rows.sort(key=lambda r: (r["since"], r["node"]))
    return rows
