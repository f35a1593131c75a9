"""The planner's view of the watch cache (runtime/cluster_view.py) against the simulator over HTTP: after a random
stream of changes, read between changes so its parsed pods are carried from read to read, the view plans exactly
what a pass over the cache's objects and a pass over a fresh LIST plan (same plan JSON), and a steady read
re-parses only the pods that changed."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client as kube
from support.churn import random_change
from support.sim_objects import nodepool

from api.snapshot import Snapshot
from gateways.kube import KubeClient
from planning.cluster import parse_claim, parse_pod
from planning.planner.plan import plan
from runtime.cluster_cache import ClusterCache
from runtime.cluster_trim import trim
from runtime.cluster_view import ClusterView
from runtime.informer import CacheSettings
from simulator.generate import generate_cluster
from simulator.server import Simulator

FAST = CacheSettings(watch_timeout_seconds=30, connect_timeout_seconds=5, list_timeout_seconds=10,
                     backoff_base_seconds=0.05, backoff_cap_seconds=0.4, min_stream_seconds=0.2)
AT = datetime.now(UTC).replace(microsecond=0)


@pytest.fixture
def view(sim: Simulator, k8s: Any) -> Iterator[ClusterView]:
    sim.load_objects([*generate_cluster(10, 8, seed=11), nodepool("default")])
    v = ClusterView(ClusterCache(k8s, FAST))
    v.start()
    try:
        assert v.cache.wait_synced(10)
        yield v
    finally:
        v.stop()


def _key(o: dict[str, Any]) -> tuple[str, str, str]:
    return (o["kind"], o["metadata"].get("namespace") or "", o["metadata"]["name"])


def _listed(api: Any) -> list[dict[str, Any]]:
    return [trim(o["kind"], o) for o in KubeClient(api).cluster_objects()]


def _converged(view: ClusterView, api: Any, timeout: float = 15.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        listed = _listed(api)
        if {_key(o): o for o in listed} == {_key(o): o for o in view.cache.objects()}:
            return listed
        assert time.monotonic() < deadline, "the cache did not converge on a fresh LIST"
        time.sleep(0.05)


def _plan_json(snapshot: Any, parsed: Any = None) -> str:
    return plan(snapshot, AT, parsed=parsed).model_dump_json()


def test_view_plans_what_a_list_plans_after_random_churn(view: ClusterView, k8s: Any) -> None:
    rng = random.Random(5)
    for i in range(60):
        random_change(rng, k8s, i)
        if i % 7 == 0:
            view.read()  # parses carried over between reads, as between passes
    listed = _converged(view, k8s)
    objs, snapshot, parsed = view.read()
    assert [parse_pod(p.raw) for p in parsed.pods] == parsed.pods  # every carried parse is a fresh one's equal
    assert [parse_claim(c) for c in snapshot.node_claims] == parsed.claims
    from_scratch = Snapshot.from_objects(objs)  # and every carried load is a fresh load's equal
    for kind in ("node_pools", "node_claims", "node_classes", "nodes", "pods", "pdbs"):
        assert getattr(snapshot, kind) == getattr(from_scratch, kind), kind
    assert {_key(o) for o in objs} == {_key(o) for o in listed}
    by_view = _plan_json(snapshot, parsed)
    assert by_view == _plan_json(Snapshot.from_objects(view.cache.objects()))  # parsed from scratch
    assert by_view == _plan_json(Snapshot.from_objects(listed))
    # a plan with decisions in it, not a trivially equal empty one: commands, or nodes blocked with reasons (the
    # simulator's world runs beside the churn, so which of the two this seed ends with depends on timing)
    assert '"commands":[{' in by_view or '"blocked":[{' in by_view, by_view


def test_a_steady_read_reparses_only_changed_pods(view: ClusterView, k8s: Any) -> None:
    pods = view.read()[2].pods
    assert view.reparsed == len(pods) > 0
    view.read()
    assert view.reparsed == 0
    victim = next(p for p in pods if p.node_name)
    kube.CoreV1Api(k8s).patch_namespaced_pod(victim.name, victim.namespace,
                                             {"metadata": {"labels": {"touched": "yes"}}})
    deadline = time.monotonic() + 10
    while True:
        now = view.read()[2].pods
        changed = next(p for p in now if p.key == victim.key)
        if changed.labels.get("touched") == "yes":
            break
        assert time.monotonic() < deadline, "the view never saw the label"
        time.sleep(0.05)
    assert view.reparsed == 1 and len(now) == len(pods)


def test_volume_topology_reaches_the_snapshot(sim: Simulator, view: ClusterView) -> None:
    """The scheduling simulation reads PVs, PVCs and StorageClasses from the snapshot's other objects
    (docs/semantics.md §3.5); the live planner's snapshot is the cache's, so the cache must hold them."""
    sim.load_objects([
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "gp3"},
         "provisioner": "ebs.csi.aws.com", "volumeBindingMode": "WaitForFirstConsumer"},
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-b"},
         "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "gp3"}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default"},
         "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "gp3",
                  "resources": {"requests": {"storage": "1Gi"}}}}])
    deadline = time.monotonic() + 10
    while True:
        _, snap, _ = view.read()
        kinds = {o["kind"] for o in snap.others}
        if {"StorageClass", "PersistentVolume", "PersistentVolumeClaim"} <= kinds or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert {"StorageClass", "PersistentVolume", "PersistentVolumeClaim"} <= kinds
