"""`prepare` reads the Node and NodeClaim from the worker's watch cache when it already shows the deletion
(activities/kube.py `_read_machine`), against the simulator: the same result as from the API server with two GETs
fewer, a stale cached copy still lands every write (resourceVersion), and a cache that does not show a deletion
is not trusted."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from activities.kube import KubeActivities
from api import labels as L
from bench.clusters import node_objects, pod
from contracts.termination import PrepareInput
from gateways.kube import KubeClient
from runtime.cache_reads import CacheReads
from runtime.cluster_cache import ClusterCache
from runtime.cluster_view import ClusterView
from runtime.informer import CacheSettings
from simulator.server import Simulator

FAST = CacheSettings(watch_timeout_seconds=30, connect_timeout_seconds=5, list_timeout_seconds=10,
                     backoff_base_seconds=0.05, backoff_cap_seconds=0.4, min_stream_seconds=0.2)


class CountingKube(KubeClient):
    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.gets: list[str] = []

    def list_node_pods(self, node: str) -> Any:
        self.gets.append(f"Pods/{node}")
        return super().list_node_pods(node)

    def get_node(self, name: str) -> Any:
        self.gets.append(f"Node/{name}")
        return super().get_node(name)

    def get_node_claim(self, name: str) -> Any:
        self.gets.append(f"NodeClaim/{name}")
        return super().get_node_claim(name)


@pytest.fixture
def view(sim: Simulator, k8s: Any) -> Iterator[ClusterView]:
    objs = node_objects("n1", "m5.large")
    for o in objs:
        o["metadata"]["finalizers"] = [L.TERMINATION_FINALIZER]
    sim.load_objects(objs)
    v = ClusterView(ClusterCache(k8s, FAST))
    v.start()
    try:
        assert v.cache.wait_synced(10)
        yield v
    finally:
        v.stop()


def _wait_cached(reads: CacheReads, check: Any) -> None:
    import time

    deadline = time.monotonic() + 10
    while not check(reads) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert check(reads)


def _deleting(reads: CacheReads) -> Any:
    return (reads.get("Node", "n1") or {}).get("metadata", {}).get("deletionTimestamp")


class Stale:
    """A cache whose Node is an older copy than the API server's."""

    def __init__(self, node: Any, reads: CacheReads) -> None:
        self.node, self.reads = node, reads

    def get(self, kind: str, name: str) -> Any:
        return self.node if kind == "Node" else self.reads.get(kind, name)

    def node_pods(self, node: str) -> Any:
        return self.reads.node_pods(node)


class OneClaim:
    """A cache holding one NodeClaim's copy."""

    def __init__(self, claim: Any) -> None:
        self.claim = claim

    def get(self, kind: str, name: str) -> Any:
        return self.claim if kind == "NodeClaim" else None

    def node_pods(self, node: str) -> Any:
        return None


def _prepare(acts: KubeActivities) -> Any:
    return ActivityEnvironment().run(acts.prepare, PrepareInput(node_name="n1", node_claim_name="n1-claim",
                                                                reason="Deleted"))


async def test_a_deleted_node_is_prepared_from_the_cache_with_its_writes_landed(sim: Simulator,
                                                                                view: ClusterView) -> None:
    sim.load_objects([pod("p1", "n1", 0.1, 0.1), pod("p2", "n1", 0.1, 0.1), pod("elsewhere", "n2", 0.1, 0.1)])
    kube = CountingKube(sim.api_client())
    reads = CacheReads(view)
    _wait_cached(reads, lambda r: len(r.node_pods("n1") or ()) == 2)
    kube.delete_node("n1")
    _wait_cached(reads, _deleting)
    res = await _prepare(KubeActivities(kube, cached=reads))
    assert kube.gets == []  # neither the Node, the NodeClaim nor the pods read from the API server
    assert sorted(p.name for p in res.pods) == ["p1", "p2"]
    assert res.node_exists and res.node_claim_exists and res.node_pool == "default" and res.deleting_since
    node, claim = kube.get_node("n1"), kube.get_node_claim("n1-claim")
    assert any(t["key"] == L.DISRUPTED_TAINT_KEY for t in node["spec"]["taints"])
    assert claim["metadata"].get("deletionTimestamp")  # the cascade deleted the claim
    assert claim["metadata"]["annotations"].get(L.TERMINATION_WORKFLOW_ANNOTATION)


async def test_a_stale_cached_node_still_gets_its_taint(sim: Simulator, view: ClusterView) -> None:
    kube = CountingKube(sim.api_client())
    reads = CacheReads(view)
    kube.delete_node("n1")
    _wait_cached(reads, _deleting)
    stale = copy.deepcopy(reads.get("Node", "n1"))
    kube.update("Node", "n1", lambda n: {"metadata": {"labels": {"moved": "on"}}})  # the cache's copy is behind now
    res = await _prepare(KubeActivities(kube, cached=Stale(stale, reads)))
    node = kube.get_node("n1")
    assert res.node_exists and node["metadata"]["labels"]["moved"] == "on"
    assert any(t["key"] == L.DISRUPTED_TAINT_KEY for t in node["spec"]["taints"])  # the 409, a fresh read, the patch


async def test_a_cache_that_shows_no_deletion_is_not_trusted(sim: Simulator, view: ClusterView) -> None:
    kube = CountingKube(sim.api_client())
    res = await _prepare(KubeActivities(kube, cached=CacheReads(view)))
    assert kube.gets[:3] == ["Node/n1", "NodeClaim/n1-claim", "Pods/n1"]
    assert res.node_exists and res.deleting_since is None


def test_the_evicted_reason_comes_from_a_cached_deleting_claim_and_otherwise_from_the_api(sim: Simulator,
                                                                                         view: ClusterView) -> None:
    kube = CountingKube(sim.api_client())
    reads = CacheReads(view)
    claim = copy.deepcopy(reads.get("NodeClaim", "n1-claim"))
    assert claim is not None
    claim["status"]["conditions"].append({"type": "DisruptionReason", "status": "True", "reason": "Drifted"})
    acts = KubeActivities(kube, cached=OneClaim(claim))
    assert acts._eviction_reason("n1", "n1-claim") == "Forceful Termination"  # not deleting: the API's copy
    assert kube.gets == ["NodeClaim/n1-claim"]
    claim["metadata"]["deletionTimestamp"] = "2026-11-29T00:00:00Z"
    assert acts._eviction_reason("n1", "n1-claim") == "Drifted" and kube.gets == ["NodeClaim/n1-claim"]
