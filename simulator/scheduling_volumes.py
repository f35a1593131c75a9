"""kube-scheduler's VolumeBinding and VolumeZone filters, and the binding of a pod's delayed claims when it binds
(kubernetes `pkg/scheduler/framework/plugins/volumebinding/binder.go` and `volumezone/volume_zone.go`).

- A claim the pod names that does not exist, or is being deleted, makes the pod unschedulable everywhere; so does an
  unbound claim whose StorageClass binds Immediately (or that has no class): `pod has unbound immediate
  PersistentVolumeClaims`.
- A bound claim's PersistentVolume must admit the node by its `nodeAffinity` (`volume node affinity conflict`) and
  by its zone / region labels, values split on `__` (`no available volume zone`; a node with no zone or
  region label at all passes).
- An unbound WaitForFirstConsumer claim needs, on that node, an Available volume of its class (large enough, with
  its access modes, admitting the node), else dynamic provisioning: a provisioner other than
  `kubernetes.io/no-provisioner` whose `allowedTopologies` (if any) the node matches.
When the pod binds, the emulator plays the PV controller and the CSI provisioner: it binds the smallest matching
volume, or provisions one pinned to the node's zone, and binds the claim to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simulator.pods import is_deleting, meta
from simulator.scheduling import node_affinity_matches
from simulator.scheduling_requests import quantity

Obj = dict[str, Any]
ERR_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_ZONE_CONFLICT = "node(s) had no available volume zone"
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
ZONE_KEYS = {"topology.kubernetes.io/zone": "failure-domain.beta.kubernetes.io/zone",
             "topology.kubernetes.io/region": "failure-domain.beta.kubernetes.io/region"}
BETA_TO_GA = {beta: ga for ga, beta in ZONE_KEYS.items()}


@dataclass
class Volumes:
    """The PersistentVolumes, claims and StorageClasses a scheduling decision reads."""

    pvs: dict[str, Obj] = field(default_factory=dict)
    pvcs: dict[tuple[str, str], Obj] = field(default_factory=dict)
    classes: dict[str, Obj] = field(default_factory=dict)

    @classmethod
    def of(cls, pvs: Any = (), pvcs: Any = (), classes: Any = ()) -> Volumes:
        return cls({meta(v)["name"]: v for v in pvs or ()},
                   {(meta(c).get("namespace") or "default", meta(c)["name"]): c for c in pvcs or ()},
                   {meta(s)["name"]: s for s in classes or ()})


def claim_refs(pod: Obj) -> list[tuple[str, bool]]:
    """(claim name, from a generic ephemeral volume) for each of the pod's claims (`<pod>-<volume>` if ephemeral)."""
    out = []
    for v in (pod.get("spec") or {}).get("volumes") or ():
        if v.get("persistentVolumeClaim"):
            out.append((v["persistentVolumeClaim"].get("claimName") or "", False))
        elif v.get("ephemeral"):
            out.append((f"{meta(pod).get('name')}-{v.get('name')}", True))
    return out


def claim_names(pod: Obj) -> list[str]:
    return [name for name, _ in claim_refs(pod)]


def _pv_as_pod(pv: Obj) -> Obj:
    """A PV's node affinity in the shape node_affinity_matches reads (a pod spec)."""
    required = ((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required")
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}} \
        if required else {}


def _zone_ok(pv: Obj, node_labels: dict[str, str]) -> bool:
    if not any(k in node_labels for k in (*ZONE_KEYS, *BETA_TO_GA)):
        return True  # a node with no topology label at all (a single-zone cluster) passes VolumeZone
    for key, value in (meta(pv).get("labels") or {}).items():
        if key not in ZONE_KEYS and key not in BETA_TO_GA:
            continue
        have = node_labels.get(key, node_labels.get(BETA_TO_GA.get(key, "")))
        if have is None or have not in set(value.split("__")):
            return False
    return True


def _fits_claim(pv: Obj, pvc: Obj, node: Obj) -> bool:
    spec, claim = pv.get("spec") or {}, pvc.get("spec") or {}
    ref = spec.get("claimRef")
    if is_deleting(pv) or (ref and (ref.get("name"), ref.get("namespace")) != (
            meta(pvc).get("name"), meta(pvc).get("namespace") or "default")):
        return False
    if (spec.get("storageClassName") or "") != (claim.get("storageClassName") or ""):
        return False
    if _capacity(pv) < claim_size(pvc):
        return False
    if not set(claim.get("accessModes") or ()) <= set(spec.get("accessModes") or ()):
        return False
    if (spec.get("volumeMode") or "Filesystem") != (claim.get("volumeMode") or "Filesystem"):
        return False
    return not _pv_as_pod(pv) or node_affinity_matches(_pv_as_pod(pv), node)


def claim_size(pvc: Obj) -> int:
    return quantity("storage", (((pvc.get("spec") or {}).get("resources") or {}).get("requests") or {}).get(
        "storage", 0))


def _topology_allows(storage_class: Obj, node_labels: dict[str, str]) -> bool:
    terms = storage_class.get("allowedTopologies") or ()
    if not terms:
        return True
    return any(all(node_labels.get(e.get("key")) in (e.get("values") or ()) for e in
                   t.get("matchLabelExpressions") or ()) for t in terms)


class VolumeCheck:
    """One pod's claims, resolved once (kube's PreFilter), asked per node (its Filter)."""

    def __init__(self, pod: Obj, volumes: Volumes) -> None:
        self.volumes = volumes
        self.bound: list[Obj] = []  # PVs of bound claims
        self.delayed: list[Obj] = []  # unbound WaitForFirstConsumer claims
        self.refusal: str | None = None  # the pod fits no node
        ns = meta(pod).get("namespace") or "default"
        for name, ephemeral in claim_refs(pod):
            pvc = volumes.pvcs.get((ns, name))
            if pvc is None:
                self.refusal = f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"' \
                    if ephemeral else f'persistentvolumeclaim "{name}" not found'
                return
            if (pvc.get("status") or {}).get("phase") == "Lost":
                self.refusal = f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume ' \
                    f'"{(pvc.get("spec") or {}).get("volumeName") or ""}"'
                return
            if is_deleting(pvc):
                self.refusal = f'persistentvolumeclaim "{name}" is being deleted'
                return
            volume = (pvc.get("spec") or {}).get("volumeName")
            if volume:
                pv = volumes.pvs.get(volume)
                if pv is None:
                    self.refusal = f'pvc {ns}/{name} bound to non-exist pv "{volume}"'
                    return
                self.bound.append(pv)
                continue
            sc = volumes.classes.get((pvc.get("spec") or {}).get("storageClassName") or "")
            if sc is None or sc.get("volumeBindingMode") != "WaitForFirstConsumer":
                self.refusal = ERR_UNBOUND_IMMEDIATE
                return
            self.delayed.append(pvc)

    def reason(self, node: Obj) -> str | None:
        if self.refusal:
            return self.refusal
        node_labels = meta(node).get("labels") or {}
        for pv in self.bound:
            if _pv_as_pod(pv) and not node_affinity_matches(_pv_as_pod(pv), node):
                return ERR_NODE_CONFLICT
        if self.delayed and self.plan(node) is None:
            return ERR_BIND_CONFLICT
        for pv in self.bound:
            if not _zone_ok(pv, node_labels):
                return ERR_ZONE_CONFLICT
        return None

    def plan(self, node: Obj) -> list[tuple[Obj, Obj | None, Obj]] | None:
        """For each delayed claim on `node`: (claim, the static PV it would bind or None to provision, its class);
        None when one of them finds neither. Two claims never share a volume."""
        taken: set[str] = set()
        out = []
        for pvc in self.delayed:
            sc = self.volumes.classes.get((pvc.get("spec") or {}).get("storageClassName") or "") or {}
            matching = [pv for name, pv in self.volumes.pvs.items()
                        if name not in taken and _fits_claim(pv, pvc, node)]
            if matching:
                pv = min(matching, key=_capacity)
                taken.add(meta(pv)["name"])
                out.append((pvc, pv, sc))
            elif sc.get("provisioner") and sc.get("provisioner") != NO_PROVISIONER and \
                    _topology_allows(sc, meta(node).get("labels") or {}):
                out.append((pvc, None, sc))
            else:
                return None
        return out


def _capacity(pv: Obj) -> int:
    return quantity("storage", ((pv.get("spec") or {}).get("capacity") or {}).get("storage", 0))
