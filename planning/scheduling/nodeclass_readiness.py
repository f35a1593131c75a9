"""Can a NodePool launch a node now? Its EC2NodeClass must exist and be Ready (activities/nodeclass_launch.py
refuses the launch otherwise), so the planner offers no new node in such a pool and says why.

Like the launcher, a cluster with no EC2NodeClass at all (or a pool whose nodeClassRef names another kind) keeps
the older path: nothing is blocked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from api.ec2nodeclass import READY
from planning.cluster import parse_pool


def launch_blocker(node_classes: Mapping[str, Any], node_class: str) -> str | None:
    """Why a pool whose nodeClassRef names `node_class` cannot launch, or None when it can."""
    if not node_class or not node_classes:
        return None
    nc = node_classes.get(node_class)
    if nc is None:
        return f"EC2NodeClass {node_class} not found"
    if nc.ready:
        return None
    ready = nc.condition(READY)
    why = (ready.message or ready.reason) if ready is not None else "not resolved yet (no Ready condition)"
    return f"EC2NodeClass {node_class} not Ready: {why}"


def pools_that_cannot_launch(snapshot: Any) -> list[dict[str, str]]:
    """`nodeflow plan`'s `nodePoolsBlocked`: every NodePool of the snapshot whose EC2NodeClass is missing or not
    Ready, with the reason (`{"nodePool", "reason"}`, by name)."""
    classes = {c.metadata.name: c for c in snapshot.node_classes}
    out = []
    for pool in sorted((parse_pool(p) for p in snapshot.node_pools), key=lambda p: p.name):
        reason = launch_blocker(classes, pool.node_class)
        if reason is not None:
            out.append({"nodePool": pool.name, "reason": reason})
    return out
