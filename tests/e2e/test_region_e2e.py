"""A cluster in eu-west-1 end to end: the real worker's wiring with instance-type discovery on (EC2's
DescribeInstanceTypes / DescribeInstanceTypeOfferings for eu-west-1, prices from the Pricing API of the devstack's
EC2 stand-in), the simulator's kubelets and CCM in eu-west-1, and the dev server.

- pending pods -> ProvisioningWorkflow -> a NodeClaim in one of eu-west-1's zones (as EC2's
  DescribeAvailabilityZones names them) with a type EC2 offers there; its Node registers and is initialized;
- a pool allowing only `karpenter.k8s.aws/instance-generation Gt 6`, under an EC2NodeClass whose one subnet is in
  eu-west-1b, launches only such types (types the bundled us-east-1 catalog does not have, so the launch shows the
  discovered catalog was used), all in eu-west-1b.
"""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s
from support.disruption_stack import Stack, disruption_stack, fresh, replica_set, wait_for

from api import labels
from api.catalog import load_default_catalog
from api.instance_types import labels as T
from bench.clusters import node_pool
from contracts.nodeclass import NodeClassInput
from contracts.provisioning import PodRef, ProvisioningInput, ProvisioningPhase, ProvisioningSettings
from devstack.demo_aws import BASE_IMAGE
from runtime.cloud_clients import ec2_client, iam_client, pricing_client, ssm_client
from simulator.server import Simulator
from workflows.nodeclass import NodeClassWorkflow
from workflows.provisioning import ProvisioningWorkflow

pytestmark = [pytest.mark.e2e]  # no shared fixture: any xdist worker (the "demo" group is for test_demo.py)
REGION = "eu-west-1"
FAST = ProvisioningSettings(ready_timeout_seconds=30, ready_poll_seconds=1, ice_backoff_seconds=1, ice_attempts=2)
ON_DEMAND_AMD64 = [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
                   {"key": labels.ARCH_LABEL, "operator": "In", "values": ["amd64"]}]
NEW_GEN = [{"key": T.GENERATION, "operator": "Gt", "values": ["6"]},
           {"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]}]


@pytest.fixture
def sim_eu(cloud_endpoint: str) -> Iterator[Simulator]:
    """The simulator's EC2 world (kubelets, CCM) reading eu-west-1 from the stand-in."""
    with Simulator(time_scale=0.01, ready_delay=2.0, ec2_endpoint=cloud_endpoint,
                   region=REGION) as s:
        yield s


def region_zones(endpoint: str) -> set[str]:
    zones = ec2_client(REGION, endpoint).describe_availability_zones()["AvailabilityZones"]
    return {z["ZoneName"] for z in zones}


def offered_types(endpoint: str, zone: str) -> set[str]:
    pages = ec2_client(REGION, endpoint).get_paginator("describe_instance_type_offerings").paginate(
        LocationType="availability-zone", Filters=[{"Name": "location", "Values": [zone]}])
    return {o["InstanceType"] for page in pages for o in page["InstanceTypeOfferings"]}


def pending_refs(api: Any) -> list[PodRef]:
    items = api.sanitize_for_serialization(k8s.CoreV1Api(api).list_namespaced_pod("default").items)
    return [PodRef(key=f"default/{p['metadata']['name']}", uid=p["metadata"]["uid"]) for p in items
            if any(c.get("reason") == "Unschedulable" for c in (p.get("status") or {}).get("conditions") or [])]


def initialized_claims(stack: Stack, count: int) -> list[dict[str, Any]] | None:
    done = [c for c in stack.node_claims() if any(
        c2.get("type") == "Initialized" and c2.get("status") == "True"
        for c2 in (c.get("status") or {}).get("conditions") or [])]
    return done if len(done) >= count else None


async def discovered(stack: Stack) -> None:
    """Until the worker's catalog source serves eu-west-1's discovered catalog (not the bundled one)."""
    source = stack.deps.catalog_source  # type: ignore[union-attr]
    await wait_for(lambda: source.region == REGION, timeout=120, interval=0.5, what="eu-west-1's catalog discovered")


def subnet_in(endpoint: str, zone: str) -> dict[str, Any]:
    """A VPC with one subnet (in `zone`) and a security group tagged for discovery, and a node role: the spec of an
    EC2NodeClass that selects them and moto's bundled x86_64 image."""
    ec2, tag = ec2_client(REGION, endpoint), f"region-e2e-{uuid.uuid4().hex[:8]}"
    vpc = ec2.create_vpc(CidrBlock="10.77.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.77.1.0/24", AvailabilityZone=zone)["Subnet"]["SubnetId"]
    group = ec2.create_security_group(GroupName=tag, Description="nodes", VpcId=vpc)["GroupId"]
    ec2.create_tags(Resources=[subnet, group], Tags=[{"Key": "karpenter.sh/discovery", "Value": tag}])
    iam_client(REGION, endpoint).create_role(RoleName=tag, AssumeRolePolicyDocument="{}")
    selector = [{"tags": {"karpenter.sh/discovery": tag}}]
    return {"amiFamily": "AL2023", "amiSelectorTerms": [{"id": BASE_IMAGE}], "subnetSelectorTerms": selector,
            "securityGroupSelectorTerms": selector, "role": tag}


async def provision(stack: Stack, pods: int) -> Any:
    refs = await wait_for(lambda: (r := pending_refs(stack.api)) and len(r) == pods and r, what=f"{pods} pending")
    handle = await stack.client.start_workflow(
        ProvisioningWorkflow.run, ProvisioningInput(pods=refs, settings=FAST),
        id=f"provision-test-{uuid.uuid4()}", task_queue=stack.task_queue)
    result = await asyncio.wait_for(handle.result(), 120)
    assert result.outcome == ProvisioningPhase.SUCCEEDED, result.message
    return result


def eu_stack(temporal_client: Any, sim: Simulator, endpoint: str, node_class: bool = False) -> Any:
    worker: dict[str, Any] = {"discover_instance_types": True}
    if node_class:  # launches from an EC2NodeClass bootstrap nodes into this cluster
        worker |= {"cluster_name": "region-e2e", "cluster_endpoint": sim.base_url,
                   "cluster_ca": base64.b64encode(b"-----CA-----").decode()}
    return disruption_stack(temporal_client, sim, endpoint, region=REGION, pricing=pricing_client(REGION, endpoint),
                            worker=worker, ssm=ssm_client(REGION, endpoint), iam=iam_client(REGION, endpoint))


async def test_a_pool_in_eu_west_1_launches_into_its_zones_with_discovered_types(temporal_client, sim_eu,
                                                                                  cloud_endpoint) -> None:
    zones = await asyncio.to_thread(region_zones, cloud_endpoint)
    assert zones == {"eu-west-1a", "eu-west-1b", "eu-west-1c"}
    sim_eu.load_objects(fresh([node_pool("default", requirements=ON_DEMAND_AMD64, consolidate_after="Never"),
                               replica_set("web", 2, "500m")]))
    async with eu_stack(temporal_client, sim_eu, cloud_endpoint) as stack:
        await discovered(stack)
        result = await provision(stack, 2)
        (claim,) = await wait_for(lambda: initialized_claims(stack, 1), timeout=30, what="an initialized NodeClaim")
        meta = claim["metadata"]
        zone, itype = meta["labels"][labels.ZONE_LABEL], meta["labels"][labels.INSTANCE_TYPE_LABEL]
        assert zone in zones
        assert itype in {r.instance_type for r in result.launched}
        assert itype in await asyncio.to_thread(offered_types, cloud_endpoint, zone)
        assert claim["status"]["providerID"].startswith(f"aws:///{zone}/i-")
        node = stack.api.sanitize_for_serialization(k8s.CoreV1Api(stack.api).read_node(claim["status"]["nodeName"]))
        node_labels = node["metadata"]["labels"]
        assert node_labels[labels.ZONE_LABEL] == zone and node_labels[labels.REGION_LABEL] == REGION
        assert node_labels[labels.INSTANCE_TYPE_LABEL] == itype
        assert node_labels[labels.REGISTERED_LABEL] == "true" and node_labels[labels.INITIALIZED_LABEL] == "true"
        (instance,) = stack.instances(ids=[claim["status"]["providerID"].rsplit("/", 1)[-1]])
        assert instance["Placement"]["AvailabilityZone"] == zone and instance["InstanceType"] == itype


async def test_a_pool_allowing_generation_over_6_launches_only_such_types(temporal_client, sim_eu,
                                                                          cloud_endpoint) -> None:
    big = replica_set("batch", 3, "1500m", "2Gi")  # one pod a node: several launches, each of its own choice
    big["spec"]["template"]["spec"]["affinity"] = {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"app": "batch"}}, "topologyKey": labels.HOSTNAME_LABEL}]}}
    spec = await asyncio.to_thread(subnet_in, cloud_endpoint, "eu-west-1b")
    node_class = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"},
                  "spec": spec}
    sim_eu.load_objects(fresh([node_class, node_pool("default", requirements=NEW_GEN, consolidate_after="Never"),
                               big]))
    bundled = {it.name for it in load_default_catalog().instance_types}
    async with eu_stack(temporal_client, sim_eu, cloud_endpoint, node_class=True) as stack:
        resolved = await stack.client.execute_workflow(NodeClassWorkflow.run, NodeClassInput(),
                                                       id=f"nodeclass-{uuid.uuid4()}", task_queue=stack.task_queue)
        assert [(c.name, c.ready) for c in resolved.classes] == [("default", True)], resolved
        await discovered(stack)
        catalog = stack.deps.catalog_source.current()  # type: ignore[union-attr]
        result = await provision(stack, 3)
        claims = await wait_for(lambda: initialized_claims(stack, 3), timeout=45, what="3 initialized NodeClaims")
        launched = {c["metadata"]["labels"][labels.INSTANCE_TYPE_LABEL] for c in claims}
        assert launched == {r.instance_type for r in result.launched}
        for claim in claims:  # every type the launch could take, not only the one EC2 gave
            (req,) = [r for r in claim["spec"]["requirements"] if r["key"] == labels.INSTANCE_TYPE_LABEL]
            assert req["values"] and all(int(catalog.get(t).labels[T.GENERATION]) > 6 for t in req["values"])
            assert claim["metadata"]["labels"][labels.ZONE_LABEL] == "eu-west-1b"  # the class's one subnet
            assert claim["spec"]["nodeClassRef"]["name"] == "default"
        generations = {int(catalog.get(t).labels[T.GENERATION]) for t in launched}
        assert min(generations) > 6
        assert launched - bundled, "a launched type only discovery knows shows the discovered catalog was used"
