"""Launch: what a NodeClaim records once its instance exists (Karpenter's lifecycle/launch.go with the AWS
provider's result, docs/karpenter-reference.md §3): providerID, imageID, capacity and
allocatable (the instance type under the claim's EC2NodeClass), the instance type's single-valued labels plus
zone and capacity type (the claim's own labels win), `Launched=True` and the root `Ready` it implies (Unknown
until registered and initialized).

nodeflow's launch activity creates the instance; this record is written right after RunInstances by that
activity and, should it have crashed in between, by the lifecycle controller from the instance it finds by tag.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from api import labels as L
from api.allocatable import VM_MEMORY_OVERHEAD_PERCENT, extended_resources, for_node_class
from api.catalog import InstanceType
from api.ec2nodeclass import EC2NodeClass
from api.nodeclaim import LAUNCHED
from api.timestamps import parse_time
from planning.cluster import type_labels
from planning.lifecycle.conditions import TRUE, Obj, conditions_of, is_true, with_condition
from planning.lifecycle.disruption_conditions import with_ready

SPOT_LIFECYCLE = "spot"


def provider_id(zone: str, instance_id: str) -> str:
    return f"aws:///{zone}/{instance_id}"


def instance_zone(instance: Mapping[str, Any]) -> str:
    return str((instance.get("Placement") or {}).get("AvailabilityZone") or "")


def capacity_type(instance: Mapping[str, Any]) -> str:
    """`reserved` for an instance in a capacity reservation (Karpenter reads CapacityReservationId), else by its
    lifecycle."""
    if instance.get("CapacityReservationId"):
        return "reserved"
    return L.CAPACITY_SPOT if instance.get("InstanceLifecycle") == SPOT_LIFECYCLE else L.CAPACITY_ON_DEMAND


def resources(itype: InstanceType | None, node_class: EC2NodeClass | None = None,
              overhead_percent: float = VM_MEMORY_OVERHEAD_PERCENT) -> tuple[dict[str, str], dict[str, str]]:
    """(capacity, allocatable) the claim records, as Karpenter's AWS provider reports them for the type under the
    claim's EC2NodeClass (api/allocatable.py, docs/semantics.md §17.3): memory less the VM overhead, ephemeral
    storage from the class's root volume, pods from its kubelet block; allocatable less kube-reserved,
    system-reserved and the eviction thresholds; device resources as capacity; zero values left out, as Karpenter
    keeps only non-zero ones. Without a class: an AL2023 class without a kubelet block or disks."""
    if itype is None:
        return {}, {}
    computed = for_node_class(itype, node_class, overhead_percent)
    devices = {name: str(count) for name, count in extended_resources(itype).items()}
    capacity = {**computed.capacity.quantities(), **devices}
    allocatable = {**computed.allocatable.quantities(), **devices}
    return ({k: v for k, v in capacity.items() if not _zero(v)},
            {k: v for k, v in allocatable.items() if not _zero(v)})


def _zero(quantity: str) -> bool:
    return quantity.rstrip("KMGTPEimn") in ("0", "")


def launched_labels(claim: Obj, instance: Mapping[str, Any], itype: InstanceType | None,
                    capacity: str | None = None) -> dict[str, str]:
    """The instance's labels under the claim's own (which win, as in Karpenter's PopulateNodeClaimDetails);
    `capacity`: the capacity type launched, when the caller knows it better than the instance description."""
    zone = instance_zone(instance)
    out = dict(type_labels(itype)) if itype is not None else {}
    out[L.INSTANCE_TYPE_LABEL] = str(instance.get("InstanceType") or out.get(L.INSTANCE_TYPE_LABEL, ""))
    if zone:
        out[L.ZONE_LABEL] = zone
        out[L.REGION_LABEL] = zone[:-1]
    out[L.CAPACITY_TYPE_LABEL] = capacity or capacity_type(instance)
    out.update((claim.get("metadata") or {}).get("labels") or {})
    return out


def launch_patch(claim: Obj, instance: Mapping[str, Any], itype: InstanceType | None,
                 now: datetime, capacity: str | None = None, node_class: EC2NodeClass | None = None,
                 overhead_percent: float = VM_MEMORY_OVERHEAD_PERCENT) -> tuple[Obj | None, Obj | None]:
    """(metadata patch, status patch) recording the launch; (None, None) once the claim says Launched.
    `node_class`: the claim's EC2NodeClass, which shapes capacity and allocatable (`resources`)."""
    if is_true(claim, LAUNCHED) and (claim.get("status") or {}).get("providerID"):
        return None, None
    status = dict(claim.get("status") or {})
    cap, allocatable = resources(itype, node_class, overhead_percent)
    status["providerID"] = provider_id(instance_zone(instance), str(instance["InstanceId"]))
    if instance.get("ImageId"):
        status["imageID"] = instance["ImageId"]
    if cap:
        status["capacity"], status["allocatable"] = cap, allocatable
    launched = with_condition(conditions_of(claim), LAUNCHED, TRUE, "Launched", "", now)
    status["conditions"] = with_ready(launched, parse_time((claim.get("metadata") or {}).get("creationTimestamp")), now)
    current = (claim.get("metadata") or {}).get("labels") or {}
    wanted = launched_labels(claim, instance, itype, capacity)
    meta = {"labels": wanted} if wanted != current else None
    return ({"metadata": meta} if meta else None), {"status": status}
