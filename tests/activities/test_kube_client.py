"""The Kubernetes gateway against the simulator over HTTP: the one taint writer, finalizers, conflicts, reads."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes.client import CoreV1Api
from support.sim_objects import node, nodeclaim, nodepool, pod

from api import labels
from api.timestamps import parse_timestamp
from gateways.kube import EXCLUDE_LB_VALUE, Conflict, Eviction, KubeClient, event_body, eviction_outcome

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def kube(k8s: Any) -> KubeClient:
    return KubeClient(k8s)


def _taints(kube: KubeClient, name: str) -> list[dict[str, Any]]:
    return (kube.get_node(name) or {}).get("spec", {}).get("taints") or []


def test_taint_stamps_time_added_once_and_replaces_other_effects(sim: Any, kube: KubeClient) -> None:
    other = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
    sim.load_objects([node("n1", taints=[other, {"key": labels.DISRUPTED_TAINT_KEY, "effect": "NoExecute"}])])
    assert kube.taint("n1", now=T0)
    taints = _taints(kube, "n1")
    ours = [t for t in taints if t["key"] == labels.DISRUPTED_TAINT_KEY]
    assert other in taints and len(ours) == 1
    assert ours[0]["effect"] == labels.DISRUPTED_TAINT_EFFECT
    assert parse_timestamp(ours[0]["timeAdded"]) == T0
    assert kube.taint("n1")  # a second writer (termination after disruption) keeps the first stamp
    assert [t for t in _taints(kube, "n1") if t["key"] == labels.DISRUPTED_TAINT_KEY] == ours
    assert labels.EXCLUDE_LB_LABEL not in kube.get_node("n1")["metadata"]["labels"]


def test_termination_taint_also_excludes_the_node_from_load_balancers(sim: Any, kube: KubeClient) -> None:
    sim.load_objects([node("n1"), node("n2", labels={labels.EXCLUDE_LB_LABEL: "ops"})])
    assert kube.taint("n1", exclude_from_lb=True) and kube.taint("n2", exclude_from_lb=True)
    assert kube.get_node("n1")["metadata"]["labels"][labels.EXCLUDE_LB_LABEL] == EXCLUDE_LB_VALUE
    assert kube.get_node("n2")["metadata"]["labels"][labels.EXCLUDE_LB_LABEL] == "ops"
    assert kube.untaint("n1", drop_lb_label=True) and kube.untaint("n2", drop_lb_label=True)
    assert labels.EXCLUDE_LB_LABEL not in kube.get_node("n1")["metadata"]["labels"]
    assert kube.get_node("n2")["metadata"]["labels"][labels.EXCLUDE_LB_LABEL] == "ops"  # not ours: kept
    assert _taints(kube, "n1") == [] and _taints(kube, "n2") == []


def test_untaint_leaves_a_deleting_node_alone_unless_told(sim: Any, kube: KubeClient) -> None:
    sim.load_objects([node("n1", finalizers=[labels.TERMINATION_FINALIZER])])
    assert kube.taint("n1")
    assert kube.delete_node("n1")  # held by the finalizer: deleting, still there
    assert kube.untaint("n1")  # the planner's release / a rollback: the termination still needs the taint
    assert [t["key"] for t in _taints(kube, "n1")] == [labels.DISRUPTED_TAINT_KEY]
    assert kube.untaint("n1", skip_deleting=False)  # a cancelled termination undoes its own taint
    assert _taints(kube, "n1") == []


def test_a_gone_node_is_reported_not_raised(kube: KubeClient) -> None:
    assert kube.taint("nope") is False
    assert kube.untaint("nope") is False
    assert kube.remove_finalizer("Node", "nope") is False


def test_a_concurrent_writer_makes_the_update_reread(sim: Any, k8s: Any, kube: KubeClient) -> None:
    sim.load_objects([node("n1")])
    other_writer = CoreV1Api(k8s)
    seen: list[str] = []

    def change(obj: dict[str, Any]) -> dict[str, Any]:
        seen.append(obj["metadata"]["resourceVersion"])
        if len(seen) == 1:  # someone else writes between our read and our patch: our patch must get 409
            other_writer.patch_node("n1", {"metadata": {"labels": {"other": "writer"}}})
        return {"metadata": {"labels": {"ours": "yes"}}}

    assert kube.update("Node", "n1", change) is True
    assert len(seen) == 2 and seen[0] != seen[1]
    node_labels = kube.get_node("n1")["metadata"]["labels"]
    assert node_labels["other"] == "writer" and node_labels["ours"] == "yes"


def test_update_gives_up_after_its_attempts(sim: Any, k8s: Any, kube: KubeClient) -> None:
    sim.load_objects([node("n1")])
    core = CoreV1Api(k8s)

    def always_raced(obj: dict[str, Any]) -> dict[str, Any]:
        core.patch_node("n1", {"metadata": {"labels": {"n": obj["metadata"]["resourceVersion"]}}})
        return {"metadata": {"labels": {"ours": "yes"}}}

    with pytest.raises(Conflict):
        kube.update("Node", "n1", always_raced, attempts=3)


def test_finalizers_are_added_and_removed_idempotently(sim: Any, kube: KubeClient) -> None:
    sim.load_objects([nodepool("default"), {**nodeclaim("c1"), "metadata": {**nodeclaim("c1")["metadata"],
                                                                            "finalizers": ["other"]}}])
    assert kube.add_finalizer("NodeClaim", "c1") is True
    assert kube.add_finalizer("NodeClaim", "c1") is False
    assert kube.get_node_claim("c1")["metadata"]["finalizers"] == ["other", labels.TERMINATION_FINALIZER]
    assert kube.remove_finalizer("NodeClaim", "c1") is True
    assert kube.remove_finalizer("NodeClaim", "c1") is False
    assert kube.get_node_claim("c1")["metadata"]["finalizers"] == ["other"]


def test_cluster_objects_are_typed_plain_dicts(sim: Any, kube: KubeClient) -> None:
    sim.load_objects([nodepool("default"), nodeclaim("c1"), node("n1"), pod("p1", "n1")])
    kinds = {(o["kind"], o["apiVersion"], o["metadata"]["name"]) for o in kube.cluster_objects()}
    assert {("NodePool", labels.API_VERSION, "default"), ("NodeClaim", labels.API_VERSION, "c1"),
            ("Node", "v1", "n1"), ("Pod", "v1", "p1")} <= kinds
    assert [n["metadata"]["name"] for n in kube.list_nodes(label_selector="kubernetes.io/hostname=n1")] == ["n1"]
    assert kube.get_node_pool("missing") is None


def test_create_node_claim_returns_the_existing_one_on_conflict(sim: Any, kube: KubeClient) -> None:
    sim.load_objects([nodepool("default")])
    first = kube.create_node_claim(nodeclaim("c1"))
    again = kube.create_node_claim(nodeclaim("c1"))
    assert again["metadata"]["uid"] == first["metadata"]["uid"]


def test_named_events_are_recorded_once_and_generated_ones_each_time(sim: Any, k8s: Any, kube: KubeClient) -> None:
    sim.load_objects([node("n1")])
    named = event_body("Node", "n1", "Example", "x" * 2000, T0, event_name="n1.once")
    assert len(named["message"]) == 1024
    assert kube.create_event(named) is True
    assert kube.create_event(named) is False
    kube.event("Node", kube.get_node("n1"), "n1", "Example", "again")
    kube.event("Node", kube.get_node("n1"), "n1", "Example", "again")
    events = CoreV1Api(k8s).list_namespaced_event("default").items
    assert len([e for e in events if e.involved_object.name == "n1"]) == 3
    assert {e.involved_object.uid for e in events if e.message == "again"} == {kube.get_node("n1")["metadata"]["uid"]}


@pytest.mark.parametrize(("code", "message", "outcome"), [
    (201, "", Eviction.EVICTED), (200, "", Eviction.EVICTED), (404, "not found", Eviction.GONE),
    (409, "uid precondition", Eviction.GONE), (429, "Cannot evict pod as it would violate", Eviction.PDB_BLOCKED),
    (500, "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
     Eviction.MULTIPLE_PDBS),
    (500, "etcdserver: request timed out", Eviction.FAILED), (403, "forbidden", Eviction.FAILED),
])
def test_the_eviction_answer_becomes_one_typed_outcome(code: int, message: str, outcome: Eviction) -> None:
    assert eviction_outcome(code, message) is outcome


def test_answers_nobody_reads_hand_their_connection_back(sim: Any, k8s: Any, kube: KubeClient) -> None:
    """Evictions, pod and node deletions and Events are answered with bodies the gateway ignores; unread, each
    connection was dropped and the next request opened a new one (3,391 for 300 terminations)."""
    sim.load_objects([node("n1"), node("n2"), *[pod(f"p{i}", node_name="n1") for i in range(12)]])
    listed = CoreV1Api(k8s).list_namespaced_pod("default").items
    pods = [{"metadata": {"name": p.metadata.name, "namespace": "default", "uid": p.metadata.uid}} for p in listed]
    pool = k8s.rest_client.pool_manager
    before = sum(p.num_connections for p in pool.pools._container.values())
    for p in pods[:6]:
        assert kube.evict(p).outcome == Eviction.EVICTED
    for p in pods[6:]:
        assert kube.delete_pod(p, 0)
    for i in range(6):
        assert kube.create_event(event_body("Node", "n1", "Test", f"m{i}", T0, event_name=f"n1.e{i}"))
    assert kube.delete_node("n2")
    opened = sum(p.num_connections for p in pool.pools._container.values()) - before
    assert opened <= 1, f"{opened} new connections for 19 sequential requests"


def test_a_watch_yields_plain_events(sim: Any, kube: KubeClient) -> None:
    """The deletion watcher only wakes on a watch's events; they come as dicts, not client models."""
    sim.load_objects([node("n1")])
    w, stream = kube.watch("nodes", timeout_seconds=2)
    first = next(iter(stream))
    w.stop()
    assert isinstance(first, dict) and first["type"] == "ADDED"
    assert first["object"]["metadata"]["name"] == "n1"
