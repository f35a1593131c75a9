"""The Eviction API and PDB status, then what happens to evicted pods: controllers recreate them and the
scheduler places them by requests, selectors, affinity, taints and cordon."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client import ApiException
from support.sim_objects import daemonset, node, pdb, pod, replicaset, wait_for

from simulator.server import Simulator
from simulator.world import MULTI_PDB_MESSAGE, PDB_MESSAGE

WEB = {"app": "web"}


def _evict(v1: client.CoreV1Api, name: str, namespace: str = "default") -> None:
    v1.create_namespaced_pod_eviction(name, namespace, client.V1Eviction(
        metadata=client.V1ObjectMeta(name=name, namespace=namespace)))


def _running(v1: client.CoreV1Api, selector: str = "app=web", namespace: str = "default") -> list:
    return [p for p in v1.list_namespaced_pod(namespace, label_selector=selector).items
            if p.status.phase == "Running" and p.metadata.deletion_timestamp is None]


def test_eviction_codes_and_pdb_status(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("n1"), node("n2"), replicaset("web", 3, WEB, nodeSelector={"kubernetes.io/hostname": "n1"}),
                      pdb("web", WEB, maxUnavailable=1), pod("lonely", "n1", labels={"app": "solo"})])
    v1, policy = client.CoreV1Api(k8s), client.PolicyV1Api(k8s)
    pods = wait_for(lambda: len(_running(v1)) == 3 and _running(v1), what="3 web pods running")
    # as in a drain: replacements cannot start until the taint goes, so the budget stays spent
    v1.patch_node("n1", {"spec": {"taints": [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]}})
    status = policy.read_namespaced_pod_disruption_budget("web", "default").status
    assert (status.current_healthy, status.desired_healthy, status.expected_pods, status.disruptions_allowed) == (
        3, 2, 3, 1)
    _evict(v1, pods[0].metadata.name)
    with pytest.raises(ApiException) as exc:
        _evict(v1, pods[1].metadata.name)
    body = json.loads(exc.value.body)
    assert exc.value.status == 429 and body["message"] == PDB_MESSAGE and body["reason"] == "TooManyRequests"
    assert body["details"]["causes"][0]["reason"] == "DisruptionBudget"
    _evict(v1, "lonely")  # no PDB: allowed
    with pytest.raises(ApiException) as gone:
        _evict(v1, "never-existed")
    assert gone.value.status == 404
    v1.patch_node("n1", {"spec": {"taints": []}})
    wait_for(lambda: len(_running(v1)) == 3, what="the evicted pod replaced")
    status = policy.read_namespaced_pod_disruption_budget("web", "default").status
    assert status.disruptions_allowed == 1
    stats = sim.stats()
    assert stats["evictions"] == {"201": 2, "429": 1, "404": 1} and stats["pdbViolationsTotal"] == 0


def test_eviction_with_two_pdbs_is_a_500(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("n1"), pod("p", "n1", labels={"app": "web", "tier": "a"}),
                      pdb("one", WEB, maxUnavailable=1), pdb("two", {"tier": "a"}, maxUnavailable=1)])
    with pytest.raises(ApiException) as exc:
        _evict(client.CoreV1Api(k8s), "p")
    assert exc.value.status == 500 and json.loads(exc.value.body)["message"] == MULTI_PDB_MESSAGE


def test_min_available_percent_and_unhealthy_pods(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("n1"), node("bad", ready=False), replicaset("web", 4, WEB, nodeSelector={
        "kubernetes.io/hostname": "n1"}), pdb("web", WEB, minAvailable="50%"),
        pod("stuck", "bad", labels=WEB)])
    v1, policy = client.CoreV1Api(k8s), client.PolicyV1Api(k8s)
    wait_for(lambda: len(_running(v1)) == 4, what="4 running")
    status = policy.read_namespaced_pod_disruption_budget("web", "default").status
    # expected = 4 replicas + 1 loose pod; desired = ceil(50% of 5) = 3; healthy = 4 (stuck is not running)
    assert (status.expected_pods, status.desired_healthy, status.current_healthy, status.disruptions_allowed) == (
        5, 3, 4, 1)
    _evict(v1, "stuck")  # a pod that never started is always evictable


def test_evicted_pods_are_recreated_and_avoid_the_disrupted_node(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("n1"), node("n2"), replicaset("web", 2, WEB, nodeSelector={"kubernetes.io/hostname": "n1"})])
    v1 = client.CoreV1Api(k8s)
    wait_for(lambda: len(_running(v1)) == 2, what="2 running on n1")
    v1.patch_node("n1", {"spec": {"taints": [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]}})
    for p in _running(v1):
        _evict(v1, p.metadata.name)
    def unschedulable() -> list:
        return [p for p in v1.list_namespaced_pod("default").items
                if p.metadata.deletion_timestamp is None and p.status.phase == "Pending"
                and any(c.type == "PodScheduled" and c.status == "False" for c in p.status.conditions or [])]

    replacements = wait_for(lambda: len(unschedulable()) == 2 and unschedulable(),
                            what="replacements pending: only n1 matches and it is tainted")
    assert all(p.spec.node_name is None for p in replacements)
    assert sim.stats()["podsPending"] == 2
    v1.patch_node("n1", {"spec": {"taints": None}})
    wait_for(lambda: len(_running(v1)) == 2, what="scheduled back once the taint is gone")


def test_scheduler_filters_requests_affinity_tolerations_and_cordon(sim: Simulator, k8s: client.ApiClient) -> None:
    gpu_taint = [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]
    sim.load_objects([node("small", cpu="1", memory="1Gi", labels={"zone": "a"}),
                      node("big", cpu="8", memory="32Gi", labels={"zone": "b"}),
                      node("gpu", cpu="8", memory="32Gi", labels={"zone": "a"}, taints=gpu_taint),
                      node("cordoned", cpu="64", memory="256Gi")])
    v1 = client.CoreV1Api(k8s)
    v1.patch_node("cordoned", {"spec": {"unschedulable": True}})
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}
    v1.create_namespaced_pod("default", pod("heavy", cpu="4", memory="8Gi"))
    v1.create_namespaced_pod("default", pod("zone-a", cpu="2", affinity=affinity))
    v1.create_namespaced_pod("default", pod("tolerant", cpu="2", affinity=affinity, tolerations=[
        {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]))
    v1.create_namespaced_pod("default", pod("huge", cpu="100"))

    def placed() -> dict[str, str | None]:
        return {p.metadata.name: p.spec.node_name for p in v1.list_namespaced_pod("default").items}

    wait_for(lambda: placed()["tolerant"] is not None and placed()["heavy"] is not None, what="pods scheduled")
    got = placed()
    assert got["heavy"] == "big", "only big has 4 free cpus and is not cordoned or tainted"
    assert got["tolerant"] == "gpu"
    assert got["zone-a"] is None, "zone a: small lacks cpu, gpu is tainted"
    assert got["huge"] is None
    assert wait_for(lambda: v1.read_namespaced_pod("heavy", "default").status.phase == "Running", what="running")


def test_daemonset_pods_follow_nodes(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("n1"), daemonset("agent", {"app": "agent"})])
    v1 = client.CoreV1Api(k8s)

    def agents() -> dict[str, str]:
        return {p.spec.node_name: p.metadata.name for p in
                v1.list_namespaced_pod("kube-system", label_selector="app=agent").items
                if p.metadata.deletion_timestamp is None}

    wait_for(lambda: set(agents()) == {"n1"}, what="an agent on n1")
    v1.create_node(node("n2"))
    v1.patch_node("n2", {"spec": {"unschedulable": True}})
    wait_for(lambda: set(agents()) == {"n1", "n2"}, what="an agent on the new (cordoned) node too")
    _evict(v1, agents()["n1"], "kube-system")
    wait_for(lambda: set(agents()) == {"n1", "n2"}, what="the evicted daemon pod comes back")
    v1.delete_node("n2")
    wait_for(lambda: set(agents()) == {"n1"}, what="daemon pod gone with its node")


def test_statefulset_recreates_the_same_name(sim: Simulator, k8s: client.ApiClient) -> None:
    sts = replicaset("db", 2, {"app": "db"})
    sts["kind"] = "StatefulSet"
    sim.load_objects([node("n1"), sts])
    v1 = client.CoreV1Api(k8s)
    wait_for(lambda: len(_running(v1, "app=db")) == 2, what="db-0 and db-1")
    assert sorted(p.metadata.name for p in _running(v1, "app=db")) == ["db-0", "db-1"]
    old_uid = v1.read_namespaced_pod("db-0", "default").metadata.uid
    _evict(v1, "db-0")
    wait_for(lambda: any(p.metadata.name == "db-0" and p.metadata.uid != old_uid for p in _running(v1, "app=db")),
             what="db-0 recreated after the old one is gone")
