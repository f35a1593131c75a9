"""The answers kube-apiserver gives that nodeflow branches on, word for word: the Eviction API (429 naming the
budget, 404, 500 for several budgets), deletion held by finalizers (200, deletionTimestamp, no new finalizers),
optimistic concurrency (409 on a stale resourceVersion) and a watch resumed from a compacted version (410)."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client import ApiException
from support.sim_objects import node, nodeclaim, pdb, pod, wait_for

from simulator.server import Simulator
from simulator.world import MULTI_PDB_MESSAGE, PDB_MESSAGE

WEB = {"app": "web"}


def _status(exc: pytest.ExceptionInfo[ApiException]) -> dict[str, Any]:
    return json.loads(exc.value.body)


def _evict(v1: client.CoreV1Api, name: str) -> None:
    v1.create_namespaced_pod_eviction(name, "default", {"apiVersion": "policy/v1", "kind": "Eviction",
                                                        "metadata": {"name": name, "namespace": "default"}})


def _raw(sim: Simulator, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(sim.base_url + path, method=method, data=json.dumps(body or {}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as resp:
        return resp.status, json.loads(resp.read())


def test_eviction_blocked_by_a_budget_is_429_naming_it(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("n1"), pod("a", "n1", labels=WEB), pod("b", "n1", labels=WEB),
                      pdb("web", WEB, minAvailable=2)])
    v1 = client.CoreV1Api(k8s)
    wait_for(lambda: all(p.status.phase == "Running" for p in v1.list_namespaced_pod("default").items),
             what="pods running")
    with pytest.raises(ApiException) as exc:
        _evict(v1, "a")
    status = _status(exc)
    assert (exc.value.status, status["reason"], status["message"]) == (429, "TooManyRequests", PDB_MESSAGE)
    assert PDB_MESSAGE == "Cannot evict pod as it would violate the pod's disruption budget."
    assert status["details"]["causes"] == [{"reason": "DisruptionBudget", "message":
                                            "The disruption budget web needs 2 healthy pods and has 2 currently"}]
    assert v1.read_namespaced_pod("a", "default").metadata.deletion_timestamp is None


def test_eviction_of_a_missing_pod_is_404_and_several_budgets_500(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("n1"), pod("p", "n1", labels={"app": "web", "tier": "a"}),
                      pdb("one", WEB, maxUnavailable=1), pdb("two", {"tier": "a"}, maxUnavailable=1)])
    v1 = client.CoreV1Api(k8s)
    with pytest.raises(ApiException) as exc:
        _evict(v1, "ghost")
    assert exc.value.status == 404 and _status(exc)["reason"] == "NotFound"
    assert _status(exc)["message"] == 'pods "ghost" not found'
    wait_for(lambda: v1.read_namespaced_pod("p", "default").status.phase == "Running", what="p running")
    with pytest.raises(ApiException) as exc:
        _evict(v1, "p")
    assert exc.value.status == 500 and _status(exc)["message"] == MULTI_PDB_MESSAGE
    assert MULTI_PDB_MESSAGE == ("This pod has more than one PodDisruptionBudget, which the eviction subresource "
                                 "does not support.")


def test_a_deletion_held_by_a_finalizer(sim: Simulator, k8s: client.ApiClient) -> None:
    custom = client.CustomObjectsApi(k8s)
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", nodeclaim("c1"))
    path = "/apis/karpenter.sh/v1/nodeclaims/c1"
    code, held = _raw(sim, "DELETE", path)
    assert code == 200, "a pending deletion answers 200 with the object (202 only with orphanDependents=false)"
    stamp = held["metadata"]["deletionTimestamp"]
    assert held["metadata"]["finalizers"] == ["karpenter.sh/termination"]
    code, again = _raw(sim, "DELETE", path, {"orphanDependents": False})
    assert code == 202 and again["metadata"]["deletionTimestamp"] == stamp, "a second delete changes nothing"
    with pytest.raises(ApiException) as exc:
        custom.patch_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "c1",
                                           {"metadata": {"finalizers": ["karpenter.sh/termination", "x/y"]}})
    assert exc.value.status == 422
    assert 'no new finalizers can be added if the object is being deleted, found new finalizers []string{"x/y"}' \
        in _status(exc)["message"]
    rv = custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "c1")["metadata"]["resourceVersion"]
    custom.patch_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "c1", {"metadata": {"finalizers": None}})
    events = []
    for ev in watch.Watch().stream(custom.list_cluster_custom_object, "karpenter.sh", "v1", "nodeclaims",
                                   resource_version=rv, timeout_seconds=2):
        events.append((ev["type"], ev["object"]["metadata"]["name"]))
        if ev["type"] == "DELETED":
            break
    assert ("DELETED", "c1") in events
    with pytest.raises(ApiException) as gone:
        custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "c1")
    assert gone.value.status == 404


def test_an_update_with_a_stale_resource_version_is_409(sim: Simulator, k8s: client.ApiClient) -> None:
    v1 = client.CoreV1Api(k8s)
    v1.create_node(node("n1"))
    stale = v1.read_node("n1")
    v1.patch_node("n1", {"metadata": {"labels": {"a": "1"}}})
    stale.metadata.labels = {"a": "2"}
    with pytest.raises(ApiException) as exc:
        v1.replace_node("n1", stale)
    assert exc.value.status == 409 and _status(exc)["reason"] == "Conflict"
    assert "the object has been modified; please apply your changes to the latest version" in _status(exc)["message"]


def test_a_watch_from_a_compacted_version_ends_with_410_expired(sim: Simulator) -> None:
    sim.load_objects([node("n1")])
    sim.store.compacted_rv = sim.store.rv
    with urllib.request.urlopen(f"{sim.base_url}/api/v1/nodes?watch=1&resourceVersion=1&timeoutSeconds=2") as resp:
        first = json.loads(resp.readline())
    assert first["type"] == "ERROR"
    status = first["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")
    assert status["message"] == f"too old resource version: 1 ({sim.store.compacted_rv})"
