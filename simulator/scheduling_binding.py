"""What the emulator's scheduler does around a decision: the preferences it scores by, the volumes it binds when a
pod with delayed claims binds (playing the PV controller and the CSI provisioner), and the FailedScheduling Event.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from simulator.patch import deep_copy
from simulator.pods import meta
from simulator.resources import BY_KIND
from simulator.scheduling import match_node_expression, tolerates
from simulator.scheduling_volumes import VolumeCheck, claim_size
from simulator.store import now_rfc3339

if TYPE_CHECKING:
    from simulator.store import Store

Obj = dict[str, Any]
PVS = BY_KIND["PersistentVolume"]
PVCS = BY_KIND["PersistentVolumeClaim"]
EVENTS = BY_KIND["Event"]
ZONE = "topology.kubernetes.io/zone"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
DEFAULT_SCHEDULER = "default-scheduler"


def preference_score(pod: Obj, node: Obj) -> tuple[int, int]:
    """(minus the weight of the preferred node affinity terms the node matches, the untolerated PreferNoSchedule
    taints): kube-scheduler's NodeAffinity and TaintToleration scores, compared before resource allocation."""
    spec = pod.get("spec") or {}
    if not spec.get("affinity") and not (node.get("spec") or {}).get("taints"):
        return 0, 0
    labels = meta(node).get("labels") or {}
    weight = 0
    preferred = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "preferredDuringSchedulingIgnoredDuringExecution") or ()
    for term in preferred:
        exprs = (term.get("preference") or {}).get("matchExpressions") or ()
        if exprs and all(match_node_expression(e, labels) for e in exprs):
            weight += int(term.get("weight") or 0)
    tolerations = spec.get("tolerations") or []
    soft = sum(1 for t in (node.get("spec") or {}).get("taints") or ()
               if t.get("effect") == "PreferNoSchedule" and not tolerates(tolerations, t))
    return -weight, soft


def bind_claims(store: Store, check: VolumeCheck | None, pod: Obj, node: Obj) -> None:
    """Bind the pod's WaitForFirstConsumer claims for `node`: a matching Available PV, else a new one provisioned in
    the node's zone (the claim is annotated with the selected node, as kube-scheduler does for the provisioner)."""
    if check is None or not check.delayed:
        return
    for pvc, pv, sc in check.plan(node) or ():
        claim = deep_copy(pvc)
        if pv is None:
            pv = _provision(store, claim, sc, node)
            claim.setdefault("metadata", {}).setdefault("annotations", {})[SELECTED_NODE] = meta(node)["name"]
        else:
            pv = deep_copy(pv)
            pv["spec"]["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": meta(claim).get("namespace"),
                                      "name": meta(claim)["name"], "uid": meta(claim).get("uid")}
            pv.setdefault("status", {})["phase"] = "Bound"
            store.replace(PVS, pv)
        check.volumes.pvs[meta(pv)["name"]] = pv
        claim["spec"]["volumeName"] = meta(pv)["name"]
        claim.setdefault("metadata", {}).setdefault("annotations", {})["pv.kubernetes.io/bind-completed"] = "yes"
        claim["status"] = {"phase": "Bound", "accessModes": pv["spec"].get("accessModes") or [],
                           "capacity": pv["spec"].get("capacity") or {}}
        store.replace(PVCS, claim)
        check.volumes.pvcs[(meta(claim).get("namespace") or "default", meta(claim)["name"])] = claim


def _provision(store: Store, claim: Obj, sc: Obj, node: Obj) -> Obj:
    spec = claim.get("spec") or {}
    zone = (meta(node).get("labels") or {}).get(ZONE)
    pv: Obj = {"apiVersion": "v1", "kind": "PersistentVolume",
               "metadata": {"name": f"pvc-{meta(claim).get('uid') or uuid.uuid4()}",
                            "annotations": {"pv.kubernetes.io/provisioned-by": sc.get("provisioner") or ""}},
               "spec": {"capacity": {"storage": str(claim_size(claim))},
                        "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
                        "storageClassName": meta(sc).get("name"),
                        "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy") or "Delete",
                        "claimRef": {"kind": "PersistentVolumeClaim", "namespace": meta(claim).get("namespace"),
                                     "name": meta(claim)["name"], "uid": meta(claim).get("uid")}},
               "status": {"phase": "Bound"}}
    if zone:
        pv["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}]}}
    return store.create(PVS, pv)


def failed_scheduling_event(store: Store, pod: Obj, message: str) -> None:
    """kube-scheduler's Warning FailedScheduling Event on the pod (one per new message, not one per round)."""
    now = now_rfc3339()
    ns = meta(pod).get("namespace") or "default"
    store.create(EVENTS, {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"{meta(pod)['name']}.{uuid.uuid4().hex[:16]}", "namespace": ns},
        "involvedObject": {"kind": "Pod", "apiVersion": "v1", "namespace": ns, "name": meta(pod)["name"],
                           "uid": meta(pod).get("uid"), "resourceVersion": meta(pod).get("resourceVersion")},
        "reason": "FailedScheduling", "message": message, "type": "Warning",
        "source": {"component": DEFAULT_SCHEDULER}, "reportingComponent": DEFAULT_SCHEDULER,
        "firstTimestamp": now, "lastTimestamp": now, "eventTime": None, "count": 1})

