"""EC2NodeClass drift: each of Karpenter's reasons, their order, and the cases that are not drift."""

from pathlib import Path
from typing import Any

import pytest

from api.ec2nodeclass import HASH_ANNOTATION, HASH_VERSION_ANNOTATION, EC2NodeClass, launch_annotations
from api.nodeclaim import NodeClaim
from api.snapshot import load_snapshot
from planning.cluster import Cluster
from planning.disruption.drift import drift_reason
from planning.lifecycle.nodeclass_drift import LaunchRecord, NodeClassDriftReason, expected_image, nodeclass_drift

ARCH = "kubernetes.io/arch"
GPU = "karpenter.k8s.aws/instance-gpu-count"


def node_class(**status: Any) -> EC2NodeClass:
    nc = EC2NodeClass.model_validate({
        "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"},
        "spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "NodeRole",
                 "subnetSelectorTerms": [{"tags": {"k": "v"}}], "securityGroupSelectorTerms": [{"tags": {"k": "v"}}]},
        "status": {
            "amis": [
                {"id": "ami-arm", "requirements": [{"key": ARCH, "operator": "In", "values": ["arm64"]},
                                                   {"key": GPU, "operator": "DoesNotExist"}]},
                {"id": "ami-gpu", "requirements": [{"key": ARCH, "operator": "In", "values": ["amd64"]},
                                                   {"key": GPU, "operator": "Exists"}]},
                {"id": "ami-x86", "requirements": [{"key": ARCH, "operator": "In", "values": ["amd64"]},
                                                   {"key": GPU, "operator": "DoesNotExist"}]},
            ],
            "subnets": [{"id": "subnet-1", "zone": "us-east-1a"}, {"id": "subnet-2", "zone": "us-east-1b"}],
            "securityGroups": [{"id": "sg-1"}, {"id": "sg-2"}],
            **status,
        },
    })
    nc.metadata.annotations = nc.hash_annotations()
    return nc


CLASS = node_class()


def claim(image: str = "ami-x86", subnet: str = "subnet-1", groups: tuple[str, ...] = ("sg-2", "sg-1"),
          arch: str | None = "amd64", annotations: dict[str, str] | None = None) -> NodeClaim:
    ann = launch_annotations(CLASS, subnet, list(groups)) if annotations is None else annotations
    labels = {ARCH: arch} if arch else {}
    return NodeClaim.model_validate({
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": "c", "labels": labels, "annotations": ann},
        "spec": {"requirements": [{"key": ARCH, "operator": "In", "values": ["arm64"]}] if not arch else [],
                 "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}},
        "status": {"imageID": image, "providerID": "aws:///us-east-1a/i-1"},
    })


def test_a_node_launched_from_the_current_class_is_not_drifted() -> None:
    assert nodeclass_drift(claim(), CLASS) is None
    assert nodeclass_drift(claim(image="ami-arm", arch="arm64"), CLASS) is None


def test_new_ami_is_ami_drift() -> None:
    assert nodeclass_drift(claim(image="ami-x86-old"), CLASS) is NodeClassDriftReason.AMI
    assert nodeclass_drift(claim(image="ami-x86-old"), CLASS) == "AMIDrift"


def test_the_image_a_node_would_get_follows_its_architecture_and_gpu() -> None:
    assert expected_image(LaunchRecord.from_nodeclaim(claim()), CLASS) == "ami-x86"
    gpu = claim(image="ami-gpu")
    gpu.metadata.labels[GPU] = "1"
    assert expected_image(LaunchRecord.from_nodeclaim(gpu), CLASS) == "ami-gpu"
    assert nodeclass_drift(gpu, CLASS) is None
    # a claim not yet registered: the architecture comes from its requirements
    assert nodeclass_drift(claim(image="ami-arm", arch=None), CLASS) is None
    assert nodeclass_drift(claim(image="ami-x86", arch=None), CLASS) is NodeClassDriftReason.AMI


def test_no_image_for_the_node_any_more_is_ami_drift() -> None:
    only_arm = node_class(amis=[{"id": "ami-arm", "requirements": [{"key": ARCH, "operator": "In",
                                                                    "values": ["arm64"]}]}])
    assert nodeclass_drift(claim(annotations={}), only_arm) is NodeClassDriftReason.AMI


def test_security_group_change_is_drift_either_way() -> None:
    assert nodeclass_drift(claim(groups=("sg-1",)), CLASS) is NodeClassDriftReason.SECURITY_GROUP
    assert nodeclass_drift(claim(groups=("sg-1", "sg-2", "sg-3")), CLASS) is NodeClassDriftReason.SECURITY_GROUP


def test_subnet_no_longer_selected_is_drift() -> None:
    assert nodeclass_drift(claim(subnet="subnet-9"), CLASS) is NodeClassDriftReason.SUBNET


def test_static_change_is_node_class_drift_only_with_the_same_hash_version() -> None:
    changed = CLASS.model_copy(deep=True)
    changed.spec.user_data = "#!/bin/bash\necho new"
    changed.metadata.annotations = changed.hash_annotations()
    assert nodeclass_drift(claim(), changed) is NodeClassDriftReason.NODE_CLASS
    stamped_by_karpenter = {HASH_ANNOTATION: "123456", HASH_VERSION_ANNOTATION: "v4",
                            **{k: v for k, v in launch_annotations(CLASS, "subnet-1", ["sg-1", "sg-2"]).items()
                               if k not in (HASH_ANNOTATION, HASH_VERSION_ANNOTATION)}}
    assert nodeclass_drift(claim(annotations=stamped_by_karpenter), changed) is None
    unstamped = changed.model_copy(deep=True)
    unstamped.metadata.annotations = {}
    assert nodeclass_drift(claim(), unstamped) is None


def test_precedence_is_static_then_ami_then_security_groups_then_subnet() -> None:
    changed = CLASS.model_copy(deep=True)
    changed.spec.tags = {"team": "new"}
    changed.metadata.annotations = changed.hash_annotations()
    everything = claim(image="ami-old", subnet="subnet-9", groups=("sg-9",))
    assert nodeclass_drift(everything, changed) is NodeClassDriftReason.NODE_CLASS
    assert nodeclass_drift(everything, CLASS) is NodeClassDriftReason.AMI
    assert nodeclass_drift(claim(subnet="subnet-9", groups=("sg-9",)), CLASS) is NodeClassDriftReason.SECURITY_GROUP


@pytest.mark.parametrize("status", [{"amis": []}, {"subnets": []}, {"securityGroups": []}])
def test_an_unresolved_class_decides_nothing_for_that_check(status: dict[str, Any]) -> None:
    nc = node_class(**status)
    everything_differs = claim(image="ami-old", subnet="subnet-9", groups=("sg-9",))
    reason = nodeclass_drift(everything_differs, nc)
    skipped = {"amis": NodeClassDriftReason.AMI, "subnets": NodeClassDriftReason.SUBNET,
               "securityGroups": NodeClassDriftReason.SECURITY_GROUP}[next(iter(status))]
    assert reason is not None and reason is not skipped


def test_nothing_recorded_on_the_claim_is_not_drift() -> None:
    bare = claim(annotations={})
    bare.status.image_id = None
    assert nodeclass_drift(bare, CLASS) is None


def test_the_planner_drift_check_reads_the_node_class_of_the_pool() -> None:
    """drift_reason consults the EC2NodeClass the NodePool names, after NodePool and requirements drift."""
    examples = Path(__file__).resolve().parents[2] / "examples"
    cluster = Cluster.from_snapshot(load_snapshot(examples / "plan-ami-drift.yaml"))
    pool = cluster.pools["default"]
    node_class = cluster.node_classes[pool.node_class]
    assert drift_reason(cluster.by_name["node-a"], pool, node_class) == "AMIDrift"
    assert drift_reason(cluster.by_name["node-b"], pool, node_class) is None
    assert drift_reason(cluster.by_name["node-a"], pool) is None  # without the class: nothing to compare
