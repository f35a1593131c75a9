"""EC2-backed kubelets and the cloud controller manager against moto: membership by user data, registration
as nodeadm configures it, CCM initialization, readiness, never-ready types, instance loss, scenario adoption,
and that the simulator never does Karpenter's NodeClaim lifecycle (docs/architecture.md, "Simulated kubelets
and CCM")."""

from __future__ import annotations

import base64
import time
import uuid
from typing import Any

import boto3
import pytest
from kubernetes import client
from kubernetes.client import ApiException
from support.node_bootstrap import bootstrap_sh, bottlerocket, nodeadm
from support.sim_objects import node, nodeclaim, wait_for

from api.quantity import parse_cpu, parse_memory
from simulator.ec2 import DEFAULT_AMI
from simulator.server import Simulator

GI, MI = 2**30, 2**20
UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized"
KUBELET_LABELS = {"kubernetes.io/os", "kubernetes.io/arch", "kubernetes.io/hostname", "beta.kubernetes.io/os",
                  "beta.kubernetes.io/arch"}
CCM_LABELS = {"node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type", "topology.kubernetes.io/zone",
              "topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/zone",
              "failure-domain.beta.kubernetes.io/region", "topology.k8s.aws/zone-id"}


def _ec2(endpoint: str) -> Any:
    return boto3.client("ec2", endpoint_url=endpoint, region_name="us-east-1")


def _launch(ec2: Any, claim: str | None = None, itype: str = "m5.large", zone: str = "us-east-1b",
            user_data: str | None = None) -> str:
    tags = [{"Key": "karpenter.sh/nodepool", "Value": "default"}]
    if claim:
        tags.append({"Key": "karpenter.sh/nodeclaim", "Value": claim})
    kwargs: dict[str, Any] = {"UserData": user_data} if user_data else {}
    resp = ec2.run_instances(ImageId=DEFAULT_AMI, InstanceType=itype, MinCount=1, MaxCount=1,
                             Placement={"AvailabilityZone": zone},
                             TagSpecifications=[{"ResourceType": "instance", "Tags": tags}], **kwargs)
    return resp["Instances"][0]["InstanceId"]


def _claim(api: client.ApiClient, claim: dict[str, Any] | None = None) -> dict[str, Any]:
    body = claim or nodeclaim(f"c-{uuid.uuid4().hex[:8]}")
    return client.CustomObjectsApi(api).create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", body)


def _node_for(v1: client.CoreV1Api, iid: str) -> Any:
    return next((n for n in v1.list_node().items if (n.spec.provider_id or "").endswith("/" + iid)), None)


def _ready(n: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])


def _initialized_and_ready(v1: client.CoreV1Api, iid: str) -> Any:
    n = _node_for(v1, iid)
    if n is None or not _ready(n) or any(t.key == UNINITIALIZED for t in n.spec.taints or []):
        return None
    return n


def test_nodeadm_user_data_registers_exactly_its_labels_and_taints(sim_ec2: Simulator, moto_endpoint: str) -> None:
    api = sim_ec2.api_client()
    v1, coord = client.CoreV1Api(api), client.CoordinationV1Api(api)
    labels = {"karpenter.sh/nodepool": "default", "karpenter.sh/capacity-type": "spot", "team": "ml"}
    doc = nodeadm(sim_ec2.base_url.replace("127.0.0.1", "localhost"), labels,
                  ["dedicated=gpu:NoSchedule", "karpenter.sh/unregistered:NoExecute"])
    iid = _launch(_ec2(moto_endpoint), itype="c5.xlarge", zone="us-east-1c", user_data=doc)

    n = wait_for(lambda: _node_for(v1, iid), timeout=20, what="node registered")
    assert n.spec.provider_id == f"aws:///us-east-1c/{iid}"
    assert n.metadata.name.endswith(".ec2.internal") and n.metadata.labels["kubernetes.io/hostname"] == n.metadata.name
    assert not n.metadata.finalizers and not n.metadata.owner_references
    n = wait_for(lambda: _initialized_and_ready(v1, iid), timeout=20, what="node initialized by the CCM and Ready")
    got = n.metadata.labels
    assert set(got) == set(labels) | KUBELET_LABELS | CCM_LABELS, "no label beyond the user data's and the system's"
    assert {k: got[k] for k in labels} == labels
    assert got["node.kubernetes.io/instance-type"] == "c5.xlarge" and got["topology.kubernetes.io/zone"] == "us-east-1c"
    assert got["topology.kubernetes.io/region"] == "us-east-1" and got["topology.k8s.aws/zone-id"].startswith("use1-az")
    assert sorted((t.key, t.value, t.effect) for t in n.spec.taints) == [
        ("dedicated", "gpu", "NoSchedule"), ("karpenter.sh/unregistered", None, "NoExecute")]
    assert n.status.node_info.os_image == "Amazon Linux 2023"
    lease = wait_for(lambda: coord.read_namespaced_lease(n.metadata.name, "kube-node-lease"), what="node lease")
    assert lease.spec.holder_identity == n.metadata.name and lease.metadata.owner_references[0].kind == "Node"
    api.close()


@pytest.mark.parametrize("flavor", ["AL2", "Bottlerocket"])
def test_al2_and_bottlerocket_user_data_register_their_labels_taints_and_max_pods(
        sim_ec2: Simulator, moto_endpoint: str, flavor: str) -> None:
    api = sim_ec2.api_client()
    v1 = client.CoreV1Api(api)
    labels = {"karpenter.sh/nodepool": "default"}
    doc = bootstrap_sh(sim_ec2.base_url, labels, ["dedicated=gpu:NoSchedule"], max_pods=17) if flavor == "AL2" \
        else bottlerocket(sim_ec2.base_url, labels, {"dedicated": "gpu:NoSchedule"}, max_pods=17)
    iid = _launch(_ec2(moto_endpoint), itype="m5.large", user_data=doc)
    n = wait_for(lambda: _initialized_and_ready(v1, iid), timeout=20, what="node initialized and Ready")
    assert set(n.metadata.labels) == set(labels) | KUBELET_LABELS | CCM_LABELS
    assert [(t.key, t.value, t.effect) for t in n.spec.taints] == [("dedicated", "gpu", "NoSchedule")]
    assert n.status.capacity["pods"] == "17"
    assert n.status.node_info.os_image.startswith("Amazon Linux 2" if flavor == "AL2" else "Bottlerocket")
    # Bottlerocket reserves memory for its own max-pods; bootstrap.sh for the ENI limit (29 on an m5.large)
    reserve_pods = 29 if flavor == "AL2" else 17
    assert parse_memory(n.status.allocatable["memory"]) == 8 * GI - (11 * reserve_pods + 255) * MI - 100 * MI
    api.close()


def test_allocatable_follows_the_user_datas_kubelet_config(sim_ec2: Simulator, moto_endpoint: str) -> None:
    api = sim_ec2.api_client()
    v1 = client.CoreV1Api(api)
    config = ("maxPods: 50\nkubeReserved: {cpu: 250m, memory: 1Gi, ephemeral-storage: 2Gi}\n"
              "systemReserved: {memory: 256Mi}\nevictionHard: {memory.available: 200Mi, nodefs.available: 15%}")
    iid = _launch(_ec2(moto_endpoint), itype="m5.xlarge", user_data=nodeadm(sim_ec2.base_url, {}, [], config))
    n = wait_for(lambda: _node_for(v1, iid), timeout=20, what="node registered")
    capacity, allocatable = n.status.capacity, n.status.allocatable
    assert parse_cpu(capacity["cpu"]) == 4 and parse_memory(capacity["memory"]) == 16 * GI
    assert capacity["pods"] == allocatable["pods"] == "50"
    assert parse_cpu(allocatable["cpu"]) == 4 - 0.25
    assert parse_memory(allocatable["memory"]) == 16 * GI - GI - 256 * MI - 200 * MI
    assert parse_memory(allocatable["ephemeral-storage"]) == 20 * GI - 2 * GI - int(20 * GI * 0.15)
    api.close()


def test_a_type_outside_the_bundled_catalog_reports_its_machine_as_ec2_describes_it(
        sim_ec2: Simulator, moto_endpoint: str) -> None:
    """The kubelet reads the hardware it boots on: a type the simulator's catalog lacks (c7g.xlarge: 4 Graviton
    vCPUs, 8 GiB, 4 ENIs of 15 addresses) still reports its own cores, memory, architecture and ENI pod count."""
    assert sim_ec2.world.catalog.get("c7g.xlarge") is None
    api = sim_ec2.api_client()
    v1 = client.CoreV1Api(api)
    iid = _launch(_ec2(moto_endpoint), itype="c7g.xlarge", user_data=nodeadm(sim_ec2.base_url, {}, [], ""))
    n = wait_for(lambda: _node_for(v1, iid), timeout=20, what="node registered")
    assert parse_cpu(n.status.capacity["cpu"]) == 4 and parse_memory(n.status.capacity["memory"]) == 8 * GI
    assert n.status.capacity["pods"] == str(4 * (15 - 1) + 2)
    assert n.metadata.labels["kubernetes.io/arch"] == "arm64"
    api.close()


def test_user_data_naming_another_cluster_never_joins(sim_ec2: Simulator, moto_endpoint: str) -> None:
    api = sim_ec2.api_client()
    v1 = client.CoreV1Api(api)
    ec2 = _ec2(moto_endpoint)
    claim = _claim(api)["metadata"]["name"]  # even a claim of this cluster named by the tag does not pull it in
    other = _launch(ec2, claim, user_data=nodeadm("https://other.example.com", {"a": "b"}, [], name="other"))
    blank = _launch(ec2, user_data="#!/bin/bash\necho no bootstrap here\n")
    ours = _launch(ec2, user_data=nodeadm(sim_ec2.base_url, {}, []))
    wait_for(lambda: _node_for(v1, ours), timeout=20, what="this cluster's instance registered")
    time.sleep(0.3)  # several more sync rounds
    assert _node_for(v1, other) is None and _node_for(v1, blank) is None
    assert sim_ec2.stats()["instances"] == {"running": 1}
    ec2.terminate_instances(InstanceIds=[other, blank, ours])
    api.close()


def test_cluster_name_names_this_cluster_when_configured(moto_endpoint: str) -> None:
    with Simulator(time_scale=0.01, ec2_endpoint=moto_endpoint, cluster_name="sim-a") as sim:
        api = sim.api_client()
        v1 = client.CoreV1Api(api)
        ec2 = _ec2(moto_endpoint)
        by_name = _launch(ec2, user_data=nodeadm("https://eks.example.com", {}, [], name="sim-a"))
        wait_for(lambda: _node_for(v1, by_name), timeout=20, what="instance naming the cluster registered")
        ec2.terminate_instances(InstanceIds=[by_name])
        api.close()


def test_the_simulator_never_writes_a_nodeclaim(sim_ec2: Simulator, moto_endpoint: str) -> None:
    """Without nodeflow, a launched node registers and turns Ready, but its NodeClaim stays as created: no
    status, no finalizer, and the Node carries no karpenter.sh label, taint, finalizer or ownerReference."""
    api = sim_ec2.api_client()
    v1, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    body = nodeclaim(f"c-{uuid.uuid4().hex[:8]}", team="ml")
    body["metadata"]["finalizers"] = []
    body["spec"]["taints"] = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    created = _claim(api, body)
    name = created["metadata"]["name"]
    iid = _launch(_ec2(moto_endpoint), name, itype="m5.large")  # no user data: the baked-in bootstrap stand-in
    n = wait_for(lambda: _initialized_and_ready(v1, iid), timeout=20, what="node Ready and initialized by the CCM")
    time.sleep(0.2)  # more sync rounds
    claim = custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", name)
    assert claim["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"], "claim was written"
    assert not claim.get("status") and not claim["metadata"].get("finalizers")
    n = v1.read_node(n.metadata.name)
    assert set(n.metadata.labels) == KUBELET_LABELS | CCM_LABELS
    assert not n.spec.taints and not n.metadata.finalizers and not n.metadata.owner_references
    # the kubelet's own figures, nodeadm defaults: m5.large (2 cores, 8Gi, 29 ENI pods)
    assert n.status.capacity["pods"] == "29" and parse_cpu(n.status.allocatable["cpu"]) == 2 - 0.07
    assert parse_memory(n.status.allocatable["memory"]) == 8 * GI - (11 * 29 + 255) * MI - 100 * MI
    api.close()


def test_ccm_deletes_the_node_of_a_terminated_instance(sim_ec2: Simulator, moto_endpoint: str) -> None:
    api = sim_ec2.api_client()
    v1 = client.CoreV1Api(api)
    ec2 = _ec2(moto_endpoint)
    iid = _launch(ec2, user_data=nodeadm(sim_ec2.base_url, {}, []))
    n = wait_for(lambda: _initialized_and_ready(v1, iid), timeout=20, what="ready")
    v1.patch_node(n.metadata.name, {"metadata": {"finalizers": ["karpenter.sh/termination"]}})  # as nodeflow would
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


def _deleting_or_gone(v1: client.CoreV1Api, name: str) -> bool:
    try:
        return v1.read_node(name).metadata.deletion_timestamp is not None
    except ApiException as exc:
        return exc.status == 404


def test_ccm_deletes_the_node_of_an_instance_that_ended_before_any_listing(moto_endpoint: str) -> None:
    """The CCM asks after every Node's instance, not only those it saw running: an instance terminated before the
    world's listing ever showed it (a test that terminates a scenario node's instance at once) still takes its
    Node down. Before the world described such an instance by id, the Node stayed for good."""
    ec2 = _ec2(moto_endpoint)
    iid = _launch(ec2)
    ec2.terminate_instances(InstanceIds=[iid])  # before the world starts: no listing of live instances shows it
    gone = node(f"gone-early-{uuid.uuid4().hex[:6]}", finalizers=["karpenter.sh/termination"])
    gone["spec"]["providerID"] = f"aws:///us-east-1b/{iid}"
    made_up = node(f"made-up-{uuid.uuid4().hex[:6]}")
    made_up["spec"]["providerID"] = "aws:///us-east-1b/i-0123456789abcdef0"
    with Simulator(time_scale=0.01, ready_delay=2.0, ec2_endpoint=moto_endpoint) as sim:
        api = sim.api_client()
        v1 = client.CoreV1Api(api)
        v1.create_node(gone)
        v1.create_node(made_up)
        wait_for(lambda: _deleting_or_gone(v1, gone["metadata"]["name"]), timeout=10,
                 what="the node of the instance that ended unseen deleting")
        assert not _ready(v1.read_node(gone["metadata"]["name"]))
        assert v1.read_node(made_up["metadata"]["name"]).metadata.deletion_timestamp is None, \
            "an instance EC2 does not know is not one that ended"
        api.close()


def test_never_ready_instance_type(sim_ec2: Simulator, moto_endpoint: str) -> None:
    sim_ec2.world.mark_never_ready("m5.2xlarge")
    api = sim_ec2.api_client()
    v1 = client.CoreV1Api(api)
    iid = _launch(_ec2(moto_endpoint), _claim(api)["metadata"]["name"], itype="m5.2xlarge")
    n = wait_for(lambda: _node_for(v1, iid), timeout=20, what="registered")
    time.sleep(0.3)  # many ready delays at this time scale
    assert not _ready(v1.read_node(n.metadata.name))
    api.close()


def test_instances_older_than_the_simulator_never_join(moto_endpoint: str) -> None:
    """A simulator reusing an earlier one's port must not take the earlier one's instances."""
    ec2 = _ec2(moto_endpoint)
    with Simulator(time_scale=0.01, ec2_endpoint=moto_endpoint) as first:
        port, base_url = first.port, first.base_url
    old = _launch(ec2, user_data=nodeadm(base_url, {}, []))
    time.sleep(2.5)  # moto's LaunchTime is to the second
    with Simulator(time_scale=0.01, ec2_endpoint=moto_endpoint, port=port) as second:
        api = second.api_client()
        v1 = client.CoreV1Api(api)
        new = _launch(ec2, user_data=nodeadm(second.base_url, {}, []))
        wait_for(lambda: _node_for(v1, new), timeout=20, what="the new instance registered")
        assert _node_for(v1, old) is None
        api.close()
    ec2.terminate_instances(InstanceIds=[old, new])


def test_scenario_nodes_get_real_instances(moto_endpoint: str) -> None:
    n = node("scenario-node", labels={"node.kubernetes.io/instance-type": "m5.xlarge",
                                      "topology.kubernetes.io/zone": "us-east-1a",
                                      "karpenter.sh/nodepool": "default"})
    n["spec"]["providerID"] = "aws:///us-east-1a/i-fake"
    claim = nodeclaim("scenario-claim")
    claim["status"] = {"nodeName": "scenario-node", "providerID": "aws:///us-east-1a/i-fake"}
    with Simulator(objects=[n, claim], ec2_endpoint=moto_endpoint, time_scale=0.01) as sim:
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
    """Claim names repeat across clusters sharing one moto (old-0 in many tests): once a claim is bound to its
    instance (status.providerID, written by nodeflow), another instance tagged with its name does not join."""
    api = sim_ec2.api_client()
    v1, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    ec2 = _ec2(moto_endpoint)
    claim_name = _claim(api)["metadata"]["name"]
    own = _launch(ec2, claim_name)
    custom.patch_cluster_custom_object_status("karpenter.sh", "v1", "nodeclaims", claim_name, {
        "status": {"providerID": f"aws:///us-east-1b/{own}"}})
    wait_for(lambda: _node_for(v1, own), timeout=20, what="own instance registered")
    stranger = _launch(ec2, claim_name)
    time.sleep(0.5)  # ten EC2 sync rounds
    assert _node_for(v1, stranger) is None, "a stranger instance joined"
    assert len(v1.list_node().items) == 1
    ec2.terminate_instances(InstanceIds=[own, stranger])
    api.close()


def test_user_data_is_read_as_base64(sim_ec2: Simulator, moto_endpoint: str) -> None:
    """boto3 base64-encodes RunInstances UserData; DescribeInstanceAttribute returns it base64 again."""
    ec2 = _ec2(moto_endpoint)
    iid = _launch(ec2, user_data=nodeadm(sim_ec2.base_url, {"x": "y"}, []))
    raw = ec2.describe_instance_attribute(InstanceId=iid, Attribute="userData")["UserData"]["Value"]
    assert "NodeConfig" in base64.b64decode(raw).decode()
    api = sim_ec2.api_client()
    n = wait_for(lambda: _node_for(client.CoreV1Api(api), iid), timeout=20, what="registered")
    assert n.metadata.labels["x"] == "y"
    api.close()
