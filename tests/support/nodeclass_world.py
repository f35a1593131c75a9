"""A small AWS world in moto for EC2NodeClass tests: a VPC with tagged subnets of different sizes, security groups,
images with names and tags, SSM parameters, an IAM role; and EC2NodeClass/NodePool objects for the simulator.

Every name and tag carries a per-test id, because the moto server is shared by the whole test session.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import boto3

from gateways.kube import KubeClient

REGION = "us-east-1"
X86_SOURCE_AMI = "ami-12c6146b"  # in moto's bundled image list, x86_64
ARM_SOURCE_AMI = "ami-0e9271c829888680e"  # in moto's bundled image list, arm64


class MirroredSsm:
    """moto refuses parameter names under /aws (reserved), so alias parameters live under `prefix` + name;
    every read goes to the real moto SSM, with the name rewritten."""

    def __init__(self, ssm: Any, prefix: str) -> None:
        self._ssm = ssm
        self.prefix = prefix
        self.names: list[str] = []

    def get_parameter(self, Name: str, **kw: Any) -> Any:
        self.names.append(Name)
        return self._ssm.get_parameter(Name=self.prefix + Name if Name.startswith("/aws/") else Name, **kw)

    def put(self, name: str, value: str) -> None:
        self._ssm.put_parameter(Name=self.prefix + name if name.startswith("/aws/") else name, Value=value,
                                Type="String", Overwrite=True)


@dataclass
class AwsWorld:
    endpoint: str
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:10])
    subnets: dict[str, str] = field(default_factory=dict)  # small-a, big-a, b, untagged -> id
    groups: dict[str, str] = field(default_factory=dict)  # tagged, named -> id
    images: dict[str, str] = field(default_factory=dict)  # amd64-a, amd64-b (newer), arm64 -> id
    role: str = ""

    def __post_init__(self) -> None:
        kw = {"region_name": REGION, "endpoint_url": self.endpoint}
        self.ec2 = boto3.client("ec2", **kw)
        self.ssm = MirroredSsm(boto3.client("ssm", **kw), f"/mirror-{self.tag}")
        self.iam = boto3.client("iam", **kw)
        self._network()
        self._images()
        self.role = f"node-role-{self.tag}"
        self.iam.create_role(RoleName=self.role, AssumeRolePolicyDocument="{}")

    def _tags(self, resource: str, **tags: str) -> None:
        self.ec2.create_tags(Resources=[resource], Tags=[{"Key": k, "Value": v} for k, v in tags.items()])

    def _network(self) -> None:
        octet = int(self.tag[:4], 16) % 250
        vpc = self.ec2.create_vpc(CidrBlock=f"10.{octet}.0.0/16")["Vpc"]["VpcId"]
        for key, cidr, zone, tagged in (("small-a", f"10.{octet}.1.0/28", "us-east-1a", True),
                                        ("big-a", f"10.{octet}.2.0/24", "us-east-1a", True),
                                        ("b", f"10.{octet}.3.0/26", "us-east-1b", True),
                                        ("untagged", f"10.{octet}.4.0/24", "us-east-1a", False)):
            sid = self.ec2.create_subnet(VpcId=vpc, CidrBlock=cidr, AvailabilityZone=zone)["Subnet"]["SubnetId"]
            self.subnets[key] = sid
            if tagged:
                self._tags(sid, **{"karpenter.sh/discovery": self.tag})
        tagged = self.ec2.create_security_group(GroupName=f"nodes-{self.tag}", Description="nodes", VpcId=vpc)
        self._tags(tagged["GroupId"], **{"karpenter.sh/discovery": self.tag})
        named = self.ec2.create_security_group(GroupName=f"named-{self.tag}", Description="named", VpcId=vpc)
        self.groups = {"tagged": tagged["GroupId"], "named": named["GroupId"]}

    def _images(self) -> None:
        """moto's RegisterImage drops the architecture, so images are made from instances of moto's bundled AMIs
        (the x86_64 and arm64 ones); names sort in creation order, so the later one is "newer" even on a tie."""
        for key, source in (("amd64-a", X86_SOURCE_AMI), ("amd64-b", X86_SOURCE_AMI), ("arm64", ARM_SOURCE_AMI)):
            iid = self.ec2.run_instances(ImageId=source, MinCount=1, MaxCount=1,
                                         InstanceType="m5.large")["Instances"][0]["InstanceId"]
            image = self.ec2.create_image(InstanceId=iid, Name=f"eks-node-{self.tag}-{key}")["ImageId"]
            self.ec2.terminate_instances(InstanceIds=[iid])
            self.images[key] = image
            self._tags(image, team=self.tag)

    def image(self, image_id: str) -> dict[str, Any]:
        return self.ec2.describe_images(ImageIds=[image_id])["Images"][0]


def node_class(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": name}, "spec": spec}


def node_pool(name: str, class_name: str, **template_spec: Any) -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
            "spec": {"template": {"metadata": {"labels": {"team": "web"}},
                                  "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                            "name": class_name},
                                           "requirements": [], **template_spec}}}}


def create(kube: KubeClient, obj: dict[str, Any]) -> None:
    group, version = obj["apiVersion"].split("/")
    plural = {"EC2NodeClass": "ec2nodeclasses", "NodePool": "nodepools"}[obj["kind"]]
    kube.custom.create_cluster_custom_object(group, version, plural, obj)


def events(kube: KubeClient, kind: str, name: str) -> list[dict[str, Any]]:
    items = kube.core.list_namespaced_event("default").items
    return [{"reason": e.reason, "message": e.message, "type": e.type} for e in items
            if e.involved_object.kind == kind and e.involved_object.name == name]
