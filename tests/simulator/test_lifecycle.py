"""Finalizers and deletionTimestamp, ownerReference cascade, graceful pod deletion, the safety ledger, and an EC2
node's life as its kubelet and the CCM play it without nodeflow."""

from __future__ import annotations

import time

import boto3
import pytest
from kubernetes import client
from kubernetes.client import ApiException
from support.node_bootstrap import nodeadm
from support.sim_objects import node, nodeclaim, nodepool, pdb, pod, replicaset, wait_for

from simulator.ec2 import DEFAULT_AMI
from simulator.server import Simulator


def _gone(fn, *args) -> bool:  # type: ignore[no-untyped-def]
    try:
        fn(*args)
    except ApiException as exc:
        return exc.status == 404
    return False


def test_finalizer_holds_a_deleted_object_until_removed(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("n1", finalizers=["karpenter.sh/termination"])])
    v1 = client.CoreV1Api(k8s)
    v1.delete_node("n1")
    held = v1.read_node("n1")
    assert held.metadata.deletion_timestamp is not None
    v1.delete_node("n1")  # a second delete is harmless
    with pytest.raises(ApiException) as exc:
        v1.patch_node("n1", {"metadata": {"finalizers": ["karpenter.sh/termination", "new"]}})
    assert exc.value.status == 422, "no new finalizers on an object being deleted"
    v1.patch_node("n1", [{"op": "remove", "path": "/metadata/finalizers"}])
    assert _gone(v1.read_node, "n1")


def test_cascade_nodepool_to_nodeclaim_to_node_to_pods(sim: Simulator, k8s: client.ApiClient) -> None:
    custom = client.CustomObjectsApi(k8s)
    v1 = client.CoreV1Api(k8s)
    pool = custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", nodepool("default"))
    claim = nodeclaim("c1")
    claim["metadata"]["finalizers"] = []
    claim["metadata"]["ownerReferences"] = [{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "name": "default",
                                             "uid": pool["metadata"]["uid"]}]
    claim = custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", claim)
    n = node("n1")
    n["metadata"]["ownerReferences"] = [{"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": "c1",
                                         "uid": claim["metadata"]["uid"]}]
    v1.create_node(n)
    sim.load_objects([pod("p1", "n1")])
    custom.delete_cluster_custom_object("karpenter.sh", "v1", "nodepools", "default")
    wait_for(lambda: _gone(v1.read_node, "n1"), what="node removed through the cascade")
    assert _gone(custom.get_cluster_custom_object, "karpenter.sh", "v1", "nodeclaims", "c1")
    wait_for(lambda: _gone(v1.read_namespaced_pod, "p1", "default"), what="pod of the vanished node removed")
    removal = [r for r in sim.ledger() if r["pod"] == "default/p1"]
    assert removal and removal[0]["cause"] == "node-gone"


def test_orphan_propagation_keeps_dependents(sim: Simulator, k8s: client.ApiClient) -> None:
    custom = client.CustomObjectsApi(k8s)
    pool = custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", nodepool("p"))
    claim = nodeclaim("c1")
    claim["metadata"]["ownerReferences"] = [{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "name": "p",
                                             "uid": pool["metadata"]["uid"]}]
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", claim)
    custom.delete_cluster_custom_object("karpenter.sh", "v1", "nodepools", "p", propagation_policy="Orphan")
    time.sleep(0.1)
    assert custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "c1")["metadata"].get(
        "deletionTimestamp") is None


def test_graceful_pod_deletion_takes_grace_times_scale(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("n1"), pod("slow", "n1", grace=30), pod("fast", "n1", grace=30),
                      pod("pending", None, nodeSelector={"none": "x"})])
    v1 = client.CoreV1Api(k8s)
    started = time.monotonic()
    v1.delete_namespaced_pod("slow", "default")
    terminating = v1.read_namespaced_pod("slow", "default")
    assert terminating.metadata.deletion_timestamp is not None and terminating.metadata.deletion_grace_period_seconds \
        == 30
    v1.delete_namespaced_pod("fast", "default", grace_period_seconds=0)
    assert _gone(v1.read_namespaced_pod, "fast", "default"), "grace 0 removes at once"
    v1.delete_namespaced_pod("pending", "default")
    assert _gone(v1.read_namespaced_pod, "pending", "default"), "an unbound pod goes at once"
    wait_for(lambda: _gone(v1.read_namespaced_pod, "slow", "default"), what="pod gone after its grace period")
    assert 0.25 <= time.monotonic() - started < 3.0, "30 s at time_scale 0.01 is about 0.3 s"
    causes = {r["pod"]: r["cause"] for r in sim.ledger()}
    assert causes == {"default/slow": "delete", "default/fast": "grace-deadline", "default/pending": "delete"}


def test_pod_finalizer_outlives_the_grace_period(sim: Simulator, k8s: client.ApiClient) -> None:
    p = pod("held", "n1", grace=1)
    p["metadata"]["finalizers"] = ["example.com/hold"]
    sim.load_objects([node("n1"), p])
    v1 = client.CoreV1Api(k8s)
    v1.delete_namespaced_pod("held", "default")
    time.sleep(0.1)
    assert v1.read_namespaced_pod("held", "default").metadata.deletion_grace_period_seconds == 0
    v1.patch_namespaced_pod("held", "default", {"metadata": {"$deleteFromPrimitiveList/finalizers":
                                                             ["example.com/hold"]}})
    assert _gone(v1.read_namespaced_pod, "held", "default")


def test_ledger_records_pdb_violations_by_cause(sim: Simulator, k8s: client.ApiClient) -> None:
    labels = {"app": "web"}
    sim.load_objects([node("n1"), node("n2"), replicaset("web", 2, labels),
                      pdb("web", labels, minAvailable=2)])
    v1 = client.CoreV1Api(k8s)
    pods = wait_for(lambda: [p for p in v1.list_namespaced_pod("default").items if p.status.phase == "Running"
                             and len(v1.list_namespaced_pod("default").items) == 2], what="two running pods")
    v1.delete_namespaced_pod(pods[0].metadata.name, "default")
    stats = sim.stats()
    assert stats["pdbViolations"]["delete"] == 1 and stats["pdbViolationsTotal"] == 1
    entry = next(r for r in sim.ledger() if r["pod"].endswith(pods[0].metadata.name))
    assert entry["violated"] == ["default/web"] and entry["healthy"] is True


def test_foreground_deletion_waits_for_dependents(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("n1"), replicaset("web", 2, {"app": "web"})])
    v1, apps = client.CoreV1Api(k8s), client.AppsV1Api(k8s)
    wait_for(lambda: len(v1.list_namespaced_pod("default").items) == 2, what="two pods")
    # a finalizer on one pod holds the owner, however soon the garbage collector deletes the other on a loaded machine
    held_pod = v1.list_namespaced_pod("default").items[0].metadata.name
    v1.patch_namespaced_pod(held_pod, "default", {"metadata": {"finalizers": ["example.com/hold"]}})
    apps.delete_namespaced_replica_set("web", "default", propagation_policy="Foreground")
    held = apps.read_namespaced_replica_set("web", "default")
    assert held.metadata.deletion_timestamp is not None and "foregroundDeletion" in held.metadata.finalizers
    wait_for(lambda: v1.read_namespaced_pod(held_pod, "default").metadata.deletion_timestamp is not None,
             what="the held pod deleting")
    assert apps.read_namespaced_replica_set("web", "default").metadata.deletion_timestamp, "the owner waits"
    v1.patch_namespaced_pod(held_pod, "default", {"metadata": {"finalizers": None}})
    wait_for(lambda: _gone(apps.read_namespaced_replica_set, "web", "default"), what="owner gone after its pods")
    assert not v1.list_namespaced_pod("default").items


def test_snapshot_owner_references_are_linked_by_name(sim: Simulator, k8s: client.ApiClient) -> None:
    rs = replicaset("web", 2, {"app": "web"})  # no uid, as in a hand-written snapshot
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "made-up", "controller": True}
    sim.load_objects([node("n1"), rs, pod("web-a", "n1", labels={"app": "web"}, owner=owner),
                      pod("web-b", "n1", labels={"app": "web"}, owner=owner)])
    time.sleep(0.2)
    pods = client.CoreV1Api(k8s).list_namespaced_pod("default").items
    assert sorted(p.metadata.name for p in pods) == ["web-a", "web-b"], "the ReplicaSet adopted its pods"
    rs_uid = client.AppsV1Api(k8s).read_namespaced_replica_set("web", "default").metadata.uid
    assert all(p.metadata.owner_references[0].uid == rs_uid for p in pods)


def test_an_ec2_nodes_life_without_nodeflow(sim_ec2: Simulator, moto_endpoint: str) -> None:
    """Boot, register, CCM init, Ready, a pod runs; the instance ends: the CCM deletes the Node (nothing holds
    it: no finalizer without nodeflow), its Lease goes with it (ownerReference) and its pod with a node-gone
    ledger entry."""
    api = sim_ec2.api_client()
    v1, coord = client.CoreV1Api(api), client.CoordinationV1Api(api)
    ec2 = boto3.client("ec2", endpoint_url=moto_endpoint, region_name="us-east-1")
    doc = nodeadm(sim_ec2.base_url, {"team": "ml"}, [])
    iid = ec2.run_instances(ImageId=DEFAULT_AMI, InstanceType="m5.large", MinCount=1, MaxCount=1,
                            UserData=doc)["Instances"][0]["InstanceId"]

    def ready_node() -> client.V1Node | None:
        nodes = [n for n in v1.list_node().items if (n.spec.provider_id or "").endswith("/" + iid)]
        ok = nodes and not nodes[0].spec.taints and any(
            c.type == "Ready" and c.status == "True" for c in nodes[0].status.conditions or [])
        return nodes[0] if ok else None

    name = wait_for(ready_node, timeout=20, what="node Ready without the uninitialized taint").metadata.name
    assert coord.read_namespaced_lease(name, "kube-node-lease").spec.holder_identity == name
    sim_ec2.load_objects([pod("web", name)])
    wait_for(lambda: v1.read_namespaced_pod("web", "default").status.phase == "Running", what="pod running")
    ec2.terminate_instances(InstanceIds=[iid])
    wait_for(lambda: _gone(v1.read_node, name), timeout=20, what="node deleted by the CCM")
    assert _gone(coord.read_namespaced_lease, name, "kube-node-lease")
    wait_for(lambda: _gone(v1.read_namespaced_pod, "web", "default"), what="pod of the vanished node removed")
    assert [r["cause"] for r in sim_ec2.ledger() if r["pod"] == "default/web"] == ["node-gone"]
    api.close()
