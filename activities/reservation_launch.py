"""A launch's bookkeeping of capacity reservations (docs/semantics.md §16.4): the NodeClaim launched into one gets
Karpenter's `karpenter.k8s.aws/capacity-reservation-id` and `-type` labels, and the class's
`status.capacityReservations[].availableInstanceCount` follows what the launches saw until the next resolution
against EC2 (every minute): one less after a launch into it, 0 after EC2 refused it for want of room. Karpenter
keeps those counts in its memory (aws `capacityreservation` provider, MarkLaunched / MarkUnavailable); nodeflow
writes them where every worker replica and every plan reads the class. Best effort: a lost write is corrected by
the next resolution, and a full reservation is also marked in the unavailable offerings for 3 minutes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from api.capacity_reservations import reservation_labels
from api.catalog import Offering
from gateways.kube import KubeClient

log = logging.getLogger(__name__)


class ReservationBook:
    def __init__(self, kube: KubeClient) -> None:
        self._kube = kube

    def launched(self, claim_name: str, node_class: str, off: Offering) -> None:
        """Label the claim and count one launch into the offering's reservation."""
        if not off.reservation_id:
            return
        self.label(claim_name, off)
        self._adjust(node_class, {off.reservation_id}, lambda n: max(n - 1, 0))

    def label(self, claim_name: str, off: Offering) -> None:
        """The reservation's labels on the claim (the registration copies them to its Node)."""
        if off.reservation_id:
            self._kube.patch_node_claim(claim_name, {"metadata": {"labels": reservation_labels(
                off.reservation_id, off.reservation_type)}})

    def full(self, node_class: str, reservation_ids: set[str]) -> None:
        """EC2 said these reservations have no room: none available until EC2 says otherwise."""
        if reservation_ids:
            self._adjust(node_class, reservation_ids, lambda _: 0)

    def _adjust(self, node_class: str, ids: set[str], change: Callable[[int], int]) -> None:
        try:
            obj = self._kube.get_node_class(node_class) or {}
            entries = list((obj.get("status") or {}).get("capacityReservations") or [])
            if not any(e.get("id") in ids for e in entries):
                return
            for e in entries:
                if e.get("id") in ids:
                    e["availableInstanceCount"] = change(int(e.get("availableInstanceCount") or 0))
            self._kube.patch_node_class_status(node_class, {"status": {"capacityReservations": entries}})
        except Exception as exc:  # the next resolution writes EC2's count anyway
            log.warning("could not record capacity reservation use on EC2NodeClass %s: %s", node_class, exc)
