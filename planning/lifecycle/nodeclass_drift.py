"""EC2NodeClass drift: is a node still what its EC2NodeClass would launch today? (Karpenter's cloudprovider drift.)

Where it plugs in: `planning/disruption/drift.py::drift_reason` checks, in Karpenter's order, NodePool static drift,
requirements drift, then the cloud provider (docs/semantics.md §4.3); that last step is `nodeclass_drift` here,
called for a launched NodeClaim with the EC2NodeClass its NodePool's nodeClassRef names. The reasons it
returns are Karpenter's condition reasons and replace the node like any other drift (budget reason `Drifted`).

What the node was launched with comes from the NodeClaim, not from EC2: `status.imageID` (Karpenter's field) and
the annotations the launch stamps (api/ec2nodeclass.py `launch_annotations`): the class hash and hash version,
`nodeflow.dev/subnet-id` and `nodeflow.dev/security-group-ids`. Like Karpenter, a check that lacks its inputs
(nothing recorded on the claim, or an empty list in the class status) finds no drift rather than guessing:
Karpenter returns an error there, and an error is never drift.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from api.ec2nodeclass import (
    HASH_ANNOTATION,
    HASH_VERSION_ANNOTATION,
    SECURITY_GROUPS_ANNOTATION,
    SUBNET_ANNOTATION,
    AMIStatus,
    EC2NodeClass,
    recorded_security_groups,
)
from api.nodeclaim import NodeClaim
from planning.cluster import ClaimInfo
from planning.selectors import match_requirement


class NodeClassDriftReason(StrEnum):
    """Karpenter's drift reasons for an EC2NodeClass, in the order they are checked."""

    NODE_CLASS = "NodeClassDrift"
    AMI = "AMIDrift"
    SECURITY_GROUP = "SecurityGroupDrift"
    SUBNET = "SubnetDrift"


@dataclass(frozen=True)
class LaunchRecord:
    """What one node was launched with, as its NodeClaim records it."""

    image_id: str | None
    subnet_id: str | None
    security_group_ids: frozenset[str] | None
    annotations: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_nodeclaim(cls, claim: NodeClaim) -> LaunchRecord:
        """Labels include single-valued `In` requirements of the spec, so a claim whose node has not registered
        yet still says which architecture it is."""
        annotations = dict(claim.metadata.annotations or {})
        labels = {r.key: r.values[0] for r in claim.spec.requirements
                  if r.operator == "In" and r.values and len(r.values) == 1}
        labels.update(claim.metadata.labels or {})
        return cls(image_id=claim.status.image_id or None, subnet_id=annotations.get(SUBNET_ANNOTATION) or None,
                   security_group_ids=recorded_security_groups(annotations.get(SECURITY_GROUPS_ANNOTATION)),
                   annotations=annotations, labels=labels)


def launch_record(claim: ClaimInfo, node_labels: Mapping[str, str]) -> LaunchRecord:
    """The record of a claim as the planner parsed it; the node's labels (arch, instance type) win over the
    claim's pinned requirements, as they describe the machine that exists."""
    annotations = claim.annotations
    return LaunchRecord(image_id=claim.image_id or None, subnet_id=annotations.get(SUBNET_ANNOTATION) or None,
                        security_group_ids=recorded_security_groups(annotations.get(SECURITY_GROUPS_ANNOTATION)),
                        annotations=annotations, labels={**claim.spec_labels, **claim.labels, **node_labels})


def static_drift(record: LaunchRecord, node_class: EC2NodeClass) -> bool:
    """All four hash annotations present, same hash version, different hash. A different version is never drift:
    it means the hash itself changed meaning (a nodeflow upgrade, or a claim stamped by Karpenter)."""
    class_hash = node_class.annotation(HASH_ANNOTATION)
    class_version = node_class.annotation(HASH_VERSION_ANNOTATION)
    claim_hash = record.annotations.get(HASH_ANNOTATION)
    claim_version = record.annotations.get(HASH_VERSION_ANNOTATION)
    if not (class_hash and class_version and claim_hash and claim_version) or class_version != claim_version:
        return False
    return class_hash != claim_hash


def _compatible(ami: AMIStatus, labels: Mapping[str, str]) -> bool:
    """Karpenter's Compatible with undefined well-known labels allowed: an `In` on a label the node does not
    carry does not exclude the image; Exists and DoesNotExist always decide (GPU and accelerator variants)."""
    for req in ami.requirements:
        if req.key not in labels and req.operator in ("In", "Gt", "Lt"):
            continue
        if not match_requirement(req.key, req.operator, req.values or (), labels):
            return False
    return True


def expected_image(record: LaunchRecord, node_class: EC2NodeClass) -> str | None:
    """The image this node would get today: the first image of status.amis compatible with it (the list is
    sorted best first), as Karpenter's MapToInstanceTypes picks."""
    for ami in node_class.status.amis or ():
        if _compatible(ami, record.labels):
            return ami.id
    return None


def ami_drift(record: LaunchRecord, node_class: EC2NodeClass) -> bool:
    """The node's image is not the one it would get today. No compatible image at all is drift too (the class no
    longer serves such nodes); an empty status or an unrecorded image is not decidable, so not drift."""
    if not node_class.status.amis or not record.image_id:
        return False
    return expected_image(record, node_class) != record.image_id


def security_group_drift(record: LaunchRecord, node_class: EC2NodeClass) -> bool:
    """The node's security groups are not exactly the resolved set (one added or removed is drift)."""
    resolved = {g.id for g in node_class.status.security_groups or ()}
    if not resolved or record.security_group_ids is None:
        return False
    return resolved != set(record.security_group_ids)


def subnet_drift(record: LaunchRecord, node_class: EC2NodeClass) -> bool:
    """The node's subnet is no longer among the resolved subnets."""
    resolved = {s.id for s in node_class.status.subnets or ()}
    if not resolved or not record.subnet_id:
        return False
    return record.subnet_id not in resolved


def nodeclass_drift(record: LaunchRecord | NodeClaim, node_class: EC2NodeClass) -> NodeClassDriftReason | None:
    """Why the node drifted from its EC2NodeClass, or None; the first reason in Karpenter's order wins:
    static fields (hash) first, then AMI, security groups, subnet.

    The caller checks what Karpenter core checks first: the claim is Launched and references this class.
    """
    if isinstance(record, NodeClaim):
        record = LaunchRecord.from_nodeclaim(record)
    checks = ((NodeClassDriftReason.NODE_CLASS, static_drift), (NodeClassDriftReason.AMI, ami_drift),
              (NodeClassDriftReason.SECURITY_GROUP, security_group_drift), (NodeClassDriftReason.SUBNET, subnet_drift))
    for reason, check in checks:
        if check(record, node_class):
            return reason
    return None
