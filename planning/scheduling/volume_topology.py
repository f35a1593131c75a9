"""Volume topology: where a pod's PersistentVolumeClaims let it run (kube VolumeBinding / VolumeZone, Karpenter
volumetopology.go).

- A claim bound to a PV: the PV's `nodeAffinity.required` terms, and (VolumeZone) its zone / region labels.
- An unbound claim of a WaitForFirstConsumer StorageClass: a node where the class can provision (it names a
  provisioner; its `allowedTopologies`, if any, match) or where an Available PV of the class with room for
  the request may bind (its node affinity matches).
- A claim that is missing, bound to a missing PV, or unbound with Immediate binding (or a missing class): the
  pod runs nowhere until that changes.
Karpenter turns the same facts into node requirements of the pod (volumetopology.go Inject); `node_terms` does
that here, so existing and new nodes are judged by one rule. docs/semantics.md §3.5.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from api.events import volume_limit_reached
from api.quantity import QuantityError, parse_memory
from planning.selectors import match_node_selector_terms

ZONE_KEYS = {"failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
             "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region"}
TOPOLOGY_KEYS = (*ZONE_KEYS, *ZONE_KEYS.values())
NO_PROVISIONER = "kubernetes.io/no-provisioner"
VOLUME_KINDS = frozenset({"PersistentVolume", "PersistentVolumeClaim", "StorageClass"})


@dataclass
class Volumes:
    """PersistentVolumes by name, claims by (namespace, name), StorageClasses by name."""

    pvs: dict[str, dict[str, Any]] = field(default_factory=dict)
    pvcs: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    classes: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_objects(cls, objects: Iterable[Mapping[str, Any]]) -> Volumes:
        out = cls()
        for o in objects:
            meta = o.get("metadata") or {}
            kind = o.get("kind")
            if kind == "PersistentVolume":
                out.pvs[meta.get("name", "")] = dict(o)
            elif kind == "PersistentVolumeClaim":
                out.pvcs[(meta.get("namespace") or "default", meta.get("name", ""))] = dict(o)
            elif kind == "StorageClass":
                out.classes[meta.get("name", "")] = dict(o)
        return out

    def __bool__(self) -> bool:
        return bool(self.pvs or self.pvcs or self.classes)


@dataclass
class VolumeNeeds:
    """What a pod's claims ask of a node: ANDed groups of ORed node selector terms, PV zone labels, or a block."""

    term_groups: list[list[dict[str, Any]]] = field(default_factory=list)
    zone_labels: list[tuple[str, frozenset[str]]] = field(default_factory=list)
    blocked: str = ""


def claim_names(spec: Mapping[str, Any]) -> list[str]:
    return [(v.get("persistentVolumeClaim") or {}).get("claimName", "") for v in spec.get("volumes") or ()
            if v.get("persistentVolumeClaim")]


def _storage(value: Any) -> int:
    try:
        return parse_memory(str(value)) if value not in (None, "") else 0
    except (QuantityError, ValueError):
        return 0


def _pv_terms(pv: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """A PV's required node selector terms; None when it has none (any node)."""
    req = ((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}
    return list(req.get("nodeSelectorTerms") or ()) or None


def _class_terms(sc: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """allowedTopologies as node selector terms (In); None when unrestricted."""
    topologies = sc.get("allowedTopologies") or ()
    terms = [{"matchExpressions": [{"key": e.get("key", ""), "operator": "In", "values": list(e.get("values") or ())}
                                   for e in t.get("matchLabelExpressions") or ()]} for t in topologies]
    return terms or None


def _bound_needs(pv: Mapping[str, Any], needs: VolumeNeeds) -> None:
    terms = _pv_terms(pv)
    if terms:
        needs.term_groups.append(terms)
    for key, value in ((pv.get("metadata") or {}).get("labels") or {}).items():
        if key in TOPOLOGY_KEYS:
            needs.zone_labels.append((key, frozenset(value.split("__"))))


def _unbound_terms(claim: Mapping[str, Any], sc: Mapping[str, Any], vols: Volumes) -> list[dict[str, Any]] | None:
    """Where an unbound WaitForFirstConsumer claim can get a volume: [] = nowhere, None = anywhere."""
    provisioner = sc.get("provisioner") or ""
    if provisioner and provisioner != NO_PROVISIONER:
        return _class_terms(sc)
    want = _storage(((claim.get("spec") or {}).get("resources") or {}).get("requests", {}).get("storage"))
    name = (sc.get("metadata") or {}).get("name", "")
    terms: list[dict[str, Any]] = []
    for pv in vols.pvs.values():
        spec = pv.get("spec") or {}
        if (spec.get("storageClassName") or "") != name or spec.get("claimRef") \
                or (pv.get("status") or {}).get("phase", "Available") != "Available" \
                or _storage((spec.get("capacity") or {}).get("storage")) < want:
            continue
        pv_terms = _pv_terms(pv)
        if pv_terms is None:
            return None
        terms += pv_terms
    return terms


def volume_needs(namespace: str, spec: Mapping[str, Any], vols: Volumes) -> VolumeNeeds:
    needs = VolumeNeeds()
    for name in claim_names(spec):
        claim = vols.pvcs.get((namespace, name))
        if claim is None:
            needs.blocked = f'persistentvolumeclaim "{name}" not found'
            continue
        cspec = claim.get("spec") or {}
        if cspec.get("volumeName"):
            pv = vols.pvs.get(cspec["volumeName"])
            if pv is None:
                needs.blocked = f'persistentvolumeclaim "{name}" bound to a missing persistentvolume'
            else:
                _bound_needs(pv, needs)
            continue
        sc = vols.classes.get(cspec.get("storageClassName") or "")
        if sc is None or (sc.get("volumeBindingMode") or "Immediate") != "WaitForFirstConsumer":
            needs.blocked = f'persistentvolumeclaim "{name}" is unbound and not WaitForFirstConsumer'
            continue
        terms = _unbound_terms(claim, sc, vols)
        if terms is not None:
            if not terms:
                needs.blocked = f'no persistent volume can bind or be provisioned for "{name}"'
            needs.term_groups.append(terms)
    return needs


def zone_labels_ok(zone_labels: Sequence[tuple[str, frozenset[str]]], node_labels: Mapping[str, str]) -> bool:
    """kube VolumeZone: a node without any topology label passes; a beta PV key falls back to the GA node key."""
    if not zone_labels or not any(k in node_labels for k in TOPOLOGY_KEYS):
        return True
    for key, values in zone_labels:
        value = node_labels.get(key)
        if value is None and key in ZONE_KEYS:
            value = node_labels.get(ZONE_KEYS[key])
        if value is None or value not in values:
            return False
    return True


def needs_ok(needs: VolumeNeeds, node_labels: Mapping[str, str]) -> bool:
    if needs.blocked:
        return False
    return all(match_node_selector_terms(g, node_labels) for g in needs.term_groups) and \
        zone_labels_ok(needs.zone_labels, node_labels)


def node_terms(needs: VolumeNeeds) -> list[list[dict[str, Any]]]:
    """The needs as groups of node selector terms (zone labels as their GA keys), for the planner's requirements."""
    groups = [list(g) for g in needs.term_groups]
    for key, values in needs.zone_labels:
        groups.append([{"matchExpressions": [{"key": ZONE_KEYS.get(key, key), "operator": "In",
                                              "values": sorted(values)}]}])
    return groups


# ---- attachment limits (kube NodeVolumeLimits, Karpenter v1.15 instance-type volume limits) ----------------------

EBS_DRIVER = "ebs.csi.aws.com"
IN_TREE_DRIVERS = {"kubernetes.io/aws-ebs": EBS_DRIVER}  # migrated in-tree plugins count as their CSI driver
# EBS on Nitro: 28 attachments shared by EBS volumes, ENIs and NVMe instance store; the root volume and the primary
# ENI take one each, an instance store one more (AWS "Amazon EBS volume limits", shared-limit types). Xen types
# allow 40 volumes less the root. What the EBS CSI driver reports in CSINode wins once the node has one.
NITRO_SHARED_ATTACHMENTS = 28
XEN_VOLUMES = 40

Attachment = tuple[str, str]  # (CSI driver, volume): a volume shared by two pods of a node attaches once


def _claim_driver(claim: Mapping[str, Any], vols: Volumes) -> str | None:
    """The CSI driver a claim's volume attaches with: its bound PV's (an in-tree EBS PV is EBS), else its
    StorageClass's provisioner; None for what attaches nothing countable (local, hostPath, no provisioner)."""
    cspec = claim.get("spec") or {}
    pv = vols.pvs.get(cspec.get("volumeName") or "")
    if pv is not None:
        pspec = pv.get("spec") or {}
        if (pspec.get("csi") or {}).get("driver"):
            return str(pspec["csi"]["driver"])
        return EBS_DRIVER if pspec.get("awsElasticBlockStore") else None
    sc = vols.classes.get(cspec.get("storageClassName") or "")
    provisioner = (sc or {}).get("provisioner") or ""
    if not provisioner or provisioner == NO_PROVISIONER:
        return None
    return IN_TREE_DRIVERS.get(provisioner, provisioner)


def attachments(namespace: str, spec: Mapping[str, Any], vols: Volumes) -> frozenset[Attachment]:
    """The volumes the pod's claims attach to its node, by driver (kube's NodeVolumeLimits counts these)."""
    out: set[Attachment] = set()
    for name in claim_names(spec):
        claim = vols.pvcs.get((namespace, name))
        driver = _claim_driver(claim, vols) if claim is not None else None
        if driver is not None:
            out.add((driver, (claim.get("spec") or {}).get("volumeName") or f"{namespace}/{name}"))
    return frozenset(out)


def instance_type_limits(hypervisor: str | None, local_nvme: bool) -> dict[str, int]:
    """EBS attachments a new node of the type allows (Karpenter v1.15 lets the cloud provider declare them,
    kubernetes-sigs/karpenter#3202); {} (no limit) when the catalog does not say the hypervisor."""
    if hypervisor == "nitro":
        return {EBS_DRIVER: NITRO_SHARED_ATTACHMENTS - 2 - (1 if local_nvme else 0)}
    if hypervisor == "xen":
        return {EBS_DRIVER: XEN_VOLUMES - 1}
    return {}


def type_volume_limits(itype: Any) -> dict[str, int]:
    """`instance_type_limits` of an api.catalog.InstanceType."""
    return instance_type_limits(itype.hypervisor, itype.local_nvme)


def csinode_limits(csinode: Mapping[str, Any]) -> dict[str, int]:
    """A CSINode's `spec.drivers[].allocatable.count` by driver: what kubelet registered for the node."""
    out: dict[str, int] = {}
    for d in (csinode.get("spec") or {}).get("drivers") or ():
        count = (d.get("allocatable") or {}).get("count")
        if d.get("name") and count is not None:
            out[str(d["name"])] = int(count)
    return out


def within_limits(attached: Iterable[Attachment], limits: Mapping[str, int]) -> bool:
    """Every driver's distinct volumes fit its limit; a driver without a limit takes any number."""
    if not limits:
        return True
    counts: dict[str, int] = {}
    for driver, _ in set(attached):
        counts[driver] = counts.get(driver, 0) + 1
    return all(n <= limits[d] for d, n in counts.items() if d in limits)


def limit_shortfall(attached: Iterable[Attachment], adding: Iterable[Attachment], limits: Mapping[str, int]
                    ) -> tuple[str, int, int, int] | None:
    """The first driver (by name) whose limit `adding` would pass on a node holding `attached`: (driver, volumes
    in use, limit, new volumes the pod brings), or None when it fits."""
    have, new = set(attached), set(adding) - set(attached)
    for driver in sorted({d for d, _ in new}):
        if driver not in limits:
            continue
        used = sum(1 for d, _ in have if d == driver)
        need = sum(1 for d, _ in new if d == driver)
        if used + need > limits[driver]:
            return driver, used, limits[driver], need
    return None


def limit_detail(pod: str, node: str, attached: Iterable[Attachment], adding: Iterable[Attachment],
                 limits: Mapping[str, int]) -> str:
    """Why `node` refused `pod` for its attachment limit, for `nodeflow plan` and the Unconsolidatable Event."""
    short = limit_shortfall(attached, adding, limits)
    if short is None:
        return ""
    driver, used, limit, need = short
    return volume_limit_reached(pod, node, driver, used, limit, need)
