"""Registration: the launched claim finds its Node by providerID and nodeflow makes the Node its own
(Karpenter's lifecycle/registration.go; docs/karpenter-reference.md §4): the termination
finalizer, an owner reference to the claim, the claim's labels (with its single-valued requirements:
api/node_registration.py), annotations and taints (not with
`karpenter.sh/do-not-sync-taints`), the `karpenter.sh/unregistered` taint removed and `karpenter.sh/registered`
set; then `Registered=True` and `status.nodeName` on the claim."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from api import labels as L
from api.node_registration import registration_labels
from api.nodeclaim import REGISTERED
from planning.lifecycle.conditions import FALSE, TRUE, UNKNOWN, Obj, conditions_of, with_condition

UNREGISTERED_TAINT_KEY = "karpenter.sh/unregistered"
UNREGISTERED_TAINT_EFFECT = "NoExecute"  # matched by key and effect, as Karpenter's MatchTaint does
DO_NOT_SYNC_TAINTS_LABEL = "karpenter.sh/do-not-sync-taints"


class NotRegistered(StrEnum):
    """Why a launched claim is not registered yet (the condition's reason)."""

    NODE_NOT_FOUND = "NodeNotFound"
    MULTIPLE_NODES_FOUND = "MultipleNodesFound"


@dataclass(frozen=True)
class Registration:
    """What to write: the Node patch (None when nothing changes) and the claim's new conditions and nodeName;
    `taint_missing` when the Node registered without the unregistered taint (Karpenter's Warning Event)."""

    node_patch: Obj | None
    conditions: list[Obj]
    node_name: str
    taint_missing: bool = False


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def owner_reference(claim: Obj) -> Obj:
    return {"apiVersion": L.API_VERSION, "kind": "NodeClaim", "name": _meta(claim)["name"],
            "uid": _meta(claim).get("uid", ""), "blockOwnerDeletion": True}


def _merged_taints(node: Obj, claim: Obj) -> list[Obj]:
    """The Node's taints plus the claim's taints and startup taints (by key and effect), minus unregistered."""
    taints = [t for t in (node.get("spec") or {}).get("taints") or [] if not _is_unregistered(t)]
    sync = (_meta(node).get("labels") or {}).get(DO_NOT_SYNC_TAINTS_LABEL) != "true"
    if sync:
        spec = claim.get("spec") or {}
        have = {(t.get("key"), t.get("effect")) for t in taints}
        for t in [*(spec.get("taints") or []), *(spec.get("startupTaints") or [])]:
            if (t.get("key"), t.get("effect")) not in have:
                taints.append(dict(t))
                have.add((t.get("key"), t.get("effect")))
    return taints


def node_patch(node: Obj, claim: Obj) -> Obj | None:
    """The merge patch that makes `node` the claim's registered Node; None when it already is."""
    meta = _meta(node)
    labels = {**(meta.get("labels") or {}), **registration_labels(claim), L.REGISTERED_LABEL: "true"}
    annotations = {**(meta.get("annotations") or {}), **(_meta(claim).get("annotations") or {})}
    finalizers = list(meta.get("finalizers") or [])
    if L.TERMINATION_FINALIZER not in finalizers and not meta.get("deletionTimestamp"):
        finalizers.append(L.TERMINATION_FINALIZER)
    owners = list(meta.get("ownerReferences") or [])
    if not any(o.get("uid") == _meta(claim).get("uid") for o in owners):
        owners.append(owner_reference(claim))
    taints = _merged_taints(node, claim)
    patch: Obj = {"metadata": {}}
    if labels != (meta.get("labels") or {}):
        patch["metadata"]["labels"] = labels
    if annotations != (meta.get("annotations") or {}):
        patch["metadata"]["annotations"] = annotations
    if finalizers != list(meta.get("finalizers") or []):
        patch["metadata"]["finalizers"] = finalizers
    if owners != list(meta.get("ownerReferences") or []):
        patch["metadata"]["ownerReferences"] = owners
    if taints != list((node.get("spec") or {}).get("taints") or []):
        patch["spec"] = {"taints": taints or None}
    return patch if patch["metadata"] or "spec" in patch else None


def _is_unregistered(taint: Obj) -> bool:
    return taint.get("key") == UNREGISTERED_TAINT_KEY and taint.get("effect") == UNREGISTERED_TAINT_EFFECT


def has_unregistered_taint(node: Obj) -> bool:
    return any(_is_unregistered(t) for t in (node.get("spec") or {}).get("taints") or [])


def register(claim: Obj, nodes: Sequence[Obj], now: datetime) -> Registration:
    """The registration step for a launched claim given the Nodes whose providerID is the claim's."""
    conds = conditions_of(claim)
    if len(nodes) != 1:
        reason = NotRegistered.NODE_NOT_FOUND if not nodes else NotRegistered.MULTIPLE_NODES_FOUND
        status = UNKNOWN if not nodes else FALSE
        pid = (claim.get("status") or {}).get("providerID")
        message = "" if not nodes else f"{len(nodes)} nodes have providerID {pid}"
        return Registration(None, with_condition(conds, REGISTERED, status, reason.value, message, now), "")
    node = nodes[0]
    missing = not has_unregistered_taint(node) and (_meta(node).get("labels") or {}).get(L.REGISTERED_LABEL) != "true"
    return Registration(node_patch(node, claim), with_condition(conds, REGISTERED, TRUE, "Registered", "", now),
                        _meta(node)["name"], taint_missing=missing)
