"""Resolving an EC2NodeClass's selectors against what EC2 and SSM returned: its status, as Karpenter computes it.

Pure: the caller (a launch or status activity) performs the calls this module describes and hands back the
answers, shaped as boto3 returns them. The flow, one round trip per step:

1. `ssm_parameter_paths(nc, k8s_version)`: the SSM parameters to read (an alias's EKS-optimized AMI parameters,
   or `ssmParameter` terms); the caller reads them into `ssm_values` (path -> image id; a missing one is absent).
2. `ami_queries(nc, k8s_version, ssm_values)`, `subnet_queries(nc)`, `security_group_queries(nc)`: one
   DescribeImages / DescribeSubnets / DescribeSecurityGroups input per selector term (`TermQuery.params`); the
   caller runs each and keys the returned `Images` / `Subnets` / `SecurityGroups` by `TermQuery.term`.
3. `resolve_status(...)`: status.amis, status.subnets, status.securityGroups, status.instanceProfile and the
   conditions, Ready with a message naming what did not resolve.

One query per term (Karpenter batches `id` terms into one call) so that a term matching nothing can be named.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cmp_to_key
from typing import Any

from api.ec2nodeclass import (
    ALIAS_LATEST,
    AMIS_READY,
    CAPACITY_RESERVATIONS_READY,
    INSTANCE_PROFILE_READY,
    READY,
    SECURITY_GROUPS_READY,
    SUBNETS_READY,
    AMIStatus,
    EC2NodeClass,
    EC2NodeClassStatus,
    SecurityGroupStatus,
    SubnetStatus,
)
from api.meta import Condition, NodeSelectorRequirement, condition_of
from api.timestamps import parse_time

ARCH_LABEL = "kubernetes.io/arch"
OS_LABEL = "kubernetes.io/os"
GPU_COUNT_LABEL = "karpenter.k8s.aws/instance-gpu-count"
ACCELERATOR_COUNT_LABEL = "karpenter.k8s.aws/instance-accelerator-count"
# EC2 image architecture -> kubernetes.io/arch; images of other architectures (e.g. x86_64_mac) are skipped.
EC2_TO_KUBE_ARCH = {"x86_64": "amd64", "arm64": "arm64"}
# Owners Karpenter adds to a `name` term without `owner`, so a public image with the same name is never picked.
DEFAULT_NAME_OWNERS = ("self", "amazon")

Requirement = tuple[str, str, tuple[str, ...]]  # (key, operator, values)


@dataclass(frozen=True)
class TermQuery:
    """The Describe* input (boto3 keyword arguments) for selector term `term` (its index in the spec list)."""

    term: int
    params: dict[str, Any]


@dataclass(frozen=True)
class AliasParameter:
    """One EKS-optimized AMI parameter of an alias: its SSM path and the requirements of nodes it serves."""

    path: str
    requirements: tuple[Requirement, ...]


# -- filters -------------------------------------------------------------------------------------------------

def tag_filters(tags: Mapping[str, str] | None) -> list[dict[str, Any]]:
    """EC2 filters for a term's tags: `*` means the key with any value (`tag-key`), else `tag:<key>` = value."""
    out = []
    for key, value in sorted((tags or {}).items()):
        if value == "*":
            out.append({"Name": "tag-key", "Values": [key]})
        else:
            out.append({"Name": f"tag:{key}", "Values": [value]})
    return out


def subnet_queries(nc: EC2NodeClass) -> list[TermQuery]:
    """DescribeSubnets inputs, one per subnetSelectorTerms entry."""
    out = []
    for i, term in enumerate(nc.spec.subnet_selector_terms):
        filters = [{"Name": "subnet-id", "Values": [term.id]}] if term.id else tag_filters(term.tags)
        out.append(TermQuery(i, {"Filters": filters}))
    return out


def security_group_queries(nc: EC2NodeClass) -> list[TermQuery]:
    """DescribeSecurityGroups inputs, one per securityGroupSelectorTerms entry (`name` is the group name)."""
    out = []
    for i, term in enumerate(nc.spec.security_group_selector_terms):
        if term.id:
            filters = [{"Name": "group-id", "Values": [term.id]}]
        elif term.name:
            filters = [{"Name": "group-name", "Values": [term.name]}]
        else:
            filters = tag_filters(term.tags)
        out.append(TermQuery(i, {"Filters": filters}))
    return out


# -- AMI aliases ---------------------------------------------------------------------------------------------

_STANDARD: tuple[Requirement, ...] = ((ACCELERATOR_COUNT_LABEL, "DoesNotExist", ()),
                                      (GPU_COUNT_LABEL, "DoesNotExist", ()))
_NVIDIA: tuple[Requirement, ...] = ((ACCELERATOR_COUNT_LABEL, "DoesNotExist", ()), (GPU_COUNT_LABEL, "Exists", ()))
_NEURON: tuple[Requirement, ...] = ((ACCELERATOR_COUNT_LABEL, "Exists", ()), (GPU_COUNT_LABEL, "DoesNotExist", ()))
_VARIANTS = {"standard": _STANDARD, "nvidia": _NVIDIA, "neuron": _NEURON}
_EKS = "/aws/service/eks/optimized-ami"


def _arch(ec2_arch: str) -> Requirement:
    return (ARCH_LABEL, "In", (EC2_TO_KUBE_ARCH[ec2_arch],))


def _al2023(k8s: str, version: str) -> list[AliasParameter]:
    out = []
    for arch, variants in (("x86_64", ("standard", "nvidia", "neuron")), ("arm64", ("standard", "nvidia"))):
        for variant in variants:
            leaf = "recommended" if version == ALIAS_LATEST else \
                f"amazon-eks-node-al2023-{arch}-{variant}-{k8s}-{version}"
            path = f"{_EKS}/{k8s}/amazon-linux-2023/{arch}/{variant}/{leaf}/image_id"
            out.append(AliasParameter(path, (_arch(arch), *_VARIANTS[variant])))
    return out


def _al2(k8s: str, version: str) -> list[AliasParameter]:
    out = []
    for suffix, arch, variants in (("", "x86_64", ("standard",)), ("-arm64", "arm64", ("standard",)),
                                   ("-gpu", "x86_64", ("nvidia", "neuron"))):
        leaf = "recommended" if version == ALIAS_LATEST else f"amazon-eks{suffix}-node-{k8s}-{version}"
        path = f"{_EKS}/{k8s}/amazon-linux-2{suffix}/{leaf}/image_id"
        out += [AliasParameter(path, (_arch(arch), *_VARIANTS[v])) for v in variants]
    return out


def _bottlerocket(k8s: str, version: str) -> list[AliasParameter]:
    leaf = "latest" if version == ALIAS_LATEST else version.removeprefix("v")  # parameters omit the "v"
    return [AliasParameter(f"/aws/service/bottlerocket/aws-k8s-{k8s}{flavour}/{arch}/{leaf}/image_id",
                           (_arch(arch), *_VARIANTS[variant]))
            for flavour, variant in (("", "standard"), ("-nvidia", "nvidia")) for arch in ("x86_64", "arm64")]


def _windows(year: str) -> Any:
    def params(k8s: str, _version: str) -> list[AliasParameter]:
        path = f"/aws/service/ami-windows-latest/Windows_Server-{year}-English-Core-EKS_Optimized-{k8s}/image_id"
        return [AliasParameter(path, (_arch("x86_64"), (OS_LABEL, "In", ("windows",))))]
    return params


_ALIAS_PARAMETERS = {"al2023": _al2023, "al2": _al2, "bottlerocket": _bottlerocket,
                     "windows2019": _windows("2019"), "windows2022": _windows("2022")}


def alias_parameters(family: str, version: str, k8s_version: str) -> list[AliasParameter]:
    """The SSM parameters of `family@version` for a cluster at `k8s_version` ("1.30").

    `latest` reads the `recommended` (Bottlerocket: `latest`) parameter, so a new AMI release shows up as a new
    value: that is AMI drift. A pinned version reads the parameter named after that release. Every variant
    (standard, NVIDIA, Neuron; x86_64 and arm64) is listed; a parameter that does not exist is skipped.
    """
    parts = k8s_version.split(".")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise ValueError(f"Kubernetes version {k8s_version!r} must be MAJOR.MINOR, e.g. 1.30")
    if family not in _ALIAS_PARAMETERS:
        raise ValueError(f"alias family {family!r} is not one of {', '.join(_ALIAS_PARAMETERS)}")
    return _ALIAS_PARAMETERS[family](k8s_version, version)


def ssm_parameter_paths(nc: EC2NodeClass, k8s_version: str) -> list[str]:
    """Every SSM parameter whose value (an image id) the AMI queries need."""
    alias = nc.alias()
    if alias is not None:
        return list(dict.fromkeys(p.path for p in alias_parameters(*alias, k8s_version)))
    return [t.ssm_parameter for t in nc.spec.ami_selector_terms if t.ssm_parameter]


def _term_image_query(term: Any, ssm_values: Mapping[str, str]) -> dict[str, Any] | None:
    if term.id:
        return {"Filters": [{"Name": "image-id", "Values": [term.id]}]}
    if term.ssm_parameter:
        image = ssm_values.get(term.ssm_parameter)
        return {"ImageIds": [image]} if image else None
    params: dict[str, Any] = {"Filters": []}
    if term.name:
        params["Filters"].append({"Name": "name", "Values": [term.name]})
    params["Filters"] += tag_filters(term.tags)
    owners = [term.owner] if term.owner else (list(DEFAULT_NAME_OWNERS) if term.name else [])
    if owners:
        params["Owners"] = owners
    return params


def ami_queries(nc: EC2NodeClass, k8s_version: str, ssm_values: Mapping[str, str]) -> list[TermQuery]:
    """DescribeImages inputs, one per amiSelectorTerms entry; a term whose SSM parameters all failed has none.

    Deprecated images are asked for too (`IncludeDeprecated`), so an image past its deprecation date still
    resolves when nothing newer does.
    """
    out = []
    alias = nc.alias()
    if alias is not None:
        ids = sorted({ssm_values[p.path] for p in alias_parameters(*alias, k8s_version) if ssm_values.get(p.path)})
        if ids:
            out.append(TermQuery(0, {"ImageIds": ids, "IncludeDeprecated": True}))
        return out
    for i, term in enumerate(nc.spec.ami_selector_terms):
        params = _term_image_query(term, ssm_values)
        if params is not None:
            out.append(TermQuery(i, {**params, "IncludeDeprecated": True}))
    return out


# -- picking images ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Candidate:
    id: str
    name: str
    created: float
    deprecated: bool
    requirements: tuple[Requirement, ...]


def _compare(a: _Candidate, b: _Candidate) -> int:
    """Negative when `a` is the better image (Karpenter's compareAMI): not deprecated, then newest, then the
    greater name; the id last, so the order is total."""
    if a.deprecated != b.deprecated:
        return 1 if a.deprecated else -1
    if a.created != b.created:
        return -1 if a.created > b.created else 1
    if a.name != b.name:
        return -1 if a.name > b.name else 1
    return (a.id > b.id) - (a.id < b.id)


def _image_requirements(image: Mapping[str, Any], known: Mapping[str, list[tuple[Requirement, ...]]]
                        ) -> list[tuple[Requirement, ...]]:
    if image.get("ImageId") in known:
        return known[image["ImageId"]]
    arch = image.get("Architecture")
    return [(_arch(arch),)] if arch in EC2_TO_KUBE_ARCH else []


def pick_images(images: Sequence[Mapping[str, Any]], now: datetime,
                known: Mapping[str, list[tuple[Requirement, ...]]] | None = None) -> list[AMIStatus]:
    """One image per distinct requirement set (architecture, and for aliases the GPU/accelerator variant).

    As Karpenter: a non-deprecated image beats a deprecated one, then the newer CreationDate, then the greater
    name; so a deprecated image is used only when nothing else serves those nodes. The result is sorted the same
    way, which matters: drift compares a node with the first image compatible with it.
    """
    best: dict[tuple[Requirement, ...], _Candidate] = {}
    for image in images:
        deprecation = parse_time(image.get("DeprecationTime"))
        for reqs in _image_requirements(image, known or {}):
            key = tuple(sorted(reqs))
            created = parse_time(image.get("CreationDate"))
            cand = _Candidate(image["ImageId"], image.get("Name") or "",
                              created.timestamp() if created else float("-inf"),
                              deprecation is not None and deprecation <= now, key)
            if key not in best or _compare(cand, best[key]) < 0:
                best[key] = cand
    out = []
    for c in sorted(best.values(), key=cmp_to_key(_compare)):
        reqs = [NodeSelectorRequirement(key=k, operator=op, values=list(v) if v else None) for k, op, v in
                c.requirements]
        out.append(AMIStatus(id=c.id, name=c.name or None, requirements=reqs, deprecated=c.deprecated or None))
    return out


# -- status --------------------------------------------------------------------------------------------------

@dataclass
class Resolution:
    """The computed status, and one line per selector term (or SSM parameter) that matched nothing."""

    status: EC2NodeClassStatus
    unmatched: list[str] = field(default_factory=list)


def _describe_ami_term(nc: EC2NodeClass, i: int) -> str:
    term = nc.spec.ami_selector_terms[i]
    shown = ", ".join(f"{k}={v}" for k, v in term.to_dict().items())
    return f"amiSelectorTerms[{i}] ({shown})"


def _resolve_amis(nc: EC2NodeClass, k8s_version: str, ssm_values: Mapping[str, str],
                  images_by_term: Mapping[int, Sequence[Mapping[str, Any]]], now: datetime
                  ) -> tuple[list[AMIStatus], list[str]]:
    unmatched: list[str] = []
    known: dict[str, list[tuple[Requirement, ...]]] = {}
    alias = nc.alias()
    if alias is not None:
        for p in alias_parameters(*alias, k8s_version):
            if ssm_values.get(p.path):
                known.setdefault(ssm_values[p.path], []).append(p.requirements)
    images: list[Mapping[str, Any]] = []
    for i, term in enumerate(nc.spec.ami_selector_terms):
        found = list(images_by_term.get(i) or ())
        if found:
            images += found
        elif alias is not None and not known:
            unmatched.append(f"{_describe_ami_term(nc, i)}: no EKS-optimized AMI parameter exists for Kubernetes "
                             f"{k8s_version} (e.g. {alias_parameters(*alias, k8s_version)[0].path})")
        elif term.ssm_parameter and not ssm_values.get(term.ssm_parameter):
            unmatched.append(f"{_describe_ami_term(nc, i)}: SSM parameter not found")
        else:
            unmatched.append(f"{_describe_ami_term(nc, i)} matched no image")
    return pick_images(images, now, known), unmatched


def _resolve_subnets(nc: EC2NodeClass, by_term: Mapping[int, Sequence[Mapping[str, Any]]]
                     ) -> tuple[list[SubnetStatus], list[str]]:
    """Deduplicated, most free IP addresses first (Karpenter's order), then by id."""
    seen: dict[str, Mapping[str, Any]] = {}
    unmatched = []
    for i, term in enumerate(nc.spec.subnet_selector_terms):
        found = list(by_term.get(i) or ())
        if not found:
            shown = ", ".join(f"{k}={v}" for k, v in term.to_dict().items())
            unmatched.append(f"subnetSelectorTerms[{i}] ({shown}) matched no subnet")
        seen.update((s["SubnetId"], s) for s in found)
    ordered = sorted(seen.values(), key=lambda s: (-int(s.get("AvailableIpAddressCount") or 0), s["SubnetId"]))
    return [SubnetStatus(id=s["SubnetId"], zone=s.get("AvailabilityZone"), zoneID=s.get("AvailabilityZoneId"))
            for s in ordered], unmatched


def _resolve_security_groups(nc: EC2NodeClass, by_term: Mapping[int, Sequence[Mapping[str, Any]]]
                             ) -> tuple[list[SecurityGroupStatus], list[str]]:
    seen: dict[str, Mapping[str, Any]] = {}
    unmatched = []
    for i, term in enumerate(nc.spec.security_group_selector_terms):
        found = list(by_term.get(i) or ())
        if not found:
            shown = ", ".join(f"{k}={v}" for k, v in term.to_dict().items())
            unmatched.append(f"securityGroupSelectorTerms[{i}] ({shown}) matched no security group")
        seen.update((g["GroupId"], g) for g in found)
    return [SecurityGroupStatus(id=g["GroupId"], name=g.get("GroupName")) for _, g in sorted(seen.items())], unmatched


def _condition(type_: str, ok: bool, reason: str, message: str, now: datetime,
               previous: Sequence[Condition] | None) -> Condition:
    """A condition whose lastTransitionTime moves only when its status changes."""
    status = "True" if ok else "False"
    before = condition_of(list(previous or ()), type_)
    since = before.last_transition_time if before is not None and before.status == status else now
    return Condition(type=type_, status=status, reason=type_ if ok else reason, message="" if ok else message,
                     lastTransitionTime=since)


def resolve_status(nc: EC2NodeClass, *, k8s_version: str, ssm_values: Mapping[str, str],
                   images_by_term: Mapping[int, Sequence[Mapping[str, Any]]],
                   subnets_by_term: Mapping[int, Sequence[Mapping[str, Any]]],
                   security_groups_by_term: Mapping[int, Sequence[Mapping[str, Any]]],
                   instance_profile: str | None, now: datetime) -> Resolution:
    """The class status from EC2's answers (keyed by term index, see the module docstring).

    As in Karpenter, a kind of dependency is unready only when it resolved to nothing at all: a term that matches
    nothing while another matches is reported in `unmatched` (for an event) but leaves the class Ready.
    `instance_profile` is the profile nodes get: spec.instanceProfile, or the one made for spec.role (None
    while it does not exist yet).
    """
    amis, ami_miss = _resolve_amis(nc, k8s_version, ssm_values, images_by_term, now)
    subnets, subnet_miss = _resolve_subnets(nc, subnets_by_term)
    groups, group_miss = _resolve_security_groups(nc, security_groups_by_term)
    profile = nc.spec.instance_profile or instance_profile
    prev = nc.status.conditions
    checks = [
        (AMIS_READY, bool(amis), "AMINotFound", "; ".join(ami_miss) or "AMISelector did not match any AMIs"),
        (SUBNETS_READY, bool(subnets), "SubnetsNotFound", "; ".join(subnet_miss) or "no subnet matched"),
        (SECURITY_GROUPS_READY, bool(groups), "SecurityGroupsNotFound",
         "; ".join(group_miss) or "no security group matched"),
        (INSTANCE_PROFILE_READY, bool(profile), "InstanceProfileNotFound",
         f"no instance profile for role {nc.spec.role!r} yet"),
    ]
    conditions = [_condition(t, ok, reason, msg, now, prev) for t, ok, reason, msg in checks]
    failing = [c for c in conditions if c.status != "True"]
    message = "; ".join(f"{c.type}=False: {c.message}" for c in failing)
    conditions.append(_condition(READY, not failing, failing[0].reason if failing else READY, message, now, prev))
    status = EC2NodeClassStatus(amis=amis, subnets=subnets, securityGroups=groups, instanceProfile=profile,
                                conditions=conditions)
    return Resolution(status=status, unmatched=ami_miss + subnet_miss + group_miss)


def with_capacity_reservations_ready(conditions: Sequence[Condition], previous: Sequence[Condition] | None,
                                     now: datetime) -> list[Condition]:
    """The class's conditions with `CapacityReservationsReady` True, placed before Ready, as Karpenter's
    capacityreservation reconciler sets it once DescribeCapacityReservations has answered every term (no term, or
    no reservation found, is True too: `SetTrue` with the type as reason). Never False: a failed resolution leaves
    the class's status as it was (the activity retries). Its lastTransitionTime (from the class's `previous`
    conditions) moves only when it turns True."""
    before = condition_of(list(previous or ()), CAPACITY_RESERVATIONS_READY)
    since = before.last_transition_time if before is not None and before.status == "True" else now
    ready = Condition(type=CAPACITY_RESERVATIONS_READY, status="True", reason=CAPACITY_RESERVATIONS_READY,
                      message="", lastTransitionTime=since)
    rest = [c for c in conditions if c.type != CAPACITY_RESERVATIONS_READY]
    at = next((i for i, c in enumerate(rest) if c.type == READY), len(rest))
    return [*rest[:at], ready, *rest[at:]]
