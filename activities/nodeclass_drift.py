"""The NodeClaim's `Drifted` condition from its EC2NodeClass, as Karpenter's drift controller sets it.

Run by the NodeClassWorkflow's activity (activities/nodeclass.py) right after it resolved the classes: for every
launched NodeClaim whose NodePool names a class resolved Ready in this run, `planning.lifecycle.nodeclass_drift` decides
AMIDrift / SubnetDrift / SecurityGroupDrift / NodeClassDrift from what the claim recorded at launch. The condition
is set (status True, the reason as reason and message, lastTransitionTime when it turns True) or cleared when the
claim is no longer drifted; a Drifted condition with another reason (NodePool drift, set by someone else) is left
alone. Every write is a read-modify-patch of the status with the resourceVersion (the gateway's `update`).
The planner reads the condition first (planning/disruption/drift.py), and computes the same reasons itself.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from datetime import datetime

from api import labels
from api.ec2nodeclass import KIND, EC2NodeClass
from api.nodeclaim import DRIFTED, LAUNCHED, NodeClaim
from api.timestamps import format_seconds
from gateways.kube import Change, KubeClient, Obj
from planning.lifecycle.disruption_conditions import NODEPOOL_DRIFT_REASONS
from planning.lifecycle.nodeclass_drift import NodeClassDriftReason, nodeclass_drift

log = logging.getLogger(__name__)

OURS = {r.value for r in NodeClassDriftReason}


def _conditions(obj: Obj) -> list[Obj]:
    return list((obj.get("status") or {}).get("conditions") or [])


def drifted_change(reason: NodeClassDriftReason | None, now: datetime) -> Change:
    """The status patch that makes the claim's Drifted condition say `reason` (None: not drifted by its class)."""

    def change(obj: Obj) -> Obj | None:
        conditions = _conditions(obj)
        current = next((c for c in conditions if c.get("type") == DRIFTED), None)
        rest = [c for c in conditions if c.get("type") != DRIFTED]
        if reason is None:
            if current is None or current.get("reason") not in OURS:
                return None
            return {"status": {"conditions": rest}}
        if current is not None and current.get("status") == "True" and current.get("reason") in NODEPOOL_DRIFT_REASONS:
            return None  # NodePool drift comes first in Karpenter's order; the NodePool status controller owns it
        if current is not None and current.get("status") == "True" and current.get("reason") == reason.value:
            return None
        since = current.get("lastTransitionTime") if current is not None and current.get("status") == "True" \
            else None
        wanted = {"type": DRIFTED, "status": "True", "reason": reason.value, "message": reason.value,
                  "lastTransitionTime": since or format_seconds(now)}
        return {"status": {"conditions": [*rest, wanted]}}

    return change


def pool_classes(pools: list[Obj]) -> dict[str, str]:
    """NodePool name -> the EC2NodeClass its template's nodeClassRef names."""
    out = {}
    for p in pools:
        ref = (((p.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeClassRef") or {}
        if ref.get("kind", KIND) == KIND and ref.get("name"):
            out[p["metadata"]["name"]] = ref["name"]
    return out


def launched(obj: Obj) -> bool:
    return any(c.get("type") == LAUNCHED and c.get("status") == "True" for c in _conditions(obj))


class DriftMarker:
    """Sets and clears the Drifted condition of the NodeClaims of resolved classes, through the gateway."""

    def __init__(self, kube: KubeClient) -> None:
        self._kube = kube

    def mark(self, classes: Mapping[str, EC2NodeClass], now: datetime) -> Counter[str]:
        """Reconcile every launched claim of a pool whose class is in `classes` (those resolved Ready now).
        Returns the reasons of the claims drifted after this pass (for the workflow result and logs)."""
        by_pool = pool_classes(self._kube.list_node_pools())
        drifted: Counter[str] = Counter()
        for obj in self._kube.list_node_claims():
            meta = obj.get("metadata") or {}
            nc = classes.get(by_pool.get((meta.get("labels") or {}).get(labels.NODEPOOL_LABEL, ""), ""))
            if nc is None or meta.get("deletionTimestamp") or not launched(obj):
                continue
            reason = nodeclass_drift(NodeClaim.model_validate(obj), nc)
            if reason is not None:
                drifted[reason.value] += 1
            if drifted_change(reason, now)(obj) is None:
                continue  # as wanted already: no read, no write
            if self._kube.update("NodeClaim", meta["name"], drifted_change(reason, now), status=True):
                log.info("NodeClaim %s: Drifted %s", meta["name"], reason.value if reason else "cleared")
        return drifted
