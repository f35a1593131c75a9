"""Drift waves, the planning side (docs/semantics.md §15): which nodes of a pool are drifted, what names the
pool's drift generation (one rollout each), and which workloads a wave displaces (its health check's subject)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from api import events
from api import labels as L
from api.rollout_state import RolloutNotePhase, parse_rollout_note
from api.timestamps import format_seconds
from planning.cluster import Cluster, NodeInfo, PoolInfo
from planning.disruption.drift import drift_reason


def drifted_in_pool(cluster: Cluster, pool: str, excluded: Iterable[str] = (), at: datetime | None = None
                    ) -> list[NodeInfo]:
    """The pool's drifted nodes that nothing is disrupting yet (not deleting, not excluded); with `at`, those whose
    instance type is gone too (InstanceTypeNotFound, docs/semantics.md §4.1), as the planner's Drift sees them."""
    info = cluster.pools.get(pool)
    if info is None:
        return []
    skip = set(excluded)
    node_class = cluster.node_classes.get(info.node_class) if info.node_class else None
    catalog = cluster.catalog_for(pool) if at is not None else None
    return [n for n in cluster.nodes if n.pool == pool and not n.deleting and n.name not in skip
            and drift_reason(n, info, node_class, catalog, at) is not None]


def rollout_block(pool: PoolInfo) -> str | None:
    """Why the pool's drifted nodes wait on its drift rollout (baking or halted), from the NodePool's
    `nodeflow.dev/rollout` annotation; None when no rollout holds them (none, or one that is disrupting)."""
    note = parse_rollout_note(pool.annotations.get(L.ROLLOUT_ANNOTATION))
    if note is None:
        return None
    if note.phase == RolloutNotePhase.HALTED:
        return events.rollout_halted_blocked(note.wave, note.waves, note.halt_reason, pool.name)
    if note.phase == RolloutNotePhase.BAKING and note.bake_until is not None:
        return events.rollout_baking_blocked(note.wave, note.waves, format_seconds(note.bake_until))
    return None


def drift_generation(cluster: Cluster, pool: str) -> str:
    """What the pool's drifted nodes drift towards: its template hash and its EC2NodeClass's; a new template (or
    a changed EC2NodeClass) is a new generation, so a new rollout."""
    info = cluster.pools.get(pool)
    if info is None:
        return ""
    parts = [info.template_hash or info.annotations.get(L.NODEPOOL_HASH_ANNOTATION, "")]
    node_class = cluster.node_classes.get(info.node_class) if info.node_class else None
    if node_class is not None:  # its generation: a changed spec (AMI, subnets, ...) drifts the pool's nodes
        parts.append(str(getattr(node_class.metadata, "generation", "") or ""))
    return "/".join(parts)


def displaced_workloads(nodes: Iterable[NodeInfo]) -> list[tuple[str, str, str, str]]:
    """(namespace, owner kind, owner name, owner uid) of the pods the nodes' disruption moves; DaemonSet and
    mirror pods stay with their node, so they are not displaced."""
    out: dict[tuple[str, str], tuple[str, str, str, str]] = {}
    for n in nodes:
        for p in n.pods:
            if p.is_daemonset or p.is_mirror or p.terminal:
                continue
            ref = _owner(p.raw)
            key = (p.namespace, ref.get("uid") or p.uid)
            out[key] = (p.namespace, ref.get("kind") or "Pod", ref.get("name") or p.name, ref.get("uid") or p.uid)
    return sorted(out.values())


def _owner(raw: dict[str, Any]) -> dict[str, Any]:
    owners = (raw.get("metadata") or {}).get("ownerReferences") or []
    return next((o for o in owners if o.get("controller")), owners[0] if owners else {})
