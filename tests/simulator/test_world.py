"""World behaviours beyond the API verbs: binding, node readiness hooks, volume detach, namespace deletion."""

from __future__ import annotations

import json
import time

import pytest
from kubernetes import client
from kubernetes.client import ApiException
from support.sim_objects import node, pdb, pod, replicaset, wait_for

from simulator.server import Simulator

WEB = {"app": "web"}


def test_binding_assigns_a_pending_pod_once(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("n1"), pod("p", None, schedulerName="custom")])
    v1 = client.CoreV1Api(k8s)
    target = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
              "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}}
    # _preload_content=False: like the real API server we answer a Status, which V1Binding cannot hold
    v1.create_namespaced_pod_binding("p", "default", target, _preload_content=False)
    assert v1.read_namespaced_pod("p", "default").spec.node_name == "n1"
    wait_for(lambda: v1.read_namespaced_pod("p", "default").status.phase == "Running", what="kubelet starts it")
    with pytest.raises(ApiException) as exc:
        v1.create_namespaced_pod_binding("p", "default", target, _preload_content=False)
    assert exc.value.status == 409 and "already assigned" in json.loads(exc.value.body)["message"]


def test_node_not_ready_makes_its_pods_unhealthy_for_pdbs(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("n1"), node("n2"), replicaset("web", 2, WEB, nodeSelector={"kubernetes.io/hostname": "n1"}),
                      pdb("web", WEB, minAvailable=1)])
    policy = client.PolicyV1Api(k8s)
    wait_for(lambda: policy.read_namespaced_pod_disruption_budget("web", "default").status.current_healthy == 2,
             what="two healthy")
    sim.world.set_node_ready("n1", False)
    status = wait_for(lambda: (s := policy.read_namespaced_pod_disruption_budget("web", "default").status)
                      .current_healthy == 0 and s, what="pods on a NotReady node are not healthy")
    assert status.disruptions_allowed == 0
    assert sim.stats()["nodes"] == {"Ready": 1, "NotReady": 1, "Deleting": 0}
    sim.world.set_node_ready("n1", True)
    wait_for(lambda: policy.read_namespaced_pod_disruption_budget("web", "default").status.current_healthy == 2,
             what="healthy again")


def test_volume_attachment_detaches_once_the_node_is_empty(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("n1"), pod("db", "n1", grace=1)])
    storage, v1 = client.StorageV1Api(k8s), client.CoreV1Api(k8s)
    storage.create_volume_attachment({"metadata": {"name": "va1"}, "spec": {
        "attacher": "ebs.csi.aws.com", "nodeName": "n1", "source": {"persistentVolumeName": "pv1"}}})
    time.sleep(0.1)
    assert [v.metadata.name for v in storage.list_volume_attachment().items] == ["va1"], "held while a pod runs"
    v1.delete_namespaced_pod("db", "default")
    wait_for(lambda: not storage.list_volume_attachment().items, what="detached after the pod is gone")


def test_namespace_deletion_removes_its_objects(sim: Simulator, k8s: client.ApiClient) -> None:
    v1 = client.CoreV1Api(k8s)
    v1.create_namespace({"metadata": {"name": "team"}})
    sim.load_objects([node("n1"), pod("a", "n1", namespace="team"), pdb("p", WEB, namespace="team")])
    v1.delete_namespace("team")
    assert not v1.list_namespaced_pod("team").items
    assert not client.PolicyV1Api(k8s).list_namespaced_pod_disruption_budget("team").items


def test_delete_collection_with_a_selector(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("n1"), pod("a", "n1", labels=WEB, grace=0), pod("b", "n1", labels=WEB, grace=0),
                      pod("c", "n1", labels={"app": "db"}, grace=0)])
    v1 = client.CoreV1Api(k8s)
    v1.delete_collection_namespaced_pod("default", label_selector="app=web")
    assert [p.metadata.name for p in v1.list_namespaced_pod("default").items] == ["c"]
