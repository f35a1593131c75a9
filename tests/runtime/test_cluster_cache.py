"""The cluster cache against the simulator over HTTP: it syncs to what a LIST returns, follows changes,
re-lists only when the server says 410, resumes a dropped or ended stream from its resourceVersion, and
says why it is not healthy."""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client as kube
from kubernetes.client.rest import ApiException
from support.churn import random_change
from support.sim_objects import node, nodepool, pod

from gateways.kube import KubeClient
from runtime.cluster_cache import KINDS, ClusterCache, Reason
from runtime.cluster_trim import trim
from runtime.informer import CacheSettings, Informer, KindSpec
from simulator.generate import generate_cluster
from simulator.server import Simulator
from telemetry.metrics import REGISTRY

FAST = CacheSettings(watch_timeout_seconds=30, connect_timeout_seconds=5, list_timeout_seconds=10,
                     backoff_base_seconds=0.05, backoff_cap_seconds=0.4, min_stream_seconds=0.2)
Key = tuple[str, str, str]


def _by_key(objs: list[dict[str, Any]]) -> dict[Key, dict[str, Any]]:
    return {(o["kind"], o["metadata"].get("namespace") or "", o["metadata"]["name"]): o for o in objs}


def _fresh(api: Any, trimmed: bool = True) -> dict[Key, dict[str, Any]]:
    """What a planner pass reads today: a LIST of every kind through the gateway."""
    objs = KubeClient(api).cluster_objects()
    return _by_key([trim(o["kind"], o) for o in objs] if trimmed else objs)


def _converge(cache: ClusterCache, api: Any, timeout: float = 15.0) -> dict[Key, dict[str, Any]]:
    """Poll until the cache equals a fresh LIST (the simulator's controllers may still be moving)."""
    deadline = time.monotonic() + timeout
    while True:
        want, got = _fresh(api), _by_key(cache.objects())
        if want == got:
            return got
        if time.monotonic() > deadline:
            missing, extra = sorted(want.keys() - got.keys()), sorted(got.keys() - want.keys())
            stale = sorted(k for k in want.keys() & got.keys() if want[k] != got[k])
            raise AssertionError(f"cache did not converge: missing {missing[:5]}, extra {extra[:5]}, "
                                 f"stale {stale[:5]}; health {cache.healthy()}")
        time.sleep(0.05)


def _until(fn: Callable[[], Any], what: str, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := fn()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)
    return value


def _end_streams(sim: Simulator, plural: str) -> None:
    """The server ends every open watch of `plural` (as an API server restart or a watch timeout does)."""
    for w in list(sim.store.watchers[plural]):
        w.loop.call_soon_threadsafe(w.queue.put_nowait, None)


def _metric(name: str, kind: str) -> float:
    return REGISTRY.get_sample_value(name, {"kind": kind}) or 0.0


@pytest.fixture
def cache(sim: Simulator, k8s: Any) -> Iterator[ClusterCache]:
    c = ClusterCache(k8s, FAST)
    try:
        yield c
    finally:
        c.stop()


NODE_CLASS = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"},
              "spec": {"role": "NodeRole", "amiSelectorTerms": [{"alias": "al2023@latest"}],
                       "subnetSelectorTerms": [{"tags": {"team": "a"}}],
                       "securityGroupSelectorTerms": [{"tags": {"team": "a"}}]}}


POLICY = {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": "freeze"},
          "spec": {"nodePoolSelector": {}, "calendar": {"exclusions": [{"from": "2026-12-24"}]}}}
OVERLAY = {"apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay", "metadata": {"name": "savings-plan"},
           "spec": {"requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}],
                    "priceAdjustment": "-10%"}}


VOLUMES = [
    {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "gp3"},
     "provisioner": "ebs.csi.aws.com", "volumeBindingMode": "WaitForFirstConsumer"},
    {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-a"},
     "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "gp3",
              "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                  {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a"]}]}]}}}},
    {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default"},
     "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "gp3",
              "resources": {"requests": {"storage": "1Gi"}}}},
    {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "worker-a"},
     "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-worker-a", "allocatable": {"count": 25}}]}},
]


_CHUNK = {"metadata": {"labels": {"app": "headroom"}}, "spec": {"containers": [{"name": "c", "image": "pause"}]}}
# A CapacityBuffer and the shapes a buffer names (docs/semantics.md §20): the cache watches each kind
BUFFER_KINDS = [
    {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "chunk", "namespace": "default"},
     "template": _CHUNK},
    {"apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityBuffer",
     "metadata": {"name": "headroom", "namespace": "default"}, "spec": {"podTemplateRef": {"name": "chunk"},
                                                                         "replicas": 1}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
     "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "headroom"}}, "template": _CHUNK}},
    {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "default"},
     "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "headroom"}}, "template": _CHUNK}},
]


def _seed(sim: Simulator) -> None:
    sim.load_objects([*generate_cluster(6, 6, seed=3), NODE_CLASS, POLICY, OVERLAY, *VOLUMES, *BUFFER_KINDS])


def test_not_healthy_until_synced(sim: Simulator, cache: ClusterCache) -> None:
    assert not cache.synced and cache.healthy().reason is Reason.NOT_SYNCED
    sim.inject_faults(rate=1.0, codes=(500,), methods=("GET",), resources=("pods",))
    cache.start()
    assert not cache.wait_synced(0.5)
    health = cache.healthy()
    assert (health.reason, health.kind) == (Reason.NOT_SYNCED, "Pod") and "500" in health.detail
    assert cache.informers["Pod"].counters.errors >= 2  # retried with backoff, each failure counted
    sim.inject_faults(rate=0.0)
    assert cache.wait_synced(5) and cache.healthy()
    cache.stop()
    assert cache.healthy().reason is Reason.STOPPED


def test_initial_sync_equals_a_fresh_list(sim: Simulator, k8s: Any, cache: ClusterCache) -> None:
    _seed(sim)
    before = _metric("nodeflow_cluster_cache_lists_total", "Pod")
    cache.start()
    assert cache.wait_synced(10) and cache.healthy()
    got = cache.objects()
    assert _by_key(got) == _fresh(k8s)
    assert [o["kind"] for o in got] == sorted((o["kind"] for o in got), key=KINDS.index)
    assert {o["kind"] for o in got} == set(KINDS)
    assert cache.counters().lists == len(KINDS) and cache.counters().relists == 0
    assert _metric("nodeflow_cluster_cache_lists_total", "Pod") == before + 1


def test_a_list_read_in_pages_syncs_to_what_one_list_returns(sim: Simulator, k8s: Any) -> None:
    """Pages of 3 (the default is client-go's 500): every page after the first continues the first's snapshot,
    so the cache holds exactly what one LIST returns, and the Pods came in more requests than pages of one."""
    _seed(sim)
    pods = len(sim.store.objects["pods"])
    assert pods > 6
    before = sim.stats()["byVerb"].get("list", {}).get("requests", 0)
    with ClusterCache(k8s, dataclasses.replace(FAST, list_page_size=3), kinds=("Pod",)) as paged:
        assert paged.wait_synced(10) and paged.healthy()
        lists = sim.stats()["byVerb"]["list"]["requests"] - before
        assert _by_key(paged.objects()) == {k: v for k, v in _fresh(k8s).items() if k[0] == "Pod"}
    assert lists == -(-pods // 3)


def test_untrimmed_cache_holds_exactly_what_list_returns(sim: Simulator, k8s: Any) -> None:
    _seed(sim)
    with ClusterCache(k8s, FAST, transform=None) as raw:
        assert raw.wait_synced(10)
        assert _by_key(raw.objects()) == _fresh(k8s, trimmed=False)


def test_converges_after_a_random_stream_of_changes(sim: Simulator, k8s: Any, cache: ClusterCache) -> None:
    _seed(sim)
    sim.load_objects([nodepool("default")])
    cache.start()
    assert cache.wait_synced(10)
    rng = random.Random(7)
    for i in range(80):
        random_change(rng, k8s, i)
    got = _converge(cache, k8s)
    ours = {kind for kind, _, name in got if name[0] in "npcb" and name[1:].isdigit()}
    assert ours == {"Node", "Pod", "NodeClaim", "PodDisruptionBudget"}  # the stream touched every kind
    counters = cache.counters()
    assert counters.watch_events >= 80 and counters.relists == 0 and counters.lists == len(KINDS)
    assert counters.errors == 0 and cache.healthy()


def _synced_nodes(sim: Simulator, cache: ClusterCache) -> Informer:
    _seed(sim)
    cache.start()
    assert cache.wait_synced(10)
    return cache.informers["Node"]


def test_watch_answered_410_relists_and_sees_what_the_lost_history_held(
        sim: Simulator, k8s: Any, cache: ClusterCache) -> None:
    """While the Node watch is down, a Node is deleted and created and the history compacted: only a
    re-LIST can tell, and the cache must converge through one."""
    nodes = _synced_nodes(sim, cache)
    core = kube.CoreV1Api(k8s)
    gone = "doomed"  # no finalizer: a delete removes it at once
    core.create_node(node(gone))
    _until(lambda: ("Node", "", gone) in _by_key(cache.objects()), "the cache to see the new node")
    sim.inject_faults(rate=1.0, codes=(500,), methods=("GET",), resources=("nodes",))  # the reopen fails
    _end_streams(sim, "nodes")
    _until(lambda: nodes.counters.errors, "the reopened watch to fail")
    assert cache.healthy().reason is Reason.WATCH_BROKEN
    core.delete_node(gone)
    core.create_node(node("late"))
    core.create_namespaced_pod("default", pod("moves-the-version"))
    with sim.store.lock:
        sim.store.compacted_rv = sim.store.rv  # as etcd compaction would: the Node history is gone
    sim.inject_faults(rate=0.0)
    _until(lambda: nodes.counters.relists, "a re-list after 410")
    got = _converge(cache, k8s)
    assert ("Node", "", gone) not in got and ("Node", "", "late") in got
    assert nodes.counters.lists == 2 and cache.healthy()
    assert sum(i.counters.relists for i in cache.informers.values()) == 1  # the other watches never broke


def test_watch_refused_with_http_410_relists_after_backoff(sim: Simulator, k8s: Any, cache: ClusterCache) -> None:
    nodes = _synced_nodes(sim, cache)
    before = _metric("nodeflow_cluster_cache_relists_total", "Node")
    sim.inject_faults(rate=1.0, codes=(410,), methods=("GET",), resources=("nodes",))  # the LIST too
    _end_streams(sim, "nodes")
    _until(lambda: nodes.counters.errors >= 2, "the re-list to fail and be retried")
    health = cache.healthy()
    assert (health.reason, health.kind) == (Reason.RELISTING, "Node")
    kube.CoreV1Api(k8s).create_node(node("during"))
    sim.inject_faults(rate=0.0)
    assert ("Node", "", "during") in _converge(cache, k8s)
    assert nodes.counters.relists == 1 and nodes.counters.lists == 2 and cache.healthy()
    assert _metric("nodeflow_cluster_cache_relists_total", "Node") == before + 1


@pytest.mark.parametrize("how", ["server-ends-stream", "connection-drops"])
def test_interrupted_stream_resumes_from_its_version_without_a_relist(
        sim: Simulator, k8s: Any, cache: ClusterCache, how: str) -> None:
    """A change made while the stream is down arrives by replaying history after our resourceVersion."""
    nodes = _synced_nodes(sim, cache)
    name = nodes.objects()[0]["metadata"]["name"]
    sim.inject_faults(rate=1.0, codes=(500,), methods=("GET",), resources=("nodes",))  # keep it down a while
    if how == "server-ends-stream":
        _end_streams(sim, "nodes")
    else:
        nodes.reconnect()
    _until(lambda: nodes.counters.errors, "the reopened watch to fail")
    kube.CoreV1Api(k8s).patch_node(name, {"metadata": {"labels": {"changed": "while-down"}}})
    sim.inject_faults(rate=0.0)
    got = _converge(cache, k8s)
    assert got[("Node", "", name)]["metadata"]["labels"]["changed"] == "while-down"
    assert nodes.counters.lists == 1 and nodes.counters.relists == 0 and nodes.counters.watches >= 2
    assert cache.healthy()


def test_a_bookmark_moves_the_resume_point_past_compacted_history(
        sim: Simulator, k8s: Any, cache: ClusterCache) -> None:
    """Pods churn while Nodes stay quiet; the Node watch's BOOKMARK (the simulator sends one after 5 quiet
    seconds) carries the newer resourceVersion, so after compaction the Node stream resumes instead of
    answering 410 and forcing a re-LIST of every node."""
    nodes = _synced_nodes(sim, cache)
    kube.CoreV1Api(k8s).create_namespaced_pod("default", pod("moves-the-version"))
    listed_at = nodes.resource_version
    _until(lambda: nodes.counters.bookmarks, "a Node bookmark", timeout=8)
    assert int(nodes.resource_version) > int(listed_at)
    with sim.store.lock:
        sim.store.compacted_rv = sim.store.rv
    _end_streams(sim, "nodes")
    _until(lambda: nodes.counters.watches >= 2, "the Node watch to reopen")
    kube.CoreV1Api(k8s).create_node(node("after"))
    assert ("Node", "", "after") in _converge(cache, k8s)
    assert nodes.counters.relists == 0 and nodes.counters.lists == 1
    assert _metric("nodeflow_cluster_cache_bookmarks_total", "Node") >= 1


def test_stop_ends_every_thread_promptly(sim: Simulator, cache: ClusterCache) -> None:
    _synced_nodes(sim, cache)
    started = time.monotonic()
    cache.stop()
    assert time.monotonic() - started < 2.0
    assert not any(i._thread and i._thread.is_alive() for i in cache.informers.values())
    assert {i.state.value for i in cache.informers.values()} == {"Stopped"}


def test_an_optional_kind_the_server_does_not_serve_is_empty_and_synced() -> None:
    """EC2NodeClass without its CRD installed: a 404 on LIST must not keep the cache unsynced (no pass would
    ever run); the kind is held empty and listed again after a watch timeout."""
    calls: list[dict[str, Any]] = []

    def not_served(**kw: Any) -> Any:
        calls.append(kw)
        raise ApiException(status=404, reason="Not Found")

    inf = Informer(KindSpec("EC2NodeClass", "karpenter.k8s.aws/v1", not_served, optional=True),
                   CacheSettings(watch_timeout_seconds=1, backoff_base_seconds=0.05))
    inf.start()
    try:
        _until(lambda: inf.synced, "the optional kind to count as synced")
        assert inf.objects() == [] and inf.counters.errors == 0
        _until(lambda: len(calls) >= 2, "a second LIST after the watch timeout", timeout=5)
    finally:
        inf.stop()
    required = Informer(KindSpec("Other", "v1", not_served), CacheSettings(backoff_base_seconds=0.05))
    required.start()
    try:
        _until(lambda: required.counters.errors >= 1, "a required kind's 404 to count as an error")
        assert not required.synced
    finally:
        required.stop()


def test_health_of_some_kinds_names_a_kind_the_cache_does_not_hold(sim: Simulator, k8s: Any) -> None:
    with ClusterCache(k8s, FAST, kinds=("Node", "NodeClaim")) as nodes_only:
        assert nodes_only.wait_synced(10)
        assert nodes_only.healthy(("Node", "NodeClaim"))
        health = nodes_only.healthy(("Node", "NodePool"))
        assert health.reason is Reason.NOT_SYNCED and health.kind == "NodePool"
    assert nodes_only.healthy(("Node",)).reason is Reason.STOPPED
