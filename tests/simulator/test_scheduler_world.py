"""The emulator's kube-scheduler through the running API server (the real kubernetes client over HTTP): what a
cluster shows for a pod kube-scheduler refuses, WaitForFirstConsumer binding, and preferred node affinity."""

from __future__ import annotations

import time

from kubernetes import client
from support.sim_objects import node, pod, wait_for

from simulator.scheduler_timing import SchedulerTiming
from simulator.server import Simulator

ZONE = "topology.kubernetes.io/zone"
PORT_80 = [{"name": "app", "image": "app:1", "resources": {"requests": {"cpu": "100m"}},
            "ports": [{"containerPort": 80, "hostPort": 80}]}]


def _scheduled(k8s: client.ApiClient, name: str) -> client.V1PodCondition | None:
    got = client.CoreV1Api(k8s).read_namespaced_pod(name, "default")
    return next((c for c in got.status.conditions or () if c.type == "PodScheduled"), None)


def test_a_host_port_conflict_leaves_the_pod_pending_with_kube_schedulers_message(sim: Simulator,
                                                                                   k8s: client.ApiClient) -> None:
    sim.load_objects([node("a"), pod("holder", "a", containers=PORT_80), node("b", taints=[
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])])
    sim.load_objects([pod("second", containers=PORT_80)])
    cond = wait_for(lambda: _scheduled(k8s, "second"), what="a PodScheduled condition on the second pod")
    expected = ("0/2 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, "
                "1 node(s) had untolerated taint {dedicated: gpu}. preemption: 0/2 nodes are available: "
                "1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling..")
    assert (cond.status, cond.reason, cond.message) == ("False", "Unschedulable", expected)
    got = client.CoreV1Api(k8s).read_namespaced_pod("second", "default")
    assert got.spec.node_name is None and got.status.phase == "Pending"
    events = [e for e in client.CoreV1Api(k8s).list_namespaced_event("default").items
              if e.involved_object.name == "second"]
    assert [(e.type, e.reason, e.message) for e in events] == [("Warning", "FailedScheduling", expected)]
    # once the holder goes, the port is free and the pod binds (no second event for the same message meanwhile)
    client.CoreV1Api(k8s).delete_namespaced_pod("holder", "default", grace_period_seconds=0)
    wait_for(lambda: client.CoreV1Api(k8s).read_namespaced_pod("second", "default").spec.node_name == "a",
             what="the second pod bound to a")


def test_a_wait_for_first_consumer_claim_is_provisioned_in_an_allowed_zone_and_bound(sim: Simulator,
                                                                                     k8s: client.ApiClient) -> None:
    storage = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "zonal"},
               "provisioner": "ebs.csi.aws.com", "volumeBindingMode": "WaitForFirstConsumer",
               "allowedTopologies": [{"matchLabelExpressions": [{"key": ZONE, "values": ["us-east-1b"]}]}]}
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default"},
             "spec": {"storageClassName": "zonal", "accessModes": ["ReadWriteOnce"],
                      "resources": {"requests": {"storage": "5Gi"}}}}
    sim.load_objects([node("a", labels={ZONE: "us-east-1a"}), node("b", labels={ZONE: "us-east-1b"}), storage, claim,
                      pod("db", volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}])])
    core = client.CoreV1Api(k8s)
    wait_for(lambda: core.read_namespaced_pod("db", "default").spec.node_name == "b", what="db bound to b")
    pvc = core.read_namespaced_persistent_volume_claim("data", "default")
    assert pvc.status.phase == "Bound" and pvc.metadata.annotations["volume.kubernetes.io/selected-node"] == "b"
    pv = core.read_persistent_volume(pvc.spec.volume_name)
    assert pv.spec.claim_ref.name == "data" and pv.spec.storage_class_name == "zonal"
    term = pv.spec.node_affinity.required.node_selector_terms[0].match_expressions[0]
    assert (term.key, term.values) == (ZONE, ["us-east-1b"])


def test_preferred_node_affinity_wins_over_the_emptier_node(sim: Simulator, k8s: client.ApiClient) -> None:
    prefer = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 50, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}}]}}
    sim.load_objects([node("empty"), node("busy", labels={"disk": "ssd"}), pod("filler", "busy", cpu="2")])
    sim.load_objects([pod("wants-ssd", affinity=prefer), pod("plain")])
    core = client.CoreV1Api(k8s)
    wait_for(lambda: all(core.read_namespaced_pod(n, "default").spec.node_name for n in ("wants-ssd", "plain")),
             what="both pods bound")
    assert core.read_namespaced_pod("wants-ssd", "default").spec.node_name == "busy"
    assert core.read_namespaced_pod("plain", "default").spec.node_name == "empty"


def test_a_gated_pod_waits_with_scheduling_gated_until_its_gates_are_removed(sim: Simulator,
                                                                            k8s: client.ApiClient) -> None:
    sim.load_objects([node("a"), pod("gated", schedulingGates=[{"name": "example.com/quota"}])])
    cond = wait_for(lambda: _scheduled(k8s, "gated"), what="a PodScheduled condition on the gated pod")
    assert (cond.status, cond.reason, cond.message) == (
        "False", "SchedulingGated", "Scheduling is blocked due to non-empty scheduling gates")
    core = client.CoreV1Api(k8s)
    assert core.read_namespaced_pod("gated", "default").spec.node_name is None
    core.patch_namespaced_pod("gated", "default", {"spec": {"schedulingGates": None}})
    wait_for(lambda: core.read_namespaced_pod("gated", "default").spec.node_name == "a",
             what="the pod bound once ungated")


def test_preferred_pod_anti_affinity_keeps_replicas_apart_when_the_emptier_node_already_has_one(
        sim: Simulator, k8s: client.ApiClient) -> None:
    term = {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "web"}}}
    apart = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": term}]}}
    # `empty` is emptier but holds a web replica; `busy` holds none: the anti-affinity score wins over allocation
    sim.load_objects([node("empty"), node("busy"), pod("filler", "busy", cpu="2"),
                      pod("web-0", "empty", labels={"app": "web"})])
    sim.load_objects([pod("web-1", labels={"app": "web"}, affinity=apart)])
    core = client.CoreV1Api(k8s)
    wait_for(lambda: core.read_namespaced_pod("web-1", "default").spec.node_name, what="web-1 bound")
    assert core.read_namespaced_pod("web-1", "default").spec.node_name == "busy"


def test_the_slow_scheduler_leaves_a_pod_pending_until_its_retry_and_the_ledger_counts_the_wait() -> None:
    """The real control plane's trial (a slow kube-scheduler) through the running server: a node that fits arrives
    at once, but the pod that found none is retried only 100 simulated s (1 s at time_scale 0.01) after its attempt."""
    with Simulator(time_scale=0.01, scheduler_timing=SchedulerTiming.slow(100.0)) as sim:
        api = sim.api_client()
        core = client.CoreV1Api(api)
        sim.load_objects([node("small", cpu="1"), pod("web", cpu="2")])
        cond = wait_for(lambda: _scheduled(api, "web"), what="web refused")
        assert cond.reason == "Unschedulable"
        sim.load_objects([node("big", cpu="8")])
        time.sleep(0.2)
        assert core.read_namespaced_pod("web", "default").spec.node_name is None
        wait_for(lambda: core.read_namespaced_pod("web", "default").spec.node_name == "big", what="web bound")
        sim.world.ledger.pending_bound_seconds = 0.9
        stats = sim.stats()  # created before its first attempt, bound 1 s + the bind delay after it
        assert stats["podsPendingPastBound"] == 1 and stats["podPendingLongestSeconds"] >= 1.0
        api.close()
