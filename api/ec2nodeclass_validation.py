"""Validation of EC2NodeClass documents: Karpenter v1's CRD rules (OpenAPI and CEL), each problem with its field path.

Same style as api/validation.py (`spec.amiSelectorTerms[1]: 'id' is mutually exclusive ...`), every problem
reported. One deliberate difference: Karpenter writes several per-term rules as `!self.all(...)`, which rejects a
bad term only when every term is bad; we check each term, which is what the messages say. And a term whose only
field is an empty `tags: {}` is rejected, since it would select every subnet, security group or image.
"""

from __future__ import annotations

from typing import Any

from api.duration import matches_pattern
from api.ec2nodeclass import (
    ALIAS_FAMILIES,
    AMI_FAMILIES,
    API_VERSION,
    KIND,
    WINDOWS_ALIAS_FAMILIES,
    split_alias,
)
from api.validation import QUANTITY_PATTERN, _check_metadata, _Problems

MAX_TERMS = 30
MAX_TERM_TAGS = 20
MAX_TAGS = 50  # EC2's limit of tags on one resource; the CRD's maxProperties of spec.tags (bounds its CEL rules' cost)
MAX_BLOCK_DEVICE_MAPPINGS = 50
ALIAS_MAX_LENGTH = 30
ALIAS_PATTERN = r"^[a-zA-Z0-9]+@.+$"
SUBNET_ID_PATTERN = "subnet-[0-9a-z]+"
SECURITY_GROUP_ID_PATTERN = "sg-[0-9a-z]+"
AMI_ID_PATTERN = "ami-[0-9a-z]+"
VOLUME_SIZE_PATTERN = (
    r"^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}"
    r"|64000)G|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$"
)
VOLUME_TYPES = ("standard", "io1", "io2", "gp2", "sc1", "st1", "gp3")
ENABLED_DISABLED = ("enabled", "disabled")
HTTP_TOKENS = ("required", "optional")
HOP_LIMIT_RANGE = (1, 64)
INSTANCE_STORE_POLICIES = ("RAID0",)
RESERVED_KEYS = ("cpu", "memory", "ephemeral-storage", "pid")
EVICTION_SIGNALS = ("memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available",
                    "imagefs.inodesFree", "pid.available")
# Tags Karpenter sets itself on every instance; a class may not set them (CEL on spec.tags).
RESTRICTED_TAGS = ("eks:eks-cluster-name", "karpenter.sh/nodepool", "karpenter.sh/nodeclaim",
                   "karpenter.k8s.aws/ec2nodeclass")
RESTRICTED_TAG_PREFIX = "kubernetes.io/cluster"

CLASS_FIELDS = {"apiVersion", "kind", "metadata", "spec", "status"}
SPEC_FIELDS = {
    "subnetSelectorTerms", "securityGroupSelectorTerms", "capacityReservationSelectorTerms", "amiSelectorTerms",
    "amiFamily", "userData", "role", "instanceProfile", "tags", "kubelet", "blockDeviceMappings",
    "instanceStorePolicy", "detailedMonitoring", "associatePublicIPAddress", "metadataOptions", "context",
    "ipPrefixCount", "enclaveOptions",
}
SUBNET_TERM_FIELDS = ("tags", "id")
RESERVATION_TERM_FIELDS = ("tags", "id", "instanceMatchCriteria")  # ownerID only narrows tags
RESERVATION_ID_PATTERN = "^cr-[0-9a-z]+$"
OWNER_ID_PATTERN = "^[0-9]{12}$"
SECURITY_GROUP_TERM_FIELDS = ("tags", "id", "name")
AMI_TERM_FIELDS = ("tags", "id", "name", "alias", "ssmParameter")  # owner only narrows a name or tags
METADATA_FIELDS = {"httpEndpoint", "httpProtocolIPv6", "httpPutResponseHopLimit", "httpTokens"}
BDM_FIELDS = {"deviceName", "ebs", "rootVolume"}
EBS_FIELDS = {"deleteOnTermination", "encrypted", "iops", "kmsKeyID", "snapshotID", "throughput", "volumeSize",
              "volumeType", "volumeInitializationRate"}
KUBELET_FIELDS = {"clusterDNS", "maxPods", "podsPerCore", "systemReserved", "kubeReserved", "evictionHard",
                  "evictionSoft", "evictionSoftGracePeriod", "evictionMaxPodGracePeriod",
                  "imageGCHighThresholdPercent", "imageGCLowThresholdPercent", "cpuCFSQuota"}


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_term_tags(p: _Problems, path: str, tags: Any) -> None:
    m = p.mapping(path, tags)
    if m is None:
        return
    if not m:
        p.add(path, "must not be empty: a term without a filter would select everything")
    if len(m) > MAX_TERM_TAGS:
        p.add(path, f"has {len(m)} tags, at most {MAX_TERM_TAGS} allowed (maxProperties)")
    for key, value in m.items():
        if key == "" or not isinstance(value, str) or value == "":
            p.add(f"{path}[{key}]", "empty tag keys or values aren't supported")


def _check_reservation_terms(p: _Problems, obj: Any) -> None:
    """Karpenter's CRD rules for capacityReservationSelectorTerms (optional; `id` alone, else tags / ownerID /
    instanceMatchCriteria)."""
    if obj is None or obj == []:
        return
    path = "spec.capacityReservationSelectorTerms"
    for i, term in enumerate(_check_terms(p, path, obj, RESERVATION_TERM_FIELDS, {"ownerID"},
                                          RESERVATION_ID_PATTERN, exclusive=("id",))):
        owner = p.string(f"{path}[{i}].ownerID", term.get("ownerID"))
        if owner is not None and not matches_pattern(OWNER_ID_PATTERN, owner):
            p.add(f"{path}[{i}].ownerID", f"{owner!r} does not match {OWNER_ID_PATTERN!r}")
        criteria = term.get("instanceMatchCriteria")
        if criteria is not None and criteria not in ("open", "targeted"):
            p.add(f"{path}[{i}].instanceMatchCriteria", f"Unsupported value: {criteria!r}: supported values: "
                                                         f"\"open\", \"targeted\"")


def _check_terms(p: _Problems, path: str, obj: Any, selectors: tuple[str, ...], extra: set[str],
                 id_pattern: str, exclusive: tuple[str, ...]) -> list[dict[str, Any]]:
    """The rules all three selector lists share; returns the terms that are mappings, for the per-kind rules."""
    if obj is None:
        p.add(path, "required field is missing")
        return []
    terms = p.listing(path, obj, MAX_TERMS)
    if isinstance(obj, list) and not obj:
        p.add(path, f"{path.rsplit('.', 1)[-1]} cannot be empty")
    good = []
    for i, raw in enumerate(terms):
        tpath = f"{path}[{i}]"
        term = p.mapping(tpath, raw, item=True)
        if term is None:
            continue
        good.append(term)
        p.unknown(tpath, term, set(selectors) | extra)
        if not any(term.get(f) is not None for f in selectors):
            p.add(tpath, f"expected at least one, got none, [{', '.join(repr(f) for f in selectors)}]")
        for field in exclusive:
            others = [f for f in (*selectors, *extra) if f != field and term.get(f) is not None]
            if term.get(field) is not None and others:
                p.add(tpath, f"{field!r} is mutually exclusive, cannot be set with a combination of other fields "
                             f"(found {', '.join(others)})")
        ident = p.string(f"{tpath}.id", term.get("id"))
        if ident is not None and not matches_pattern(id_pattern, ident):
            p.add(f"{tpath}.id", f"{ident!r} does not match {id_pattern!r}")
        for field in sorted({"name", "owner", "ssmParameter"} & (set(selectors) | extra)):
            if p.string(f"{tpath}.{field}", term.get(field)) == "":
                p.add(f"{tpath}.{field}", "must not be empty")
        if "tags" in term:
            _check_term_tags(p, f"{tpath}.tags", term.get("tags"))
    return good


def _check_alias(p: _Problems, path: str, alias: Any) -> str | None:
    """The alias's family (lower case) when the alias is well formed."""
    alias = p.string(path, alias)
    if alias is None:
        return None
    if len(alias) > ALIAS_MAX_LENGTH:
        p.add(path, f"must be at most {ALIAS_MAX_LENGTH} characters")
    parts = split_alias(alias)
    if not matches_pattern(ALIAS_PATTERN, alias) or parts is None:
        p.add(path, "'alias' is improperly formatted, must match the format 'family@version'")
        return None
    family, version = parts
    if family not in ALIAS_FAMILIES:
        p.add(path, "family is not supported, must be one of the following: "
                    f"{', '.join(repr(f) for f in ALIAS_FAMILIES)}")
        return None
    if family in WINDOWS_ALIAS_FAMILIES and version != "latest":
        p.add(path, "windows families may only specify version 'latest'")
    return family


def _check_ami_terms(p: _Problems, spec: dict[str, Any]) -> None:
    path = "spec.amiSelectorTerms"
    terms = _check_terms(p, path, spec.get("amiSelectorTerms"), AMI_TERM_FIELDS, {"owner"}, AMI_ID_PATTERN,
                         exclusive=("id", "alias"))
    aliases = [(i, t) for i, t in enumerate(terms) if t.get("alias") is not None]
    if aliases and len(terms) != 1:
        p.add(path, "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms")
    family = spec.get("amiFamily")
    if family is not None and family not in AMI_FAMILIES:
        p.not_one_of("spec.amiFamily", family, AMI_FAMILIES)
    alias_family = None
    for i, term in aliases:
        alias_family = _check_alias(p, f"{path}[{i}].alias", term.get("alias")) or alias_family
    if not aliases and family is None:
        p.add("spec.amiFamily", "must specify amiFamily if amiSelectorTerms does not contain an alias")
    if alias_family and family is not None and family not in ("Custom", ALIAS_FAMILIES[alias_family]):
        expected = ALIAS_FAMILIES[alias_family]
        p.add("spec.amiFamily", f"if set, amiFamily must be {expected!r} or 'Custom' when using "
                                f"a{'n' if expected[0] in 'A' else ''} {expected} alias")


def _check_identity(p: _Problems, spec: dict[str, Any]) -> None:
    role, profile = spec.get("role"), spec.get("instanceProfile")
    if (role is None) == (profile is None):
        p.add("spec", "must specify exactly one of ['role', 'instanceProfile']")
    for field in ("role", "instanceProfile"):
        if p.string(f"spec.{field}", spec.get(field)) == "":
            p.add(f"spec.{field}", f"{field} cannot be empty")


def _check_tags(p: _Problems, obj: Any) -> None:
    tags = p.mapping("spec.tags", obj) or {}
    if len(tags) > MAX_TAGS:
        p.add("spec.tags", f"has {len(tags)} tags, at most {MAX_TAGS} allowed (maxProperties)")
    for key, value in tags.items():
        path = f"spec.tags[{key}]"
        if key == "":
            p.add(path, "empty tag keys aren't supported")
        elif key in RESTRICTED_TAGS:
            p.add(path, f"tag contains a restricted tag matching {key}")
        elif str(key).startswith(RESTRICTED_TAG_PREFIX):
            p.add(path, "tag contains a restricted tag matching kubernetes.io/cluster/")
        if not isinstance(value, str):
            p.add(path, f"value must be a string, got {type(value).__name__}")


def _check_metadata_options(p: _Problems, obj: Any) -> None:
    path = "spec.metadataOptions"
    m = p.section(path, obj, METADATA_FIELDS)
    if m is None:
        return
    for field, allowed in (("httpEndpoint", ENABLED_DISABLED), ("httpProtocolIPv6", ENABLED_DISABLED),
                           ("httpTokens", HTTP_TOKENS)):
        if m.get(field) is not None and m[field] not in allowed:
            p.not_one_of(f"{path}.{field}", m[field], allowed)
    hop = m.get("httpPutResponseHopLimit")
    if hop is not None and (not _is_int(hop) or not HOP_LIMIT_RANGE[0] <= hop <= HOP_LIMIT_RANGE[1]):
        low, high = HOP_LIMIT_RANGE
        p.add(f"{path}.httpPutResponseHopLimit", f"must be an integer from {low} to {high}")


def _check_ebs(p: _Problems, path: str, obj: Any) -> None:
    ebs = p.section(path, obj, EBS_FIELDS)
    if ebs is None:
        return
    if ebs.get("snapshotID") is None and ebs.get("volumeSize") is None:
        p.add(path, "snapshotID or volumeSize must be defined")
    size = ebs.get("volumeSize")
    if size is not None and (not isinstance(size, str) or not matches_pattern(VOLUME_SIZE_PATTERN, size)):
        p.add(f"{path}.volumeSize", f"{size!r} is not a volume size (1-64000G, 1-59000Gi, 1-64T or 1-58Ti)")
    vtype = ebs.get("volumeType")
    if vtype is not None and vtype not in VOLUME_TYPES:
        p.not_one_of(f"{path}.volumeType", vtype, VOLUME_TYPES)
    for field in ("iops", "throughput"):
        if ebs.get(field) is not None and not _is_int(ebs[field]):
            p.add(f"{path}.{field}", f"must be an integer, got {type(ebs[field]).__name__}")


def _check_block_devices(p: _Problems, obj: Any) -> None:
    path = "spec.blockDeviceMappings"
    items = p.listing(path, obj, MAX_BLOCK_DEVICE_MAPPINGS)
    roots = 0
    for i, raw in enumerate(items):
        bpath = f"{path}[{i}]"
        bdm = p.mapping(bpath, raw, item=True)
        if bdm is None:
            continue
        p.unknown(bpath, bdm, BDM_FIELDS)
        p.string(f"{bpath}.deviceName", bdm.get("deviceName"))
        roots += bdm.get("rootVolume") is True
        _check_ebs(p, f"{bpath}.ebs", bdm.get("ebs"))
    if roots > 1:
        p.add(path, "must have only one blockDeviceMappings with rootVolume")


def _check_resource_map(p: _Problems, path: str, obj: Any, keys: tuple[str, ...], field: str) -> dict[str, Any]:
    m = p.mapping(path, obj) or {}
    for key, value in m.items():
        if key not in keys:
            p.add(f"{path}[{key}]", f"valid keys for {field} are [{', '.join(repr(k) for k in keys)}]")
        if not isinstance(value, str):
            p.add(f"{path}[{key}]", f"value must be a string, got {type(value).__name__}")
        elif field.endswith("Reserved") and (value.startswith("-") or not matches_pattern(QUANTITY_PATTERN, value)):
            p.add(f"{path}[{key}]", f"{value!r} is not a non-negative resource quantity")
    return m


def _check_kubelet(p: _Problems, obj: Any) -> None:
    path = "spec.kubelet"
    k = p.section(path, obj, KUBELET_FIELDS)
    if k is None:
        return
    for field, low, high in (("maxPods", 0, None), ("podsPerCore", 0, None), ("evictionMaxPodGracePeriod", None, None),
                             ("imageGCHighThresholdPercent", 0, 100), ("imageGCLowThresholdPercent", 0, 100)):
        v = k.get(field)
        if v is not None and (not _is_int(v) or (low is not None and v < low) or (high is not None and v > high)):
            bounds = f" from {low} to {high}" if high is not None else (f" >= {low}" if low is not None else "")
            p.add(f"{path}.{field}", f"must be an integer{bounds}")
    for field in ("systemReserved", "kubeReserved"):
        _check_resource_map(p, f"{path}.{field}", k.get(field), RESERVED_KEYS, field)
    _check_resource_map(p, f"{path}.evictionHard", k.get("evictionHard"), EVICTION_SIGNALS, "evictionHard")
    soft = _check_resource_map(p, f"{path}.evictionSoft", k.get("evictionSoft"), EVICTION_SIGNALS, "evictionSoft")
    grace = _check_resource_map(p, f"{path}.evictionSoftGracePeriod", k.get("evictionSoftGracePeriod"),
                                EVICTION_SIGNALS, "evictionSoftGracePeriod")
    for key in sorted(set(soft) - set(grace)):
        p.add(f"{path}.evictionSoft[{key}]", "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod")
    for key in sorted(set(grace) - set(soft)):
        p.add(f"{path}.evictionSoftGracePeriod[{key}]",
              "evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft")
    high, low = k.get("imageGCHighThresholdPercent"), k.get("imageGCLowThresholdPercent")
    if _is_int(high) and _is_int(low) and high <= low:
        p.add(path, "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent")
    dns = p.listing(f"{path}.clusterDNS", k.get("clusterDNS"))
    if not all(isinstance(x, str) for x in dns):
        p.add(f"{path}.clusterDNS", "must be a list of strings")


def _check_scalars(p: _Problems, spec: dict[str, Any]) -> None:
    for field in ("userData", "context"):
        p.string(f"spec.{field}", spec.get(field))
    for field in ("detailedMonitoring", "associatePublicIPAddress"):
        if spec.get(field) is not None and not isinstance(spec[field], bool):
            p.add(f"spec.{field}", f"must be a boolean, got {type(spec[field]).__name__}")
    policy = spec.get("instanceStorePolicy")
    if policy is not None and policy not in INSTANCE_STORE_POLICIES:
        p.not_one_of("spec.instanceStorePolicy", policy, INSTANCE_STORE_POLICIES)


def validate_ec2nodeclass(obj: Any) -> list[str]:
    """Every problem of an EC2NodeClass document (as a dict); an empty list when it is valid."""
    if not isinstance(obj, dict):
        return [f"(document): must be an object, got {type(obj).__name__}"]
    p = _Problems()
    p.unknown("", obj, CLASS_FIELDS)
    if obj.get("apiVersion") != API_VERSION:
        p.add("apiVersion", f"must be {API_VERSION!r}, got {obj.get('apiVersion')!r}")
    if obj.get("kind") != KIND:
        p.add("kind", f"must be {KIND!r}, got {obj.get('kind')!r}")
    _check_metadata(p, obj, max_name=253)
    spec = p.mapping("spec", obj.get("spec"), required=True)
    if spec is None:
        return p.items
    p.unknown("spec", spec, SPEC_FIELDS)
    _check_terms(p, "spec.subnetSelectorTerms", spec.get("subnetSelectorTerms"), SUBNET_TERM_FIELDS, set(),
                 SUBNET_ID_PATTERN, exclusive=("id",))
    _check_terms(p, "spec.securityGroupSelectorTerms", spec.get("securityGroupSelectorTerms"),
                 SECURITY_GROUP_TERM_FIELDS, set(), SECURITY_GROUP_ID_PATTERN, exclusive=("id", "name"))
    _check_ami_terms(p, spec)
    _check_reservation_terms(p, spec.get("capacityReservationSelectorTerms"))
    _check_identity(p, spec)
    _check_tags(p, spec.get("tags"))
    _check_metadata_options(p, spec.get("metadataOptions"))
    _check_block_devices(p, spec.get("blockDeviceMappings"))
    _check_kubelet(p, spec.get("kubelet"))
    _check_scalars(p, spec)
    return p.items
