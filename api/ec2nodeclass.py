"""karpenter.k8s.aws/v1 EC2NodeClass: how nodes are launched on EC2 (AMI, subnets, security groups, IAM, disks).

The model keeps what was written (`to_dict()` gives the YAML that was read, defaults stay out of it, as in
api/nodepool.py), and shows Karpenter's CRD defaults through accessors (`metadata_options_defaulted`). Problems
with field paths are in api/ec2nodeclass_validation.py; resolving selectors against EC2 in
api/nodeclass_resolution.py; drift of a NodeClaim against its class in planning/lifecycle/nodeclass_drift.py.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import Field

from api.capacity_reservations import CapacityReservationSelectorTerm, CapacityReservationStatus
from api.meta import Condition, K8sModel, NodeSelectorRequirement, ObjectMeta, condition_of

GROUP = "karpenter.k8s.aws"
API_VERSION = f"{GROUP}/v1"
KIND = "EC2NodeClass"

# Static-drift annotations, Karpenter's names: the class carries the hash of its current spec, each NodeClaim the
# hash of the spec it was launched from. The version is nodeflow's own (our hash is not Karpenter's hashstructure
# value), so a claim stamped by real Karpenter ("v4") never compares against a nodeflow hash: different versions
# mean "no static drift", exactly Karpenter's rule when it bumps its own hash version.
HASH_ANNOTATION = "karpenter.k8s.aws/ec2nodeclass-hash"
HASH_VERSION_ANNOTATION = "karpenter.k8s.aws/ec2nodeclass-hash-version"
HASH_VERSION = "nodeflow-v1"

# Where nodeflow records, at launch, what the instance was launched into, so that drift needs no EC2 call
# (Karpenter reads them from the instance). Annotations, not status fields: they survive Karpenter's own
# NodeClaim CRD, which prunes unknown status fields. The image is Karpenter's own field, status.imageID.
SUBNET_ANNOTATION = "nodeflow.dev/subnet-id"
SECURITY_GROUPS_ANNOTATION = "nodeflow.dev/security-group-ids"  # sorted ids, comma-separated

AMI_FAMILIES = ("AL2", "AL2023", "Bottlerocket", "Custom", "Windows2019", "Windows2022")
# alias family (lower case, as written in `family@version`) -> amiFamily
ALIAS_FAMILIES = {"al2": "AL2", "al2023": "AL2023", "bottlerocket": "Bottlerocket",
                  "windows2019": "Windows2019", "windows2022": "Windows2022"}
WINDOWS_ALIAS_FAMILIES = ("windows2019", "windows2022")
ALIAS_LATEST = "latest"

METADATA_DEFAULTS: dict[str, Any] = {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled",
                                     "httpPutResponseHopLimit": 1, "httpTokens": "required"}

# Condition types of the class status (Karpenter v1); Ready is the conjunction of the others.
READY = "Ready"
AMIS_READY = "AMIsReady"
SUBNETS_READY = "SubnetsReady"
SECURITY_GROUPS_READY = "SecurityGroupsReady"
INSTANCE_PROFILE_READY = "InstanceProfileReady"
CAPACITY_RESERVATIONS_READY = "CapacityReservationsReady"  # True once capacityReservationSelectorTerms resolved


class SubnetSelectorTerm(K8sModel):
    """Terms are ORed; the fields of one term are ANDed. A tag value `*` means any value of that key."""

    tags: dict[str, str] | None = None
    id: str | None = None


class SecurityGroupSelectorTerm(K8sModel):
    tags: dict[str, str] | None = None
    id: str | None = None
    name: str | None = None


class AMISelectorTerm(K8sModel):
    """`alias` (`al2023@latest`, `al2023@v20240807`) selects the EKS-optimized AMI through its public SSM parameter."""

    alias: str | None = None
    tags: dict[str, str] | None = None
    id: str | None = None
    name: str | None = None
    owner: str | None = None
    ssm_parameter: str | None = None


class MetadataOptions(K8sModel):
    http_endpoint: str | None = None
    http_protocol_ipv6: str | None = Field(default=None, alias="httpProtocolIPv6")
    http_put_response_hop_limit: int | None = None
    http_tokens: str | None = None


class BlockDevice(K8sModel):
    delete_on_termination: bool | None = None
    encrypted: bool | None = None
    iops: int | None = None
    kms_key_id: str | None = Field(default=None, alias="kmsKeyID")
    snapshot_id: str | None = Field(default=None, alias="snapshotID")
    throughput: int | None = None
    volume_size: str | None = None
    volume_type: str | None = None


class BlockDeviceMapping(K8sModel):
    device_name: str | None = None
    ebs: BlockDevice | None = None
    root_volume: bool | None = None


class KubeletConfiguration(K8sModel):
    """The kubelet settings Karpenter v1 moved from the NodePool to the node class."""

    cluster_dns: list[str] | None = Field(default=None, alias="clusterDNS")
    max_pods: int | None = None
    pods_per_core: int | None = None
    system_reserved: dict[str, str] | None = None
    kube_reserved: dict[str, str] | None = None
    eviction_hard: dict[str, str] | None = None
    eviction_soft: dict[str, str] | None = None
    eviction_soft_grace_period: dict[str, str] | None = None
    eviction_max_pod_grace_period: int | None = None
    image_gc_high_threshold_percent: int | None = Field(default=None, alias="imageGCHighThresholdPercent")
    image_gc_low_threshold_percent: int | None = Field(default=None, alias="imageGCLowThresholdPercent")
    cpu_cfs_quota: bool | None = Field(default=None, alias="cpuCFSQuota")


class EC2NodeClassSpec(K8sModel):
    subnet_selector_terms: list[SubnetSelectorTerm] = Field(default_factory=list)
    security_group_selector_terms: list[SecurityGroupSelectorTerm] = Field(default_factory=list)
    ami_selector_terms: list[AMISelectorTerm] = Field(default_factory=list)
    capacity_reservation_selector_terms: list[CapacityReservationSelectorTerm] = Field(default_factory=list)
    ami_family: str | None = None
    user_data: str | None = None
    role: str | None = None
    instance_profile: str | None = None
    tags: dict[str, str] | None = None
    kubelet: KubeletConfiguration | None = None
    block_device_mappings: list[BlockDeviceMapping] | None = None
    instance_store_policy: str | None = None
    detailed_monitoring: bool | None = None
    associate_public_ip_address: bool | None = Field(default=None, alias="associatePublicIPAddress")
    metadata_options: MetadataOptions | None = None
    context: str | None = None


class AMIStatus(K8sModel):
    """One resolved image and the node requirements it serves (architecture, GPU/accelerator variant)."""

    id: str
    name: str | None = None
    requirements: list[NodeSelectorRequirement] = Field(default_factory=list)
    deprecated: bool | None = None


class SubnetStatus(K8sModel):
    id: str
    zone: str | None = None
    zone_id: str | None = Field(default=None, alias="zoneID")


class SecurityGroupStatus(K8sModel):
    id: str
    name: str | None = None


class EC2NodeClassStatus(K8sModel):
    amis: list[AMIStatus] | None = None
    subnets: list[SubnetStatus] | None = None
    security_groups: list[SecurityGroupStatus] | None = None
    capacity_reservations: list[CapacityReservationStatus] | None = None
    instance_profile: str | None = None
    conditions: list[Condition] | None = None


def split_alias(alias: str) -> tuple[str, str] | None:
    """`family@version` -> (family, version) as written; None when it is not in that form."""
    family, sep, version = alias.partition("@")
    if not sep or not family or not version or "@" in version:
        return None
    return family, version


class EC2NodeClass(K8sModel):
    """A karpenter.k8s.aws/v1 EC2NodeClass."""

    api_version: str = API_VERSION
    kind: Literal["EC2NodeClass"] = KIND
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: EC2NodeClassSpec = Field(default_factory=EC2NodeClassSpec)
    status: EC2NodeClassStatus = Field(default_factory=EC2NodeClassStatus)

    @property
    def name(self) -> str:
        return self.metadata.name

    def annotation(self, key: str) -> str | None:
        return (self.metadata.annotations or {}).get(key)

    def alias(self) -> tuple[str, str] | None:
        """(family, version) of the alias term, lower-case family as written; None without an alias."""
        for term in self.spec.ami_selector_terms:
            if term.alias:
                return split_alias(term.alias)
        return None

    @property
    def ami_family(self) -> str:
        """The family that shapes user data and default disks: spec.amiFamily, else the alias's family.

        Validation makes one of them present; Custom is Karpenter's answer for the unreachable rest.
        """
        if self.spec.ami_family:
            return self.spec.ami_family
        alias = self.alias()
        return ALIAS_FAMILIES.get(alias[0], "Custom") if alias else "Custom"

    def metadata_options_defaulted(self) -> dict[str, Any]:
        """IMDS options with Karpenter's defaults filled in (enabled, IPv6 disabled, hop limit 1, tokens required)."""
        written = self.spec.metadata_options.to_dict() if self.spec.metadata_options else {}
        return {**METADATA_DEFAULTS, **written}

    def condition(self, type_: str) -> Condition | None:
        return condition_of(self.status.conditions, type_)

    @property
    def ready(self) -> bool:
        c = self.condition(READY)
        return c is not None and c.status == "True"

    def static_hash(self) -> str:
        """Hash of the spec fields whose change is static drift (NodeClassDrift); see `hash_material`."""
        blob = json.dumps(hash_material(self), sort_keys=True, separators=(",", ":")).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def hash_annotations(self) -> dict[str, str]:
        """The two annotations the class carries and every NodeClaim launched from it is stamped with."""
        return {HASH_ANNOTATION: self.static_hash(), HASH_VERSION_ANNOTATION: HASH_VERSION}


# Karpenter's `hash:"ignore"` spec fields: selector terms are resolved dynamically (their effect shows as AMI,
# subnet or security group drift), ipPrefixCount is ignored, amiFamily is replaced by the resolved family so that
# writing `amiFamily: AL2023` next to `al2023@latest` is not drift. Everything else in the spec is hashed.
HASH_IGNORED = frozenset({"subnetSelectorTerms", "securityGroupSelectorTerms", "capacityReservationSelectorTerms",
                          "amiSelectorTerms", "ipPrefixCount", "amiFamily"})
# Lists hashed as sets (Karpenter hashes with SlicesAsSets): their order is not drift.
_SET_LISTS = frozenset({"blockDeviceMappings", "clusterDNS"})


def _canonical(value: Any, key: str = "") -> Any:
    """Zero values dropped (IgnoreZeroValue: unset == empty == false == 0) and set-like lists sorted."""
    if isinstance(value, dict):
        out = {k: _canonical(v, k) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, "", False, 0, {}, [])}
    if isinstance(value, list):
        items = [_canonical(v) for v in value]
        items = [v for v in items if v not in (None, "", {}, [])]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True)) if key in _SET_LISTS else items
    return value


def hash_material(node_class: EC2NodeClass) -> dict[str, Any]:
    """What `static_hash` hashes: the defaulted spec minus HASH_IGNORED, plus the resolved AMI family.

    metadataOptions is defaulted first (the API server stores the default), so leaving it out and writing
    Karpenter's defaults hash the same.
    """
    spec = node_class.spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    spec = {k: v for k, v in spec.items() if k not in HASH_IGNORED}
    spec["metadataOptions"] = node_class.metadata_options_defaulted()
    material = _canonical(spec)
    material["amiFamily"] = node_class.ami_family
    return material


def launch_annotations(node_class: EC2NodeClass, subnet_id: str, security_group_ids: list[str]) -> dict[str, str]:
    """Annotations the launch stamps on a NodeClaim: the class hash it was built from and where it was placed."""
    return {**node_class.hash_annotations(), SUBNET_ANNOTATION: subnet_id,
            SECURITY_GROUPS_ANNOTATION: ",".join(sorted(set(security_group_ids)))}


def recorded_security_groups(value: str | None) -> frozenset[str] | None:
    """The security group ids of SECURITY_GROUPS_ANNOTATION; None when nothing was recorded."""
    if not value:
        return None
    return frozenset(g.strip() for g in value.split(",") if g.strip())


def load_ec2nodeclass(data: dict[str, Any]) -> EC2NodeClass:
    """Build an EC2NodeClass from a dict (as read from YAML or the API)."""
    return EC2NodeClass.model_validate(data)


def claims_of_class(claims: list[dict[str, Any]], node_class: str) -> list[str]:
    """Names of the NodeClaims whose `spec.nodeClassRef` is the EC2NodeClass `node_class`, sorted (a deleted class
    waits for them: Karpenter's nodeclaimutils.ForNodeClass)."""
    out = []
    for claim in claims:
        ref = (claim.get("spec") or {}).get("nodeClassRef") or {}
        if ref.get("name") == node_class and ref.get("kind", KIND) == KIND and ref.get("group", GROUP) == GROUP:
            out.append((claim.get("metadata") or {}).get("name", ""))
    return sorted(out)
