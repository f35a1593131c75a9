"""NodeOverlays through the API (the simulator serving Karpenter's CRD from deploy/crds): the CRD refuses what
Karpenter's refuses, a LIST pass and the worker's watch cache both hand them to planning, and the plan prices by
them."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as kube
from kubernetes.client.rest import ApiException
from support.sim_objects import nodepool

from api.snapshot import Snapshot
from gateways.kube import KubeClient
from planning.cluster import Cluster
from runtime.cluster_cache import ClusterCache
from runtime.cluster_view import ClusterView
from runtime.informer import CacheSettings
from simulator.server import Simulator

FAST = CacheSettings(watch_timeout_seconds=30, connect_timeout_seconds=5, list_timeout_seconds=10,
                     backoff_base_seconds=0.05, backoff_cap_seconds=0.4, min_stream_seconds=0.2)
M5 = [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"]}]


def overlay(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay", "metadata": {"name": name},
            "spec": {"requirements": M5, **spec}}


def create(api: Any, body: dict[str, Any]) -> None:
    kube.CustomObjectsApi(api).create_cluster_custom_object("karpenter.sh", "v1alpha1", "nodeoverlays", body)


@pytest.fixture
def cluster(sim: Simulator, k8s: Any) -> Iterator[Any]:
    sim.load_objects([nodepool("default")])
    yield k8s


def test_the_crd_refuses_what_karpenter_refuses(cluster: Any) -> None:
    for spec, message in (({"price": "1", "priceAdjustment": "+1"}, "cannot set both 'price' and 'priceAdjustment'"),
                          ({"priceAdjustment": "10%"}, "spec.priceAdjustment"),
                          ({"capacity": {"memory": "1Gi"}}, "invalid resource restricted"),
                          ({"weight": 0}, "spec.weight"),
                          ({"requirements": [{"key": "kubernetes.io/hostname", "operator": "Exists"}]},
                           'label "kubernetes.io/hostname" is restricted'),
                          ({"requirements": [{"key": "karpenter.sh/foo", "operator": "Exists"}]},
                           'label domain "karpenter.sh" is restricted')):
        with pytest.raises(ApiException) as err:
            create(cluster, overlay("bad", **spec))
        body = json.loads(err.value.body)
        said = [body["message"], *(c.get("message", "") for c in body["details"]["causes"])]
        assert err.value.status == 422 and any(message in m for m in said), said


def test_a_list_pass_and_the_watch_cache_plan_on_the_overlay_prices(cluster: Any) -> None:
    create(cluster, overlay("savings-plan", priceAdjustment="-50%", weight=10))
    listed = Snapshot.from_objects(KubeClient(cluster).cluster_objects())
    assert [o.name for o in listed.node_overlays] == ["savings-plan"]
    catalog = Cluster.from_snapshot(listed).catalog
    assert catalog.get("m5.large").offering("us-east-1a", "on-demand").price == pytest.approx(0.048)

    view = ClusterView(ClusterCache(cluster, FAST))
    view.start()
    try:
        assert view.cache.wait_synced(10)
        create(cluster, overlay("reserved", price="0.01", weight=20))
        deadline = time.monotonic() + 10
        while len(view.read()[1].node_overlays) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        snapshot = view.read()[1]
        assert sorted(o.name for o in snapshot.node_overlays) == ["reserved", "savings-plan"]
        assert Cluster.from_snapshot(snapshot).catalog.get("m5.large").offering("us-east-1a", "on-demand").price \
            == 0.01  # the heavier overlay wins
    finally:
        view.stop()
