"""`capacityBuffers` of `nodeflow plan` (docs/contracts.md §3.1, docs/semantics.md §20): each CapacityBuffer, how many
chunks it keeps, where the provisioning simulation put them (existing or launching nodes, new NodeClaims, nowhere)
and why a buffer keeps nothing (its shape not resolved, zero chunks, another strategy)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from api import capacity_buffer as cb
from planning.capacity_buffers import Resolution, buffers, resolve_all
from planning.provisioning.provisioner import Headroom


def buffer_rows(others: Iterable[Mapping[str, Any]], headroom: Mapping[str, Headroom]) -> list[dict[str, Any]]:
    """One row per buffer of the snapshot, in namespace/name order; buffers the API server would refuse say why."""
    objs = [dict(o) for o in others]
    rows = [_row(res, headroom.get(res.buffer.key)) for res in resolve_all(objs)]
    for obj, why in buffers(objs)[1]:
        meta = obj.get("metadata") or {}
        rows.append({"buffer": f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}", "replicas": 0,
                     "ready": False, "reason": "Invalid", "message": why, "existing": {}, "new": 0, "failed": 0})
    return rows


def _row(res: Resolution, room: Headroom | None) -> dict[str, Any]:
    reason, message = res.reason, res.message
    if res.ready and res.buffer.spec.provisioning_strategy != cb.ACTIVE_CAPACITY:
        reason, message = "OtherStrategy", f"provisioningStrategy {res.buffer.spec.provisioning_strategy} is not " \
                                           f"{cb.ACTIVE_CAPACITY}: nodeflow keeps no headroom for it"
    elif res.ready and res.replicas == 0:
        reason, message = cb.REASON_EMPTY, "Buffer has zero desired replicas"
    public = room.to_public() if room is not None else {"existing": {}, "new": 0, "failed": 0}
    return {"buffer": res.buffer.key, "replicas": res.replicas, "ready": res.ready, "reason": reason,
            "message": message, **public}

