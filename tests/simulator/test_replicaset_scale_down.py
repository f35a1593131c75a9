"""The emulator's ReplicaSet scale-down deletes in kube-controller-manager's order (simulator/replicaset_order.py):
pod-deletion-cost lowest first, as nodeflow's PodDeletionCostManagement relies on."""

from __future__ import annotations

from typing import Any

from kubernetes import client
from support.sim_objects import node, replicaset, wait_for

from simulator.replicaset_order import deletion_cost, scale_down_order
from simulator.server import Simulator

COST = "controller.kubernetes.io/pod-deletion-cost"


def _pod(name: str, node: str = "n1", phase: str = "Running", ready: bool = True, cost: str | None = None,
         created: str = "2026-11-01T00:00:00Z", ready_at: str = "2026-11-01T00:01:00Z") -> dict[str, Any]:
    return {"metadata": {"name": name, "creationTimestamp": created,
                         "annotations": {COST: cost} if cost is not None else {}},
            "spec": {"nodeName": node} if node else {},
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": str(ready),
                                                       "lastTransitionTime": ready_at}]}}


def _names(pods: list[dict[str, Any]]) -> list[str]:
    return [p["metadata"]["name"] for p in scale_down_order(pods)]


def test_kube_order_unassigned_pending_unready_then_cost():
    pods = [_pod("running"), _pod("cheap", cost="-5"), _pod("unready", ready=False),
            _pod("pending", phase="Pending", ready=False), _pod("unassigned", node="", phase="Pending", ready=False)]
    assert _names(pods) == ["unassigned", "pending", "unready", "cheap", "running"]


def test_equal_cost_doubled_up_then_newest_first():
    pods = [_pod("alone", node="n2"), _pod("old", created="2026-10-01T00:00:00Z"),
            _pod("new", created="2026-11-02T00:00:00Z")]
    assert _names(pods) == ["new", "old", "alone"]  # two on n1 go before the one on n2; the newer of them first


def test_an_unparsable_or_out_of_range_cost_is_zero():
    assert [deletion_cost(_pod("p", cost=c)) for c in ("x", str(2**31), "-3", None)] == [0, 0, -3, 0]


def test_the_worlds_scale_down_deletes_the_lowest_cost_first(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("n1", cpu="32", memory="64Gi")])
    apps, core = client.AppsV1Api(k8s), client.CoreV1Api(k8s)
    apps.create_namespaced_replica_set("default", replicaset("web", 4, {"app": "web"}))

    def live() -> list[Any]:
        return [p for p in core.list_namespaced_pod("default").items if not p.metadata.deletion_timestamp]

    wait_for(lambda: sum(1 for p in live() if p.status.phase == "Running") == 4, what="4 running")
    pods = sorted(p.metadata.name for p in live())
    for name, cost in zip(pods, ("10", "-1", "5", "-2"), strict=True):
        core.patch_namespaced_pod(name, "default", {"metadata": {"annotations": {COST: cost}}})
    apps.patch_namespaced_replica_set("web", "default", {"spec": {"replicas": 2}})
    wait_for(lambda: len(live()) == 2, what="scaled down to 2")
    assert sorted(p.metadata.name for p in live()) == [pods[0], pods[2]]
