"""EC2-backed kubelets against moto: registration, readiness, NodeClaim status, instance loss, never-ready
types, and scenario nodes adopted as real instances."""

from __future__ import annotations

import time
import uuid

import boto3
from kubernetes import client
from kubernetes.client import ApiException
from support.sim_objects import node, nodeclaim, wait_for

from simulator.ec2 import DEFAULT_AMI
from simulator.server import Simulator


def _ec2(endpoint: str):  # type: ignore[no-untyped-def]
    return boto3.client("ec2", endpoint_url=endpoint, region_name="us-east-1")


def _launch(ec2, claim: str, itype: str = "m5.large", zone: str = "us-east-1b", spot: bool = False) -> str:  # type: ignore[no-untyped-def]
    kwargs = {"InstanceMarketOptions": {"MarketType": "spot"}} if spot else {}
    resp = ec2.run_instances(ImageId=DEFAULT_AMI, InstanceType=itype, MinCount=1, MaxCount=1,
                             Placement={"AvailabilityZone": zone}, TagSpecifications=[{
                                 "ResourceType": "instance", "Tags": [{"Key": "karpenter.sh/nodeclaim", "Value": claim},
                                                                      {"Key": "karpenter.sh/nodepool",
                                                                       "Value": "default"}]}], **kwargs)
    return resp["Instances"][0]["InstanceId"]


def _claim(api: client.ApiClient) -> str:
    name = f"c-{uuid.uuid4().hex[:8]}"
    client.CustomObjectsApi(api).create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", nodeclaim(name))
    return name


def _node_for(v1: client.CoreV1Api, iid: str):  # type: ignore[no-untyped-def]
    return next((n for n in v1.list_node().items if (n.spec.provider_id or "").endswith("/" + iid)), None)


def _ready(n) -> bool:  # type: ignore[no-untyped-def]
    return any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])


def test_running_instance_registers_a_node_that_turns_ready(sim_ec2: Simulator, moto_endpoint: str) -> None:
    api = sim_ec2.api_client()
    v1, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    claim_name = _claim(api)
    iid = _launch(_ec2(moto_endpoint), claim_name, itype="c5.xlarge", zone="us-east-1c", spot=True)
    n = wait_for(lambda: _node_for(v1, iid), timeout=20, what="node registered")
    assert n.spec.provider_id == f"aws:///us-east-1c/{iid}"
    labels = n.metadata.labels
    assert labels["node.kubernetes.io/instance-type"] == "c5.xlarge"
    assert labels["topology.kubernetes.io/zone"] == "us-east-1c"
    assert labels["karpenter.sh/capacity-type"] == "spot"
    assert labels["karpenter.sh/nodepool"] == "default" and labels["karpenter.sh/registered"] == "true"
    assert labels["kubernetes.io/hostname"] == n.metadata.name and n.metadata.name.endswith(".ec2.internal")
    assert n.status.capacity["cpu"] == "4" and n.status.allocatable["memory"] == "8Gi"
    assert n.metadata.finalizers == ["karpenter.sh/termination"]
    n = wait_for(lambda: (x := _node_for(v1, iid)) is not None and _ready(x) and x, timeout=20, what="node ready")
    assert n.metadata.labels["karpenter.sh/initialized"] == "true"

    def claim_initialized() -> dict | None:
        got = custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", claim_name)
        conds = {c["type"]: c["status"] for c in got.get("status", {}).get("conditions", [])}
        return got if conds.get("Initialized") == "True" else None

    got = wait_for(claim_initialized, timeout=10, what="nodeclaim initialized")
    conds = {c["type"]: c["status"] for c in got["status"]["conditions"]}
    assert conds["Launched"] == conds["Registered"] == "True"
    assert got["status"]["nodeName"] == n.metadata.name and got["status"]["providerID"] == n.spec.provider_id
    api.close()


def test_terminated_instance_takes_its_node_away(sim_ec2: Simulator, moto_endpoint: str) -> None:
    api = sim_ec2.api_client()
    v1 = client.CoreV1Api(api)
    ec2 = _ec2(moto_endpoint)
    iid = _launch(ec2, _claim(api))
    n = wait_for(lambda: (x := _node_for(v1, iid)) is not None and _ready(x) and x, timeout=20, what="ready")
    ec2.terminate_instances(InstanceIds=[iid])
    n = wait_for(lambda: (x := v1.read_node(n.metadata.name)).metadata.deletion_timestamp and x, timeout=20,
                 what="node deleting after its instance went")
    assert not _ready(n)
    v1.patch_node(n.metadata.name, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["karpenter.sh/termination"]}})
    try:
        v1.read_node(n.metadata.name)
        raise AssertionError("node should be gone once its finalizer is removed")
    except ApiException as exc:
        assert exc.status == 404
    assert sim_ec2.stats()["instances"].get("terminated", 0) >= 1
    api.close()


def test_never_ready_instance_type(sim_ec2: Simulator, moto_endpoint: str) -> None:
    sim_ec2.world.mark_never_ready("m5.2xlarge")
    api = sim_ec2.api_client()
    v1 = client.CoreV1Api(api)
    iid = _launch(_ec2(moto_endpoint), _claim(api), itype="m5.2xlarge")
    n = wait_for(lambda: _node_for(v1, iid), timeout=20, what="registered")
    time.sleep(0.3)  # many ready delays at this time scale
    assert not _ready(v1.read_node(n.metadata.name))
    api.close()


def test_scenario_nodes_get_real_instances(moto_endpoint: str) -> None:
    n = node("scenario-node", labels={"node.kubernetes.io/instance-type": "m5.xlarge",
                                      "topology.kubernetes.io/zone": "us-east-1a",
                                      "karpenter.sh/nodepool": "default"})
    n["spec"]["providerID"] = "aws:///us-east-1a/i-fake"
    claim = nodeclaim("scenario-claim")
    claim["status"] = {"nodeName": "scenario-node", "providerID": "aws:///us-east-1a/i-fake"}
    with Simulator(objects=[n, claim], ec2_endpoint=moto_endpoint, time_scale=0.01, ec2_poll_seconds=0.05) as sim:
        api = sim.api_client()
        got = client.CoreV1Api(api).read_node("scenario-node")
        iid = got.spec.provider_id.rsplit("/", 1)[1]
        assert iid != "i-fake"
        desc = _ec2(moto_endpoint).describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0]
        tags = {t["Key"]: t["Value"] for t in desc["Tags"]}
        assert desc["InstanceType"] == "m5.xlarge" and tags["karpenter.sh/nodeclaim"] == "scenario-claim"
        claim_now = client.CustomObjectsApi(api).get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims",
                                                                           "scenario-claim")
        assert claim_now["status"]["providerID"] == got.spec.provider_id
        time.sleep(0.3)  # several EC2 sync rounds
        assert len(client.CoreV1Api(api).list_node().items) == 1, "no duplicate node registered"
        api.close()


def test_a_claim_bound_to_its_instance_ignores_a_stranger_of_the_same_name(sim_ec2: Simulator,
                                                                          moto_endpoint: str) -> None:
    """Claim names repeat across clusters sharing one moto (old-0 in many tests): a running instance of another
    cluster tagged with the claim's name must not join and re-point the claim."""
    api = sim_ec2.api_client()
    v1, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    ec2 = _ec2(moto_endpoint)
    claim_name = _claim(api)
    own = _launch(ec2, claim_name)
    wait_for(lambda: _node_for(v1, own), timeout=20, what="own instance registered")
    stranger = _launch(ec2, claim_name)
    time.sleep(0.5)  # ten EC2 sync rounds
    assert _node_for(v1, stranger) is None, "a stranger instance joined"
    got = custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", claim_name)
    assert got["status"]["providerID"].endswith("/" + own)
    assert len(v1.list_node().items) == 1
    ec2.terminate_instances(InstanceIds=[own, stranger])
    api.close()
