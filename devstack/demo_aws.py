"""The demo's AWS side in moto, for its EC2NodeClasses: a VPC with one subnet per zone and a security group, both
tagged `karpenter.sh/discovery: nodeflow-demo`, the node role, and the images the classes select by tag.

Two classes: `default` (pools general, batch, spot, ci) and `memory` (pool memory). Both start on moto's bundled
x86_64 image BASE_IMAGE (a fixed id, so the bundled scenario can say its memory nodes run it); `register_newer_image`
makes a newer image for one class, as publishing a new AMI does, and the next resolution picks it.
"""

from __future__ import annotations

import base64
import contextlib
from dataclasses import dataclass, field
from typing import Any

DISCOVERY = "nodeflow-demo"
CLUSTER_NAME = "nodeflow-demo"
CLUSTER_CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nnodeflow demo\n-----END CERTIFICATE-----\n").decode()
NODE_ROLE = "nodeflow-demo-node"
BASE_IMAGE = "ami-04681a1dbd79675a5"  # amzn2-ami-hvm x86_64, in moto's bundled image list
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")  # the default region's (us-east-1) demo zones
CLASSES = ("default", "memory")
ZONE_COUNT = 3  # the demo spreads over three zones, as a production cluster usually does


def region_zones(ec2: Any, count: int = ZONE_COUNT) -> tuple[str, ...]:
    """The first `count` available zones of the EC2 client's region, as DescribeAvailabilityZones names them (in
    us-east-1, ZONES): the demo's subnets and its scenario's zone labels come from here, so `nodeflow demo
    --region R` runs in R's zones."""
    zones = ec2.describe_availability_zones(Filters=[{"Name": "state", "Values": ["available"]}])
    names = sorted(z["ZoneName"] for z in zones["AvailabilityZones"]
                   if z.get("ZoneType", "availability-zone") == "availability-zone")
    return tuple(names[:count])


def image_tag(node_class: str) -> str:
    """The tag key an image carries (value "true") to be selected by `node_class`."""
    return f"nodeflow.dev/demo-image-{node_class}"


def node_class_object(name: str) -> dict[str, Any]:
    """The EC2NodeClass of the demo: AL2023, images by tag, subnets and groups by the discovery tag, the role."""
    return {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": name},
            "spec": {"amiFamily": "AL2023", "amiSelectorTerms": [{"tags": {image_tag(name): "true"}}],
                     "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": DISCOVERY}}],
                     "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": DISCOVERY}}],
                     "role": NODE_ROLE, "tags": {"app.kubernetes.io/part-of": "nodeflow-demo"}}}


@dataclass
class DemoAws:
    ec2: Any
    iam: Any
    subnets: dict[str, str] = field(default_factory=dict)  # zone -> subnet id
    security_group: str = ""
    images: list[str] = field(default_factory=list)  # every image made here, oldest first
    zones: tuple[str, ...] = ZONES  # one subnet each (region_zones of the EC2 client's region)

    def create(self) -> DemoAws:
        """VPC, subnets, security group, role (kept when it exists); BASE_IMAGE tagged for every class."""
        discovery = [{"Key": "karpenter.sh/discovery", "Value": DISCOVERY}]
        vpc = self.ec2.create_vpc(CidrBlock="10.42.0.0/16")["Vpc"]["VpcId"]
        for i, zone in enumerate(self.zones):
            subnet = self.ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.42.{i * 16}.0/20", AvailabilityZone=zone)
            self.subnets[zone] = subnet["Subnet"]["SubnetId"]
        self.ec2.create_tags(Resources=list(self.subnets.values()), Tags=discovery)
        self.security_group = self.ec2.create_security_group(
            GroupName="nodeflow-demo-nodes", Description="demo nodes", VpcId=vpc)["GroupId"]
        self.ec2.create_tags(Resources=[self.security_group], Tags=discovery)
        with contextlib.suppress(self.iam.exceptions.EntityAlreadyExistsException):  # a second stack on one moto
            self.iam.create_role(RoleName=NODE_ROLE, AssumeRolePolicyDocument="{}")
        self.ec2.create_tags(Resources=[BASE_IMAGE], Tags=[{"Key": image_tag(c), "Value": "true"} for c in CLASSES])
        return self

    def register_newer_image(self, node_class: str, name: str) -> str:
        """A new image for `node_class` (made from an instance of BASE_IMAGE, so it keeps its architecture; moto's
        RegisterImage drops it), newer than every image before it."""
        iid = self.ec2.run_instances(ImageId=BASE_IMAGE, MinCount=1, MaxCount=1,
                                     InstanceType="m5.large")["Instances"][0]["InstanceId"]
        image = self.ec2.create_image(InstanceId=iid, Name=name)["ImageId"]
        self.ec2.terminate_instances(InstanceIds=[iid])
        self.ec2.create_tags(Resources=[image], Tags=[{"Key": image_tag(node_class), "Value": "true"}])
        self.images.append(image)
        return image
