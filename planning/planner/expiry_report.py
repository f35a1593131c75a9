"""Each node's effective expiry for `nodeflow plan` (docs/semantics.md §15.12): when it expires (expireAfter less
its jitter), when its graceful expiry starts, and how much earlier jitter moved it, so an operator can see the
spread a DisruptionPolicy's `expiration.jitter` gives a fleet, and why one node went before its neighbours.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from api.catalog import InstanceTypeCatalog
from planning.cluster import Cluster
from planning.disruption.commands import Command
from planning.disruption.expiration import expires_at
from planning.disruption.method_names import MethodName
from planning.policies.expiry_jitter import pool_jitter
from planning.policies.graceful_expiration import graceful_since
from planning.policies.view import PolicyView

EXPIRING_METHODS = frozenset({MethodName.EXPIRATION, MethodName.GRACEFUL_EXPIRATION})


@dataclass(slots=True)
class _View:
    """What expires_at and graceful_since read of a pass: the cluster's pools and the policies."""

    cluster: Cluster
    policies: PolicyView


def _rfc3339(at: datetime | None) -> str | None:
    if at is None:
        return None
    text = at.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def expiry_rows(snapshot: Any, at: datetime, catalog: InstanceTypeCatalog | None,
                commands: Iterable[Command]) -> list[dict[str, Any]]:
    """The `expiry` entries of `nodeflow plan -o json`: the nodes of the plan's Expiration and GracefulExpiration
    commands, and every node of a pool whose policy sets `expiration.jitter`, soonest first."""
    wanted = {n for c in commands if c.method in EXPIRING_METHODS for n in c.nodes}
    view = _View(Cluster.from_parts(snapshot, (), catalog), PolicyView.build(snapshot, at))
    rows = []
    for node in view.cluster.nodes:
        jitter = pool_jitter(view.policies, node.pool)
        policy = view.policies.of(node.pool)
        if node.claim is None or (node.name not in wanted and not jitter):
            continue
        when = expires_at(node, view)  # type: ignore[arg-type]  # reads .cluster and .policies only
        plain = expires_at(node, _View(view.cluster, PolicyView(at)))  # type: ignore[arg-type]
        rows.append({"node": node.name, "nodePool": node.pool, "expiresAt": _rfc3339(when),
                     "gracefulFrom": _rfc3339(graceful_since(node, view)),  # type: ignore[arg-type]
                     "jitter": policy.spec.expiration.jitter if jitter and policy and policy.spec.expiration else None,
                     "earlierBySeconds": int((plain - when).total_seconds()) if when and plain else 0})
    rows.sort(key=lambda r: (r["expiresAt"] is None, r["expiresAt"] or "", r["node"]))
    return rows
