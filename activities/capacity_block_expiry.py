"""Capacity blocks ending: Karpenter's `capacityreservation.expiration` controller (aws
`pkg/controllers/capacityreservation/expiration/controller.go`). A capacity block's reservation is `expiring` from
40 minutes before its end time (EC2 starts reclaiming its instances 30 minutes before the end); every NodeClaim
labelled with an expiring reservation's id is deleted then, so its node drains gracefully (the deletion watcher
starts its TerminationWorkflow, docs/semantics.md §9) ten minutes before EC2 would take it. nodeflow also records
a Warning Event `CapacityBlockExpiring` on the NodeClaim (Karpenter only logs). Run after each node-class
resolution (every minute, Karpenter's requeue too).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from api.capacity_reservations import RESERVATION_ID_LABEL, CapacityReservationStatus, expiring_ids
from api.events import EventReason
from gateways.kube import KubeClient

log = logging.getLogger(__name__)


def expiry_message(reservation_id: str, end: str) -> str:
    return f"capacity block {reservation_id} ends at {end}: deleting the NodeClaim ahead of EC2's reclaim"


def delete_expiring(kube: KubeClient, reservations: Iterable[CapacityReservationStatus]) -> list[str]:
    """Delete the NodeClaims launched into an expiring capacity block; their names."""
    rs = list(reservations)
    expiring = expiring_ids(rs)
    if not expiring:
        return []
    ends = {r.id: r.end_time.isoformat() if r.end_time else "" for r in rs}
    deleted = []
    for claim in kube.list_node_claims():
        meta = claim.get("metadata") or {}
        rid = (meta.get("labels") or {}).get(RESERVATION_ID_LABEL)
        if rid not in expiring or meta.get("deletionTimestamp"):
            continue
        if kube.delete_node_claim(meta["name"]):
            deleted.append(meta["name"])
            log.info("NodeClaim %s: initiating delete for capacity block expiration (%s)", meta["name"], rid)
            kube.event("NodeClaim", claim, meta["name"], EventReason.CAPACITY_BLOCK_EXPIRING.value,
                       expiry_message(rid, ends.get(rid, "")), type_="Warning")
    return deleted
