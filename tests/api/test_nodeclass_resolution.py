"""Resolving an EC2NodeClass against EC2/SSM answers: filters, SSM paths, image choice, status and Ready."""

from datetime import UTC, datetime
from typing import Any

import pytest

from api.ec2nodeclass import EC2NodeClass
from api.meta import Condition
from api.nodeclass_resolution import (
    alias_parameters,
    ami_queries,
    pick_images,
    resolve_status,
    security_group_queries,
    ssm_parameter_paths,
    subnet_queries,
    tag_filters,
    with_capacity_reservations_ready,
)

NOW = datetime(2026, 6, 1, tzinfo=UTC)
K8S = "1.30"
AL2023_X86 = "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/recommended/image_id"
AL2023_ARM = "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/arm64/standard/recommended/image_id"


def node_class(ami_terms: list[dict[str, Any]], **spec: Any) -> EC2NodeClass:
    return EC2NodeClass.model_validate({
        "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"},
        "spec": {"amiSelectorTerms": ami_terms, "amiFamily": "AL2023", "role": "NodeRole",
                 "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}, {"id": "subnet-9"}],
                 "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "*"}}, {"name": "eks-sg"}],
                 **spec},
    })


def image(image_id: str, created: str, arch: str = "x86_64", name: str | None = None,
          deprecated: str | None = None) -> dict[str, Any]:
    out = {"ImageId": image_id, "Name": name or image_id, "CreationDate": created, "Architecture": arch}
    if deprecated:
        out["DeprecationTime"] = deprecated
    return out


# -- filters -------------------------------------------------------------------------------------------------

def test_tag_filters_star_means_any_value() -> None:
    assert tag_filters({"team": "ml", "karpenter.sh/discovery": "*"}) == [
        {"Name": "tag-key", "Values": ["karpenter.sh/discovery"]}, {"Name": "tag:team", "Values": ["ml"]}]


def test_subnet_and_security_group_queries_one_per_term() -> None:
    nc = node_class([{"id": "ami-1"}])
    assert [(q.term, q.params) for q in subnet_queries(nc)] == [
        (0, {"Filters": [{"Name": "tag:karpenter.sh/discovery", "Values": ["demo"]}]}),
        (1, {"Filters": [{"Name": "subnet-id", "Values": ["subnet-9"]}]})]
    assert [(q.term, q.params) for q in security_group_queries(nc)] == [
        (0, {"Filters": [{"Name": "tag-key", "Values": ["karpenter.sh/discovery"]}]}),
        (1, {"Filters": [{"Name": "group-name", "Values": ["eks-sg"]}]})]


def test_ami_queries_default_owners_for_a_name_only() -> None:
    nc = node_class([{"id": "ami-1"}, {"name": "my-ami-*"}, {"name": "shared", "owner": "123456789012"},
                     {"tags": {"team": "ml"}}])
    params = [q.params for q in ami_queries(nc, K8S, {})]
    assert params[0] == {"Filters": [{"Name": "image-id", "Values": ["ami-1"]}], "IncludeDeprecated": True}
    assert params[1]["Owners"] == ["self", "amazon"]
    assert params[1]["Filters"] == [{"Name": "name", "Values": ["my-ami-*"]}]
    assert params[2]["Owners"] == ["123456789012"]
    assert "Owners" not in params[3] and params[3]["Filters"] == [{"Name": "tag:team", "Values": ["ml"]}]


# -- SSM aliases ---------------------------------------------------------------------------------------------

def test_al2023_latest_reads_the_recommended_parameters() -> None:
    params = alias_parameters("al2023", "latest", K8S)
    paths = [p.path for p in params]
    assert AL2023_X86 in paths and AL2023_ARM in paths
    assert "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/nvidia/recommended/image_id" in paths
    standard = next(p for p in params if p.path == AL2023_ARM)
    assert ("kubernetes.io/arch", "In", ("arm64",)) in standard.requirements
    assert ("karpenter.k8s.aws/instance-gpu-count", "DoesNotExist", ()) in standard.requirements


def test_pinned_alias_reads_the_release_parameter() -> None:
    paths = [p.path for p in alias_parameters("al2023", "v20240807", K8S)]
    assert ("/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/"
            "amazon-eks-node-al2023-x86_64-standard-1.30-v20240807/image_id") in paths
    assert not any("recommended" in p for p in paths)
    assert "/aws/service/bottlerocket/aws-k8s-1.30/arm64/1.20.3/image_id" in \
        [p.path for p in alias_parameters("bottlerocket", "v1.20.3", K8S)]
    assert "/aws/service/eks/optimized-ami/1.30/amazon-linux-2-arm64/amazon-eks-arm64-node-1.30-v20240807/image_id" \
        in [p.path for p in alias_parameters("al2", "v20240807", K8S)]


def test_alias_parameters_reject_a_bad_version() -> None:
    with pytest.raises(ValueError, match=r"MAJOR\.MINOR"):
        alias_parameters("al2023", "latest", "v1.30.2")


def test_alias_queries_ask_for_the_ssm_values() -> None:
    nc = node_class([{"alias": "al2023@latest"}], amiFamily=None)
    assert AL2023_X86 in ssm_parameter_paths(nc, K8S)
    queries = ami_queries(nc, K8S, {AL2023_X86: "ami-x", AL2023_ARM: "ami-a"})
    assert [(q.term, q.params) for q in queries] == [(0, {"ImageIds": ["ami-a", "ami-x"], "IncludeDeprecated": True})]
    assert ami_queries(nc, K8S, {}) == []


def test_ssm_parameter_term() -> None:
    nc = node_class([{"ssmParameter": "/my/ami"}])
    assert ssm_parameter_paths(nc, K8S) == ["/my/ami"]
    assert ami_queries(nc, K8S, {"/my/ami": "ami-7"})[0].params["ImageIds"] == ["ami-7"]


# -- picking images ------------------------------------------------------------------------------------------

def test_newest_image_per_architecture() -> None:
    amis = pick_images([image("ami-old", "2024-01-01T00:00:00.000Z"), image("ami-new", "2024-06-01T00:00:00.000Z"),
                        image("ami-arm", "2024-02-01T00:00:00.000Z", arch="arm64"),
                        image("ami-mac", "2025-01-01T00:00:00.000Z", arch="x86_64_mac")], NOW)
    assert [a.id for a in amis] == ["ami-new", "ami-arm"]  # newest first; mac images are never used
    assert amis[1].requirements[0].model_dump(exclude_none=True) == {"key": "kubernetes.io/arch", "operator": "In",
                                                                     "values": ["arm64"]}


def test_deprecated_image_only_when_nothing_else() -> None:
    newer_but_deprecated = image("ami-dep", "2024-06-01T00:00:00Z", deprecated="2025-01-01T00:00:00Z")
    older = image("ami-ok", "2024-01-01T00:00:00Z")
    assert [a.id for a in pick_images([newer_but_deprecated, older], NOW)] == ["ami-ok"]
    only = pick_images([newer_but_deprecated], NOW)
    assert [(a.id, a.deprecated) for a in only] == [("ami-dep", True)]
    future = image("ami-later", "2024-06-01T00:00:00Z", deprecated="2030-01-01T00:00:00Z")
    assert [(a.id, a.deprecated) for a in pick_images([future, older], NOW)] == [("ami-later", None)]


def test_same_creation_date_prefers_the_greater_name() -> None:
    amis = pick_images([image("ami-1", "2024-01-01T00:00:00Z", name="release-a"),
                        image("ami-2", "2024-01-01T00:00:00Z", name="release-b")], NOW)
    assert [a.id for a in amis] == ["ami-2"]


# -- status --------------------------------------------------------------------------------------------------

SUBNETS = {0: [{"SubnetId": "subnet-1", "AvailabilityZone": "us-east-1a", "AvailabilityZoneId": "use1-az1",
                "AvailableIpAddressCount": 10},
               {"SubnetId": "subnet-2", "AvailabilityZone": "us-east-1b", "AvailabilityZoneId": "use1-az2",
                "AvailableIpAddressCount": 200}],
           1: [{"SubnetId": "subnet-9", "AvailabilityZone": "us-east-1c", "AvailableIpAddressCount": 50}]}
GROUPS = {0: [{"GroupId": "sg-2", "GroupName": "nodes"}], 1: [{"GroupId": "sg-1", "GroupName": "eks-sg"}]}


def test_resolved_status_and_ready() -> None:
    nc = node_class([{"alias": "al2023@latest"}], amiFamily=None)
    ssm = {AL2023_X86: "ami-x", AL2023_ARM: "ami-a"}
    images = {0: [image("ami-x", "2024-06-01T00:00:00Z"), image("ami-a", "2024-06-02T00:00:00Z", arch="arm64")]}
    res = resolve_status(nc, k8s_version=K8S, ssm_values=ssm, images_by_term=images, subnets_by_term=SUBNETS,
                         security_groups_by_term=GROUPS, instance_profile="default_123", now=NOW)
    st = res.status
    assert [a.id for a in st.amis] == ["ami-a", "ami-x"]
    gpu = {r.key: r.operator for r in st.amis[0].requirements}
    assert gpu["karpenter.k8s.aws/instance-gpu-count"] == "DoesNotExist"  # the standard variant, from SSM
    assert [s.id for s in st.subnets] == ["subnet-2", "subnet-9", "subnet-1"]  # most free addresses first
    assert st.subnets[0].zone == "us-east-1b" and st.subnets[0].zone_id == "use1-az2"
    assert [(g.id, g.name) for g in st.security_groups] == [("sg-1", "eks-sg"), ("sg-2", "nodes")]
    assert st.instance_profile == "default_123"
    assert {c.type: c.status for c in st.conditions} == {"AMIsReady": "True", "SubnetsReady": "True",
                                                         "SecurityGroupsReady": "True",
                                                         "InstanceProfileReady": "True", "Ready": "True"}
    assert res.unmatched == []
    nc.status = st
    assert nc.ready and nc.to_dict()["status"]["subnets"][0] == {"id": "subnet-2", "zone": "us-east-1b",
                                                                 "zoneID": "use1-az2"}


def test_unresolvable_alias_makes_the_class_not_ready_with_the_reason() -> None:
    nc = node_class([{"alias": "al2023@v20990101"}], amiFamily=None)
    res = resolve_status(nc, k8s_version=K8S, ssm_values={}, images_by_term={}, subnets_by_term=SUBNETS,
                         security_groups_by_term=GROUPS, instance_profile="p", now=NOW)
    ready = next(c for c in res.status.conditions if c.type == "Ready")
    assert ready.status == "False" and ready.reason == "AMINotFound"
    assert "AMIsReady=False: amiSelectorTerms[0] (alias=al2023@v20990101): no EKS-optimized AMI parameter exists " \
           "for Kubernetes 1.30" in ready.message
    assert "amazon-eks-node-al2023-x86_64-standard-1.30-v20990101" in ready.message


def test_one_unmatched_term_is_reported_but_the_class_stays_ready() -> None:
    nc = node_class([{"id": "ami-1"}, {"name": "gone-*"}])
    images = {0: [image("ami-1", "2024-01-01T00:00:00Z")], 1: []}
    res = resolve_status(nc, k8s_version=K8S, ssm_values={}, images_by_term=images, subnets_by_term=SUBNETS,
                         security_groups_by_term={0: [], 1: GROUPS[1]}, instance_profile="p", now=NOW)
    assert res.unmatched == ["amiSelectorTerms[1] (name=gone-*) matched no image",
                             "securityGroupSelectorTerms[0] (tags={'karpenter.sh/discovery': '*'}) matched no "
                             "security group"]
    assert next(c for c in res.status.conditions if c.type == "Ready").status == "True"


def test_every_missing_dependency_is_named_and_transition_time_is_kept() -> None:
    nc = node_class([{"id": "ami-1"}])
    res = resolve_status(nc, k8s_version=K8S, ssm_values={}, images_by_term={0: [image("ami-1", "2024-01-01")]},
                         subnets_by_term={}, security_groups_by_term={}, instance_profile=None, now=NOW)
    ready = next(c for c in res.status.conditions if c.type == "Ready")
    assert ready.status == "False" and ready.reason == "SubnetsNotFound"
    assert "subnetSelectorTerms[1] (id=subnet-9) matched no subnet" in ready.message
    assert "SecurityGroupsReady=False: securityGroupSelectorTerms[0]" in ready.message
    assert "securityGroupSelectorTerms[1] (name=eks-sg) matched no security group" in ready.message
    assert "InstanceProfileReady=False: no instance profile for role 'NodeRole' yet" in ready.message
    nc.status = res.status
    later = datetime(2026, 6, 2, tzinfo=UTC)
    again = resolve_status(nc, k8s_version=K8S, ssm_values={}, images_by_term={0: [image("ami-1", "2024-01-01")]},
                           subnets_by_term=SUBNETS, security_groups_by_term={}, instance_profile=None, now=later)
    times = {c.type: c.last_transition_time for c in again.status.conditions}
    assert times["Ready"] == NOW and times["AMIsReady"] == NOW  # unchanged status keeps its time
    assert times["SubnetsReady"] == later


# -- CapacityReservationsReady -------------------------------------------------------------------------------

def _cond(type_: str, status: str = "True", at: datetime = NOW) -> Condition:
    return Condition(type=type_, status=status, reason=type_, message="", lastTransitionTime=at)


def test_capacity_reservations_ready_is_true_before_ready_and_keeps_its_transition_time() -> None:
    new = [_cond("AMIsReady"), _cond("SubnetsReady"), _cond("Ready", "False")]
    later = datetime(2026, 6, 2, tzinfo=UTC)
    first = with_capacity_reservations_ready(new, None, later)
    assert [(c.type, c.status) for c in first] == [("AMIsReady", "True"), ("SubnetsReady", "True"),
                                                   ("CapacityReservationsReady", "True"), ("Ready", "False")]
    crr = first[2]
    assert (crr.reason, crr.message, crr.last_transition_time) == ("CapacityReservationsReady", "", later)
    # resolved again a day on: True since the first time, not since now
    again = with_capacity_reservations_ready(new, first, datetime(2026, 6, 3, tzinfo=UTC))
    assert again[2].last_transition_time == later
    # it was Unknown (written by someone else, or a class from before the condition): True since now
    unknown = [_cond("CapacityReservationsReady", "Unknown", NOW)]
    assert with_capacity_reservations_ready(new, unknown, later)[2].last_transition_time == later
    # a list without Ready (never so from resolve_status) gets it last; an old entry is replaced, not doubled
    assert [c.type for c in with_capacity_reservations_ready([*unknown, _cond("AMIsReady")], None, later)] == [
        "AMIsReady", "CapacityReservationsReady"]
