"""Deployments through the kubernetes client: a ReplicaSet per pod template, scale (spec and the scale
subresource), a rolling update within maxSurge/maxUnavailable, Recreate, status, and the cascade on delete."""

from __future__ import annotations

from typing import Any

from kubernetes import client
from support.sim_objects import node, pod_spec, wait_for

from simulator.deployments import HASH_LABEL, pod_template_hash, scaled_value
from simulator.server import Simulator

WEB = {"app": "web"}


def deployment(name: str, replicas: int, image: str = "app:1", **spec: Any) -> dict[str, Any]:
    template_spec = pod_spec()
    template_spec["containers"][0]["image"] = image
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": WEB},
                     "template": {"metadata": {"labels": WEB}, "spec": template_spec}, **spec}}


def _state(apps: client.AppsV1Api, core: client.CoreV1Api) -> tuple[dict[str, int], int, Any]:
    rs = {r.metadata.name: r.spec.replicas for r in apps.list_namespaced_replica_set("default").items}
    pods = [p for p in core.list_namespaced_pod("default").items if not p.metadata.deletion_timestamp]
    status = apps.read_namespaced_deployment_status("web", "default").status
    return rs, len(pods), status or client.V1DeploymentStatus()


def _status_counts(status: Any) -> tuple[Any, Any, Any]:
    return status.replicas, status.updated_replicas, status.observed_generation


def test_a_deployment_makes_a_replicaset_and_its_pods_and_scales(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("n1", cpu="32", memory="64Gi")])
    apps, core = client.AppsV1Api(k8s), client.CoreV1Api(k8s)
    dep = deployment("web", 3)
    apps.create_namespaced_deployment("default", dep)
    h = pod_template_hash(dep["spec"]["template"])
    wait_for(lambda: _state(apps, core)[2].ready_replicas == 3, what="3 ready")
    rs = apps.read_namespaced_replica_set(f"web-{h}", "default")
    assert rs.metadata.owner_references[0].kind == "Deployment" and rs.spec.selector.match_labels[HASH_LABEL] == h
    assert rs.status.ready_replicas == 3 and rs.metadata.annotations["deployment.kubernetes.io/revision"] == "1"
    pods = core.list_namespaced_pod("default", label_selector=f"{HASH_LABEL}={h}").items
    assert len(pods) == 3 and all(p.metadata.name.startswith(f"web-{h}-") for p in pods)
    apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 5}})
    wait_for(lambda: _state(apps, core)[2].available_replicas == 5, what="5 available")
    assert apps.read_namespaced_deployment_scale("web", "default").status.selector == "app=web"
    apps.patch_namespaced_deployment("web", "default", {"spec": {"replicas": 2}})
    wait_for(lambda: _state(apps, core)[:2] == ({f"web-{h}": 2}, 2), what="scaled down to 2")
    # The controller writes observedGeneration when it scales the ReplicaSet and the counts on its next sync, after
    # the ReplicaSet's pods are gone (as kube-controller-manager does): wait for the status, do not race it.
    wait_for(lambda: _status_counts(_state(apps, core)[2]) == (2, 2, 3), what="status says 2 of generation 3")
    apps.delete_namespaced_deployment("web", "default")
    wait_for(lambda: not apps.list_namespaced_replica_set("default").items, what="its ReplicaSet gone")


def test_a_rolling_update_stays_within_surge_and_unavailability(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("n1", cpu="32", memory="64Gi")])
    apps, core = client.AppsV1Api(k8s), client.CoreV1Api(k8s)
    apps.create_namespaced_deployment("default", deployment("web", 4, strategy={
        "type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}))
    wait_for(lambda: _state(apps, core)[2].ready_replicas == 4, what="4 ready")
    apps.patch_namespaced_deployment("web", "default", {"spec": {"template": {"spec": {"containers": [
        {"name": "app", "image": "app:2"}]}}}})
    most = 0

    def rolled() -> bool:
        nonlocal most
        rs, pods, status = _state(apps, core)
        most = max(most, sum(rs.values()))
        assert (status.available_replicas or 0) >= 4 or status.observed_generation < 2, "maxUnavailable 0"
        return len(rs) == 2 and sorted(rs.values()) == [0, 4] and status.updated_replicas == 4 \
            and status.ready_replicas == 4 and pods == 4

    wait_for(rolled, timeout=20, interval=0.01, what="rolled out")
    assert most <= 5, "maxSurge 1"
    images = {p.spec.containers[0].image for p in core.list_namespaced_pod("default").items
              if not p.metadata.deletion_timestamp}
    assert images == {"app:2"}


def test_recreate_replaces_every_pod_at_once(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("n1", cpu="32", memory="64Gi")])
    apps, core = client.AppsV1Api(k8s), client.CoreV1Api(k8s)
    apps.create_namespaced_deployment("default", deployment("web", 2, strategy={"type": "Recreate"}))
    wait_for(lambda: _state(apps, core)[2].ready_replicas == 2, what="2 ready")
    apps.patch_namespaced_deployment("web", "default", {"spec": {"template": {"metadata": {"labels": {
        "app": "web", "v": "2"}}}}})
    wait_for(lambda: _state(apps, core)[2].updated_replicas == 2 and _state(apps, core)[2].ready_replicas == 2,
             timeout=20, what="recreated")


def test_int_or_percent() -> None:
    assert scaled_value("25%", 10, round_up=True) == 3 and scaled_value("25%", 10, round_up=False) == 2
    assert scaled_value(1, 10, round_up=True) == 1
