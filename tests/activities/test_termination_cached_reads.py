"""The termination's reads from the watch cache and from its own writes' answers (activities/cached_copies.py),
against the simulator: the drain's rounds take the node's pods from the cache and a LIST confirms "none left", an
evicted pod is not evicted again from an older copy, the NodeClaim's markers start from the answer they are handed,
and finalize and the markers use a cached copy only once it shows the deletion (a stale one still lands its write)."""

from __future__ import annotations

import copy
import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio.testing import ActivityEnvironment

from activities.cached_copies import deleting_copy
from activities.kube import KubeActivities
from activities.termination_markers import TerminationMarkerActivities
from api import labels as L
from bench.clusters import node_objects, pod
from contracts.termination import DrainedStatus, DrainInput, FinalizeInput, TerminationMarkersInput
from gateways.kube import EvictionResult, KubeClient
from simulator.server import Simulator


class CountingKube(KubeClient):
    """The gateway over the simulator, recording the reads and evictions the tests count."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.calls: list[str] = []

    def list_node_pods(self, node: str) -> Any:
        self.calls.append(f"LIST Pods/{node}")
        return super().list_node_pods(node)

    def get_node(self, name: str) -> Any:
        self.calls.append(f"GET Node/{name}")
        return super().get_node(name)

    def get_node_claim(self, name: str) -> Any:
        self.calls.append(f"GET NodeClaim/{name}")
        return super().get_node_claim(name)

    def evict(self, pod: Any) -> EvictionResult:
        self.calls.append(f"EVICT {pod['metadata']['name']}")
        return super().evict(pod)


class Copies:
    """A watch cache holding fixed copies: objects by (kind, name), pods by node (None: not synced)."""

    def __init__(self, objects: dict[tuple[str, str], Any] | None = None,
                 pods: dict[str, list[Any]] | None = None) -> None:
        self.objects, self.pods = objects or {}, pods

    def get(self, kind: str, name: str) -> Any:
        return self.objects.get((kind, name))

    def node_pods(self, node: str) -> Any:
        return None if self.pods is None else list(self.pods.get(node, []))


def _machine(sim: Simulator, *pods: Any, grace: str | None = None) -> CountingKube:
    objs = node_objects("n1", "m5.large")
    for o in objs:
        o["metadata"]["finalizers"] = [L.TERMINATION_FINALIZER]
        if grace and o["kind"] == "NodeClaim":
            o["spec"]["terminationGracePeriod"] = grace
    sim.load_objects([*objs, *pods])
    return CountingKube(sim.api_client())


async def test_a_round_reads_the_cached_pods_and_a_list_confirms_none_left(sim: Simulator) -> None:
    kube = _machine(sim, pod("p1", "n1", 0.1, 0.1))
    now = datetime.now(UTC)
    cached = KubeActivities(kube, cached=Copies(pods={"n1": kube.list_node_pods("n1")}))
    kube.calls.clear()
    assert [p["metadata"]["name"] for p in await cached._waiting_pods("n1", now)] == ["p1"]
    assert kube.calls == []  # the cache had a pod waiting: no LIST
    bound_since = KubeActivities(kube, cached=Copies(pods={}))  # the cache has not seen p1 yet
    assert await bound_since._waiting_pods("n1", now, confirm=False) == [] and kube.calls == []
    assert [p["metadata"]["name"] for p in await bound_since._waiting_pods("n1", now)] == ["p1"]
    assert kube.calls == ["LIST Pods/n1"]  # "none left" is asked of the API server before it counts
    unsynced = KubeActivities(kube, cached=Copies(pods=None))
    assert len(await unsynced._waiting_pods("n1", now, confirm=False)) == 1
    assert kube.calls == ["LIST Pods/n1", "LIST Pods/n1"]


async def test_a_pod_evicted_once_is_not_evicted_again_from_an_older_copy(sim: Simulator) -> None:
    kube = _machine(sim, pod("p1", "n1", 0.1, 0.1), pod("p2", "n1", 0.1, 0.1))
    stale = Copies(pods={"n1": kube.list_node_pods("n1")})  # never shows the evictions' deletionTimestamps
    acts = KubeActivities(kube, cached=stale, poll_min=0.05, poll_max=0.1)
    kube.calls.clear()
    res = await ActivityEnvironment().run(acts.drain, DrainInput(
        node_name="n1", node_claim_name="n1-claim", node_pool="default",
        return_by=datetime.now(UTC) + timedelta(seconds=1.6)))  # past the 1 s an evicted pod is left alone
    assert not res.drained and res.evicted == 2
    assert sorted(c for c in kube.calls if c.startswith("EVICT")) == ["EVICT p1", "EVICT p2"]
    assert not any(c.startswith("LIST") for c in kube.calls)  # the cache had pods waiting every round
    assert all(p["metadata"].get("deletionTimestamp") for p in kube.list_node_pods("n1"))


def test_the_markers_start_from_the_claim_they_are_handed(sim: Simulator) -> None:
    kube = _machine(sim, grace="1h")
    deleted, answer = kube.delete_node_claim_answer("n1-claim")
    assert deleted and answer is not None and answer["metadata"]["deletionTimestamp"]
    kube.calls.clear()
    markers = TerminationMarkerActivities(kube)
    inp = TerminationMarkersInput(node_claim_name="n1-claim", drained=DrainedStatus.DRAINING)
    assert markers.mark_now(inp, answer)
    assert kube.calls == []  # the annotation from the DELETE's answer, the condition from the PATCH's
    claim = kube.get_node_claim("n1-claim")
    assert claim["metadata"]["annotations"][L.TERMINATION_TIMESTAMP_ANNOTATION]
    assert {"type": "Drained", "status": "Unknown"}.items() <= next(
        c for c in claim["status"]["conditions"] if c["type"] == "Drained").items()
    kube.calls.clear()  # a stale copy: 409, a fresh read, the write lands
    assert markers.mark_now(inp.model_copy(update={"drained": DrainedStatus.DRAINED}), answer)
    assert kube.calls == ["GET NodeClaim/n1-claim"]
    assert next(c for c in kube.get_node_claim("n1-claim")["status"]["conditions"]
                if c["type"] == "Drained")["status"] == "True"


async def test_finalize_uses_deleting_copies_and_a_stale_one_still_removes_the_finalizers(sim: Simulator) -> None:
    kube = _machine(sim)
    kube.delete_node("n1")
    kube.delete_node_claim("n1-claim")
    node, claim = copy.deepcopy(kube.get_node("n1")), copy.deepcopy(kube.get_node_claim("n1-claim"))
    kube.update("NodeClaim", "n1-claim", lambda c: {"metadata": {"labels": {"moved": "on"}}})  # the copy is behind
    kube.calls.clear()
    acts = KubeActivities(kube, cached=Copies({("Node", "n1"): node, ("NodeClaim", "n1-claim"): claim}))
    res = await ActivityEnvironment().run(acts.finalize, FinalizeInput(node_name="n1", node_claim_name="n1-claim"))
    assert res.node_finalizer_removed and res.node_claim_finalizer_removed
    assert kube.calls == ["GET NodeClaim/n1-claim"]  # the Node from its copy; the claim's 409 and one read
    assert kube.get_node("n1") is None and kube.get_node_claim("n1-claim") is None


def test_a_copy_counts_only_once_it_shows_the_deletion(sim: Simulator) -> None:
    kube = _machine(sim)
    live = kube.get_node("n1")
    assert deleting_copy(Copies({("Node", "n1"): live}), "Node", "n1") is None
    assert deleting_copy(None, "Node", "n1") is None and deleting_copy(Copies(), "Node", None) is None
    kube.delete_node("n1")
    gone = kube.get_node("n1")
    assert deleting_copy(Copies({("Node", "n1"): gone}), "Node", "n1") is gone


async def test_the_drain_calls_on_its_own_threads_and_beats_while_a_round_waits(sim: Simulator,
                                                                                monkeypatch: Any) -> None:
    import threading
    import time

    import activities.kube as kube_module

    class SlowEvictions(CountingKube):
        """Every eviction waits 1.2 s, as one queued behind a burst's requests does."""

        threads: set[str] = set()

        def evict(self, pod: Any) -> EvictionResult:
            self.threads.add(threading.current_thread().name)
            time.sleep(1.2)
            return super().evict(pod)

    monkeypatch.setattr(kube_module, "BEAT_EVERY", 0.1)
    kube = SlowEvictions(sim.api_client())
    sim.load_objects([*node_objects("n1", "m5.large"), pod("p1", "n1", 0.1, 0.1)])
    beats: list[Any] = []
    env = ActivityEnvironment()
    env.on_heartbeat = lambda *details: beats.append(time.monotonic())
    acts = KubeActivities(kube, poll_min=0.05, poll_max=0.1)
    t0 = time.monotonic()
    await env.run(acts.drain, DrainInput(node_name="n1", node_claim_name="n1-claim", node_pool="default",
                                         return_by=datetime.now(UTC) + timedelta(seconds=1.5)))
    assert {name.rsplit("_", 1)[0] for name in kube.threads} == {"kube-drain"}
    during = [b for b in beats if t0 + 0.3 < b < t0 + 1.1]  # while the eviction call was still waiting
    assert len(during) >= 4
    stalled = KubeActivities(kube, poll_min=0.05, poll_max=0.1, stall_seconds=0.3)
    beats.clear()
    t0 = time.monotonic()
    sim.load_objects([pod("p2", "n1", 0.1, 0.1)])
    await env.run(stalled.drain, DrainInput(node_name="n1", node_claim_name="n1-claim", node_pool="default",
                                            return_by=datetime.now(UTC) + timedelta(seconds=0.5)))
    assert not [b for b in beats if t0 + 0.5 < b < t0 + 1.1]  # past stall_seconds the round beats no more


async def test_a_drain_heartbeats_at_most_once_a_beat_however_fast_its_rounds(sim: Simulator, monkeypatch: Any) -> None:
    """Rounds every 20-50 ms (a do-not-disrupt pod keeps the node from draining) once heartbeat three times a round:
    over a hundred calls in two seconds, each an event-loop task and an encode. Now one per BEAT_EVERY, carrying the
    latest round's details."""
    import time

    import activities.kube as kube_module

    monkeypatch.setattr(kube_module, "BEAT_EVERY", 0.4)
    held = pod("held", "n1", 0.1, 0.1, annotations={L.DO_NOT_DISRUPT_ANNOTATION: "true"})
    sim.load_objects([*node_objects("n1", "m5.large"), held])
    beats: list[tuple[float, Any]] = []
    env = ActivityEnvironment()
    env.on_heartbeat = lambda *details: beats.append((time.monotonic(), details))
    acts = KubeActivities(CountingKube(sim.api_client()), poll_min=0.02, poll_max=0.05)
    res = await env.run(acts.drain, DrainInput(node_name="n1", node_claim_name="n1-claim", node_pool="default",
                                               return_by=datetime.now(UTC) + timedelta(seconds=2)))
    assert not res.drained and [p.status for p in res.pods] == ["DoNotDisrupt"]
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(beats)]
    assert 3 <= len(beats) <= 6, len(beats)
    assert min(gaps) >= 0.39
    assert beats[-1][1][0]["pods_left"] == 1 and beats[-1][1][0]["blocking"] == ["do-not-disrupt"]
