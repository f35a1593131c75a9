"""The deletion watcher against the simulator: finalizers, which deletions start which terminations, cascade."""

from __future__ import annotations

import asyncio
import threading
import uuid
from typing import Any

from kubernetes import client as k8s

from api import labels
from bench.termination_cluster import PodSpec, cluster_objects
from contracts.termination import TerminationInput
from gateways.kube import KubeClient
from runtime.cluster_cache import ClusterCache
from runtime.deletion_watcher import DeletionWatcher, WatcherSettings, _signature, _wakes
from runtime.informer import CacheSettings
from workflows.termination import TerminationWorkflow, workflow_id


def _watcher(sim: Any) -> tuple[DeletionWatcher, list[TerminationInput], Any]:
    started: list[TerminationInput] = []

    async def start(inp: TerminationInput) -> None:
        started.append(inp)

    api = sim.api_client()
    return DeletionWatcher(KubeClient(api), None, WatcherSettings(use_watch=False), start=start), started, api


def _strip_finalizers(objs: list[dict]) -> list[dict]:
    for o in objs:
        o["metadata"].pop("finalizers", None)
    return objs


async def test_adds_finalizers_and_starts_on_node_deletion(sim: Any) -> None:
    sim.load_objects(_strip_finalizers(cluster_objects({"n1": "i-01", "n2": "i-02"}, [PodSpec("web", "n1")])))
    watcher, started, api = _watcher(sim)
    core, custom = k8s.CoreV1Api(api), k8s.CustomObjectsApi(api)
    assert await watcher.reconcile() == 0
    assert labels.TERMINATION_FINALIZER in core.read_node("n1").metadata.finalizers
    claim = custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "n1-claim")
    assert labels.TERMINATION_FINALIZER in claim["metadata"]["finalizers"]
    uid = core.read_node("n1").metadata.uid
    core.delete_node("n1")
    assert await watcher.reconcile() == 1
    assert await watcher.reconcile() == 0  # remembered until the next resync
    inp = started[0]
    assert (inp.node_name, inp.node_uid, inp.node_claim_name, inp.node_pool) == ("n1", uid, "n1-claim", "default")
    assert inp.provider_id == "aws:///us-east-1a/i-01" and inp.requested_by == "watcher"
    api.close()


async def test_claim_deletion_and_unregistered_claim(sim: Any) -> None:
    objs = cluster_objects({"n1": "i-01"}, [])
    orphan = dict(objs[1], metadata=dict(objs[1]["metadata"], name="orphan-claim", uid="claim-uid-1"),
                  status={"providerID": "aws:///us-east-1a/i-09"})  # launched, never registered a Node
    sim.load_objects([*objs, orphan])
    watcher, started, api = _watcher(sim)
    custom = k8s.CustomObjectsApi(api)
    custom.delete_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "n1-claim")
    custom.delete_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "orphan-claim")
    await watcher.reconcile()
    by_claim = {i.node_claim_name: i for i in started}
    assert by_claim["n1-claim"].node_name == "n1"
    assert by_claim["orphan-claim"].node_name == "" and by_claim["orphan-claim"].node_uid == "claim-uid-1"
    api.close()


async def test_nodepool_deletion_deletes_its_claims(sim: Any) -> None:
    sim.load_objects(cluster_objects({"n1": "i-01", "n2": "i-02"}, []))
    watcher, started, api = _watcher(sim)
    custom = k8s.CustomObjectsApi(api)
    await watcher.reconcile()
    custom.delete_cluster_custom_object("karpenter.sh", "v1", "nodepools", "default")
    await watcher.reconcile()  # pool gone since the last pass: its claims are deleted
    claims = custom.list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims")["items"]
    assert all(c["metadata"].get("deletionTimestamp") for c in claims) and len(claims) == 2
    await watcher.reconcile()
    assert sorted(i.node_name for i in started) == ["n1", "n2"]
    api.close()


async def test_a_claim_that_outlives_its_node_joins_the_owning_termination(sim: Any) -> None:
    """One machine, one termination: a fresh watcher (no memory of the Node) that finds the claim still deleting
    after its Node is gone joins the termination named on the claim, instead of starting one keyed by the claim."""
    objs = cluster_objects({"n1": "i-01", "n2": "i-02"}, [])
    for o in objs:
        if o["kind"] == "NodeClaim" and o["metadata"]["name"] == "n1-claim":
            o["metadata"].setdefault("annotations", {})[labels.TERMINATION_WORKFLOW_ANNOTATION] = "terminate-node-uid-1"
    sim.load_objects([o for o in objs if not (o["kind"] == "Node" and o["metadata"]["name"] == "n1")])
    watcher, started, api = _watcher(sim)
    custom = k8s.CustomObjectsApi(api)
    custom.delete_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "n1-claim")
    custom.delete_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "n2-claim")
    await watcher.reconcile()
    by_claim = {i.node_claim_name: i for i in started}
    assert by_claim["n1-claim"].node_uid == "node-uid-1"  # joins terminate-node-uid-1
    n2_uid = k8s.CoreV1Api(api).read_node("n2").metadata.uid
    assert by_claim["n2-claim"].node_uid == n2_uid  # no annotation: keyed by its Node as before
    api.close()


async def test_the_first_termination_to_start_owns_the_claim(sim: Any) -> None:
    """The annotation is first-writer-wins: a second writer learns the owner and does not overwrite it."""
    sim.load_objects(cluster_objects({"n1": "i-01"}, []))
    api = sim.api_client()
    kube = KubeClient(api)
    key = labels.TERMINATION_WORKFLOW_ANNOTATION
    assert kube.annotate_claim("n1-claim", key, "terminate-a")[0] == "terminate-a"
    assert kube.annotate_claim("n1-claim", key, "terminate-b")[0] == "terminate-a"
    claim = k8s.CustomObjectsApi(api).get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "n1-claim")
    assert claim["metadata"]["annotations"][key] == "terminate-a"
    assert kube.annotate_claim("no-such-claim", key, "terminate-c") == (None, None)
    api.close()


def _bare_node(name: str, pool: str) -> dict[str, Any]:
    """A Node labelled for `pool` that no NodeClaim names (joined by hand, or by another provisioner)."""
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {labels.NODEPOOL_LABEL: pool}},
            "spec": {"providerID": f"aws:///us-east-1a/i-{name}"}}


async def test_only_nodes_of_an_existing_pool_or_a_claim_get_the_finalizer(sim: Any) -> None:
    """A Node labelled for a NodePool that does not exist is not ours; no finalizer, no termination."""
    objs = _strip_finalizers(cluster_objects({"n1": "i-01"}, []))
    sim.load_objects([*objs, _bare_node("stray", "ghost"), _bare_node("handmade", "default")])
    watcher, started, api = _watcher(sim)
    core = k8s.CoreV1Api(api)
    await watcher.reconcile()
    assert labels.TERMINATION_FINALIZER in core.read_node("n1").metadata.finalizers  # has a NodeClaim
    assert labels.TERMINATION_FINALIZER in core.read_node("handmade").metadata.finalizers  # its pool exists
    assert labels.TERMINATION_FINALIZER not in (core.read_node("stray").metadata.finalizers or [])
    core.delete_node("stray")
    assert await watcher.reconcile() == 0 and not started
    assert "stray" not in {n.metadata.name for n in core.list_node().items}  # nothing held its deletion
    api.close()


async def test_a_resync_starts_again_only_the_terminations_temporal_does_not_list_running(
        sim: Any, temporal_client: Any) -> None:
    """Two terminations started, one since ended: the resync keeps the running one as started (no start request
    for it) and forgets the ended one, which the next pass starts again (idempotent)."""
    tq = f"resync-{uuid.uuid4()}"  # nobody polls it: the workflows stay Running
    uids = [str(uuid.uuid4()) for _ in range(2)]
    handles = [await temporal_client.start_workflow(
        TerminationWorkflow.run, TerminationInput(node_name=f"n-{u[:6]}", node_uid=u, reason="Deleted"),
        id=workflow_id(u), task_queue=tq) for u in uids]
    await handles[1].terminate("ended")
    watcher = DeletionWatcher(KubeClient(sim.api_client()), temporal_client, WatcherSettings(use_watch=False))
    kept: set[str] = set()
    for _ in range(50):  # visibility lists a new workflow within moments
        kept = await watcher._still_running(set(uids))
        if kept == {uids[0]}:
            break
        await asyncio.sleep(0.2)
    assert kept == {uids[0]}
    await handles[0].terminate("test over")


async def _until(check: Any, what: str, timeout: float = 10.0) -> None:
    end = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def _lists(sim: Any) -> int:
    return sim.stats()["byVerb"].get("list", {}).get("requests", 0)


async def test_with_a_watch_cache_a_deletion_starts_its_termination_without_a_list(sim: Any) -> None:
    """The worker's cache wakes the watcher, for events that change what a pass does, and is what a pass reads: no
    watch of its own, no LIST per event; the resync still LISTs, and a cache that is not current (here stopped) sends
    the pass back to LISTing."""
    sim.load_objects(cluster_objects({"n1": "i-01", "n2": "i-02"}, []))
    api = sim.api_client()
    cache = ClusterCache(api, CacheSettings(watch_timeout_seconds=30, backoff_base_seconds=0.05),
                         kinds=("Node", "NodeClaim", "NodePool"))
    cache.start()
    started: list[TerminationInput] = []

    async def start(inp: TerminationInput) -> None:
        started.append(inp)

    watcher = DeletionWatcher(KubeClient(api), None, WatcherSettings(resync_seconds=300, debounce_seconds=0.01),
                              start=start, cache=cache)
    assert await asyncio.to_thread(cache.wait_synced, 10)
    task = asyncio.create_task(watcher.run())
    try:
        await _until(lambda: watcher.passes >= 1, "the first (resync) pass")
        assert watcher.cached_passes == 0  # the resync LISTs
        lists = _lists(sim)
        k8s.CoreV1Api(api).patch_node("n2", {"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}})
        await asyncio.sleep(0.3)
        assert watcher.passes == 1  # a taint changes nothing a pass does: no pass
        k8s.CoreV1Api(api).delete_node("n1")
        await _until(lambda: started, "the termination of n1")
        assert [s.node_name for s in started] == ["n1"]
        assert watcher.cached_passes >= 1 and _lists(sim) == lists  # read from the cache
        assert not [t for t in threading.enumerate() if t.name.startswith("watch-")]
        cache.stop()
        passes = watcher.cached_passes
        assert await watcher.reconcile() == 0
        assert watcher.cached_passes == passes and _lists(sim) == lists + 3  # stopped: LISTed
    finally:
        watcher.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        cache.stop()
        api.close()
    assert all(not inf.listeners for inf in cache.informers.values())  # stop() took its listeners back


def test_the_pause_after_a_pass_keeps_passes_to_their_share_of_the_time() -> None:
    watcher = DeletionWatcher(None, None, WatcherSettings(debounce_seconds=0.1, pace=4.0))  # type: ignore[arg-type]
    assert watcher._pause() == 0.1  # no pass yet: the debounce
    watcher.last_pass_seconds = 0.01
    assert watcher._pause() == 0.1  # a cheap pass: still the debounce
    watcher.last_pass_seconds = 0.05  # 1,000 nodes: four times the pass
    assert abs(watcher._pause() - 0.2) < 1e-9


def test_what_wakes_the_watcher_is_what_a_pass_reads() -> None:
    node = {"metadata": {"name": "n", "uid": "u", "labels": {labels.NODEPOOL_LABEL: "a"},
                         "finalizers": [labels.TERMINATION_FINALIZER]}, "spec": {"providerID": "aws:///z/i-1"}}
    tainted = {**node, "spec": {**node["spec"], "taints": [{"key": "k", "effect": "NoSchedule"}]}}
    relabelled = {**node, "metadata": {**node["metadata"], "labels": {labels.NODEPOOL_LABEL: "b"}}}
    deleting = {**node, "metadata": {**node["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    released = {**deleting, "metadata": {**deleting["metadata"], "finalizers": []}}
    assert _signature(tainted) == _signature(node)
    assert _signature(relabelled) != _signature(node)
    assert _signature(deleting) != _signature(node)  # the deletion wakes it
    assert _signature(released) == _signature(deleting)  # a deleting object's finalizer going does not


def test_an_object_seen_deleting_wakes_nothing_when_it_goes_and_one_gone_at_once_does() -> None:
    pool = {"metadata": {"name": "p", "uid": "u"}}
    deleting = {"metadata": {**pool["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    assert _wakes(None, pool)  # appears
    assert _wakes(pool, None)  # removed at once: its claims go with it
    assert not _wakes(deleting, None)  # its deletion was seen (and woke the watcher) already
