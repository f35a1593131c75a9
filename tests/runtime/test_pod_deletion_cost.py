"""The pod deletion-cost controller against the emulator (runtime/pod_deletion_cost.py, v1.15 PodDeletionCostManagement,
kubernetes-sigs/karpenter#2894): the node a pass would take first gets the lower cost, a cost someone else set is
left alone, a second tick with nothing changed writes nothing, and with the gate off its own costs are taken off."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client as kclient
from support.sim_objects import node, nodeclaim, nodepool, pod, wait_for

from api import labels as L
from gateways.kube import KubeClient
from planning.disruption.deletion_cost import RANK_BASE
from runtime.cluster_cache import ClusterCache
from runtime.cluster_view import ClusterView
from runtime.pod_deletion_cost import DeletionCostSettings, PodDeletionCostController
from runtime.settings import Deps, Settings
from runtime.worker_loop import _start_deletion_cost
from simulator.server import Simulator

OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "uid-rs-web", "controller": True}


def _managed(name: str, itype: str) -> list[dict[str, Any]]:
    labels = {L.NODEPOOL_LABEL: "default", L.INSTANCE_TYPE_LABEL: itype, L.CAPACITY_TYPE_LABEL: "on-demand",
              L.ZONE_LABEL: "us-east-1a", L.INITIALIZED_LABEL: "true"}
    pid = f"aws:///us-east-1a/i-{name}"
    n = node(name, cpu="16", memory="64Gi", labels=labels)
    n["spec"]["providerID"] = pid
    claim = nodeclaim(name, **{k: v for k, v in labels.items() if k != L.NODEPOOL_LABEL})
    claim["status"] = {"nodeName": name, "providerID": pid, "conditions": [
        {"type": "Initialized", "status": "True", "reason": "Initialized", "message": "",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    return [n, claim]


def _web(name: str, node_name: str, cost: str | None = None) -> dict[str, Any]:
    p = pod(name, node_name, labels={"app": "web"}, owner=OWNER)
    if cost is not None:
        p["metadata"]["annotations"] = {L.POD_DELETION_COST_ANNOTATION: cost}
    return p


def _annotations(core: kclient.CoreV1Api) -> dict[str, dict[str, str]]:
    return {p.metadata.name: {k: v for k, v in (p.metadata.annotations or {}).items() if "deletion-cost" in k}
            for p in core.list_namespaced_pod("default").items}


def _controller(sim: Simulator, api: Any, cleanup: bool = False) -> tuple[PodDeletionCostController, ClusterView]:
    view = ClusterView(ClusterCache(api))
    view.start()
    assert view.cache.wait_synced(10)
    return PodDeletionCostController(KubeClient(api), view, lambda: None, DeletionCostSettings(cleanup=cleanup)), view


def test_the_first_node_to_go_gets_the_lower_cost_and_others_costs_stay(sim: Simulator, k8s: Any) -> None:
    sim.load_objects([nodepool("default"), *_managed("n-big", "m5.4xlarge"), *_managed("n-small", "m5.large"),
                      _web("web-a1", "n-big"), _web("web-a2", "n-big"), _web("web-b1", "n-small"),
                      _web("web-b2", "n-small", cost="100")])
    core = kclient.CoreV1Api(k8s)
    controller, view = _controller(sim, k8s)
    try:
        wait_for(lambda: len(view.read()[2].pods) == 4, what="the cache has the pods")
        first = controller.tick()
        assert first is not None and (first.ranked, first.written, first.foreign) == (2, 3, 1)
        mine = L.MANAGED_DELETION_COST_ANNOTATION
        cost = L.POD_DELETION_COST_ANNOTATION
        # the dearer node goes first in consolidation's order (savings ratio), so its pods are deleted first
        low, high = str(-RANK_BASE), str(1 - RANK_BASE)
        wait_for(lambda: _annotations(core)["web-b1"] == {cost: high, mine: high}, what="costs written")
        assert _annotations(core) == {"web-a1": {cost: low, mine: low}, "web-a2": {cost: low, mine: low},
                                      "web-b1": {cost: high, mine: high}, "web-b2": {cost: "100"}}
        wait_for(lambda: all(mine in p.annotations for p in view.read()[2].pods if p.name != "web-b2"),
                 what="the cache saw the writes")
        second = controller.tick()
        assert second is not None and second.written == 0
    finally:
        view.stop()
    cleaner, view = _controller(sim, k8s, cleanup=True)
    try:
        wait_for(lambda: all(mine in p.annotations for p in view.read()[2].pods if p.name != "web-b2"),
                 what="a fresh cache sees the costs")
        assert cleaner.tick() is not None
        wait_for(lambda: _annotations(core) == {"web-a1": {}, "web-a2": {}, "web-b1": {}, "web-b2": {cost: "100"}},
                 what="nodeflow's own costs taken off, the other kept")
    finally:
        view.stop()


def test_the_gate_is_off_by_default_and_an_unknown_gate_stops_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    import worker

    monkeypatch.delenv("NODEFLOW_FEATURE_GATES", raising=False)
    monkeypatch.delenv("NODEFLOW_POD_DELETION_COST_INTERVAL", raising=False)
    default = worker.parse_args([])
    assert default.feature_gates == {"PodDeletionCostManagement": False} and default.pod_deletion_cost_interval == 60
    monkeypatch.setenv("NODEFLOW_FEATURE_GATES", "PodDeletionCostManagement=true")
    on = worker.parse_args(["--pod-deletion-cost-interval", "30s"])
    assert on.feature_gates["PodDeletionCostManagement"] and on.pod_deletion_cost_interval == 30
    with pytest.raises(SystemExit) as refused:
        worker.parse_args(["--feature-gates", "PodDeletionCost=true"])
    assert refused.value.code == 2


def test_a_worker_without_a_cache_and_the_gate_off_starts_nothing() -> None:
    # the cleanup reads the worker's cache; without one it would LIST every pod to find none of nodeflow's
    assert _start_deletion_cost(Deps(kube_api=None, ec2=None, settings=Settings(cluster_cache=False))) == []
