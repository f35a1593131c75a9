"""EC2NodeClass resolution against moto (EC2, SSM, IAM) and the simulator: each selector kind, status, hash
annotations, the instance profile of a role, and a class that does not resolve (Ready False, an Event)."""

from __future__ import annotations

from typing import Any

from support.nodeclass_world import AwsWorld, create, events, node_class

from activities.nodeclass import NodeClassActivities
from api.ec2nodeclass import HASH_ANNOTATION, load_ec2nodeclass
from api.nodeclass_launch import instance_profile_name
from contracts.nodeclass import NodeClassInput
from gateways.kube import KubeClient

EKS = "/aws/service/eks/optimized-ami"


def _acts(kube: KubeClient, world: AwsWorld) -> NodeClassActivities:
    return NodeClassActivities(kube, world.ec2, world.ssm, world.iam, cluster_name="demo")


def _reconcile(kube: KubeClient, world: AwsWorld, spec: dict[str, Any], name: str = "default") -> dict[str, Any]:
    create(kube, node_class(name, spec))
    result = _acts(kube, world).reconcile_all(NodeClassInput(names=[name]))
    assert [c.name for c in result.classes] == [name]
    obj = kube.get_node_class(name)
    assert obj is not None
    return obj


def _ready(obj: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")


def test_ids_resolve_and_the_class_is_ready(kube: KubeClient, world: AwsWorld) -> None:
    spec = {"amiFamily": "AL2023", "amiSelectorTerms": [{"id": world.images["amd64-a"]}],
            "subnetSelectorTerms": [{"id": world.subnets["b"]}],
            "securityGroupSelectorTerms": [{"id": world.groups["named"]}], "instanceProfile": "given-profile"}
    obj = _reconcile(kube, world, spec)
    status = obj["status"]
    assert _ready(obj)["status"] == "True"
    assert [a["id"] for a in status["amis"]] == [world.images["amd64-a"]]
    assert status["amis"][0]["requirements"] == [{"key": "kubernetes.io/arch", "operator": "In",
                                                  "values": ["amd64"]}]
    assert [(s["id"], s["zone"]) for s in status["subnets"]] == [(world.subnets["b"], "us-east-1b")]
    assert [g["id"] for g in status["securityGroups"]] == [world.groups["named"]]
    assert status["instanceProfile"] == "given-profile"
    nc = load_ec2nodeclass(obj)
    assert obj["metadata"]["annotations"][HASH_ANNOTATION] == nc.static_hash()


def test_tags_and_names_resolve_most_free_subnet_first(kube: KubeClient, world: AwsWorld) -> None:
    spec = {"amiFamily": "AL2023", "amiSelectorTerms": [{"tags": {"team": world.tag}}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}},
                                           {"name": f"named-{world.tag}"}],
            "role": world.role}
    obj = _reconcile(kube, world, spec)
    status = obj["status"]
    assert _ready(obj)["status"] == "True"
    # One image per architecture: of the two amd64 ones the newer (then the greater name) wins.
    by_arch = {a["requirements"][0]["values"][0]: a["id"] for a in status["amis"]}
    assert by_arch == {"amd64": world.images["amd64-b"], "arm64": world.images["arm64"]}
    ids = [s["id"] for s in status["subnets"]]
    assert set(ids) == {world.subnets[k] for k in ("small-a", "big-a", "b")}
    assert ids.index(world.subnets["big-a"]) < ids.index(world.subnets["small-a"])  # /24 before /28
    assert {g["id"] for g in status["securityGroups"]} == set(world.groups.values())
    # The role's instance profile was created in IAM, holding the role.
    profile = instance_profile_name("demo", "us-east-1", "default")
    assert status["instanceProfile"] == profile
    roles = world.iam.get_instance_profile(InstanceProfileName=profile)["InstanceProfile"]["Roles"]
    assert [r["RoleName"] for r in roles] == [world.role]


def test_ami_name_and_ssm_parameter_terms(kube: KubeClient, world: AwsWorld) -> None:
    param = f"/nodeflow-test/{world.tag}/ami"
    world.ssm.put(param, world.images["amd64-a"])
    spec = {"amiFamily": "AL2023", "amiSelectorTerms": [{"ssmParameter": param}],
            "subnetSelectorTerms": [{"id": world.subnets["b"]}],
            "securityGroupSelectorTerms": [{"id": world.groups["named"]}], "instanceProfile": "p"}
    obj = _reconcile(kube, world, spec, name="by-ssm")
    assert [a["id"] for a in obj["status"]["amis"]] == [world.images["amd64-a"]]
    spec["amiSelectorTerms"] = [{"name": f"eks-node-{world.tag}-amd64-b"}]
    obj = _reconcile(kube, world, spec, name="by-name")
    assert [a["id"] for a in obj["status"]["amis"]] == [world.images["amd64-b"]]


def test_alias_reads_the_eks_parameters_of_the_cluster_version(kube: KubeClient, world: AwsWorld) -> None:
    version = kube.server_version()
    assert version == "1.32"  # the simulator's /version
    world.ssm.put(f"{EKS}/{version}/amazon-linux-2023/x86_64/standard/recommended/image_id",
                  world.images["amd64-b"])
    spec = {"amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}], "role": world.role}
    obj = _reconcile(kube, world, spec)
    assert _ready(obj)["status"] == "True"
    assert [(a["id"], [r["key"] for r in a["requirements"]]) for a in obj["status"]["amis"]] == [
        (world.images["amd64-b"], ["karpenter.k8s.aws/instance-accelerator-count",
                                     "karpenter.k8s.aws/instance-gpu-count", "kubernetes.io/arch"])]
    asked = set(world.ssm.names)
    assert f"{EKS}/1.32/amazon-linux-2023/arm64/standard/recommended/image_id" in asked  # absent: skipped


def test_a_class_that_does_not_resolve_is_not_ready_with_an_event(kube: KubeClient, world: AwsWorld) -> None:
    spec = {"amiFamily": "AL2023", "amiSelectorTerms": [{"tags": {"team": world.tag}}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "nobody-" + world.tag}}],
            "securityGroupSelectorTerms": [{"id": "sg-0000000000000dead"}], "role": "no-such-role-" + world.tag}
    obj = _reconcile(kube, world, spec, name="broken")
    ready = _ready(obj)
    assert ready["status"] == "False"
    assert "subnetSelectorTerms[0]" in ready["message"] and "securityGroupSelectorTerms[0]" in ready["message"]
    assert "no instance profile for role" in ready["message"]
    kinds = {c["type"]: c["status"] for c in obj["status"]["conditions"]}
    assert kinds == {"AMIsReady": "True", "SubnetsReady": "False", "SecurityGroupsReady": "False",
                     "InstanceProfileReady": "False", "CapacityReservationsReady": "True", "Ready": "False"}
    seen = events(kube, "EC2NodeClass", "broken")
    assert [(e["reason"], e["type"]) for e in seen] == [("NodeClassNotReady", "Warning")]
    assert "subnetSelectorTerms[0]" in seen[0]["message"]
    # The next pass finds the same problem: no second Event, same transition time.
    _acts(kube, world).reconcile_all(NodeClassInput(names=["broken"]))
    assert len(events(kube, "EC2NodeClass", "broken")) == 1
    assert _ready(kube.get_node_class("broken") or {})["lastTransitionTime"] == ready["lastTransitionTime"]
