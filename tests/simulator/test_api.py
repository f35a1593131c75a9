"""The API surface through the real kubernetes client: CRUD, conflicts, errors, selectors, paging, discovery."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from kubernetes import client
from kubernetes.client import ApiException
from support.sim_objects import node, nodeclaim, nodepool, pod

from simulator.server import Simulator


def _raw(sim: Simulator, method: str, path: str, body: bytes | None = None,
         ctype: str = "application/json") -> tuple[int, dict]:
    req = urllib.request.Request(sim.base_url + path, data=body, method=method, headers={"Content-Type": ctype})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def test_create_get_list_and_resource_versions(sim: Simulator, k8s: client.ApiClient) -> None:
    v1 = client.CoreV1Api(k8s)
    created = v1.create_node(node("n1", labels={"pool": "a"}))
    assert created.metadata.uid and int(created.metadata.resource_version) > 0
    assert v1.read_node("n1").status.allocatable["cpu"] == "4"
    v1.create_node(node("n2", labels={"pool": "b"}))
    listing = v1.list_node()
    assert {n.metadata.name for n in listing.items} == {"n1", "n2"}
    assert int(listing.metadata.resource_version) >= int(created.metadata.resource_version)
    patched = v1.patch_node("n1", {"metadata": {"labels": {"extra": "x"}}})
    assert int(patched.metadata.resource_version) > int(created.metadata.resource_version)
    assert patched.metadata.labels["extra"] == "x" and patched.metadata.labels["pool"] == "a"


def test_errors_are_status_bodies_with_real_codes(sim: Simulator, k8s: client.ApiClient) -> None:
    v1 = client.CoreV1Api(k8s)
    with pytest.raises(ApiException) as missing:
        v1.read_node("nope")
    assert missing.value.status == 404
    body = json.loads(missing.value.body)
    assert body["kind"] == "Status" and body["reason"] == "NotFound" and body["message"] == 'nodes "nope" not found'
    v1.create_node(node("dup"))
    with pytest.raises(ApiException) as dup:
        v1.create_node(node("dup"))
    assert dup.value.status == 409 and json.loads(dup.value.body)["reason"] == "AlreadyExists"
    with pytest.raises(ApiException) as bad_name:
        v1.create_node(node("Not_A_Name"))
    assert bad_name.value.status == 422 and json.loads(bad_name.value.body)["reason"] == "Invalid"
    with pytest.raises(ApiException) as no_ns:
        v1.create_namespaced_pod("ghost", pod("p", namespace="ghost"))
    assert no_ns.value.status == 404 and "namespaces" in json.loads(no_ns.value.body)["message"]


def test_malformed_requests_never_get_500(sim: Simulator) -> None:
    cases = [
        ("POST", "/api/v1/nodes", b"{not json", "application/json", 400),
        ("POST", "/api/v1/nodes", b"[1,2]", "application/json", 400),
        ("POST", "/api/v1/nodes", b'{"kind":"Pod","apiVersion":"v1","metadata":{"name":"x"}}', "application/json",
         400),
        ("POST", "/api/v1/nodes", b'{"metadata":{"labels":{"a":1},"name":"x"}}', "application/json", 422),
        ("POST", "/api/v1/nodes", b'{"metadata":{}}', "application/json", 422),
        ("GET", "/api/v1/widgets", None, "application/json", 404),
        ("GET", "/apis/nope.example.com/v1/things", None, "application/json", 404),
        ("GET", "/totally/unknown", None, "application/json", 404),
        ("PUT", "/api/v1/nodes", b"{}", "application/json", 405),
        ("POST", "/api/v1/nodes/x/eviction", b"{}", "application/json", 404),
        ("PATCH", "/api/v1/nodes/missing", b"{}", "application/merge-patch+json", 404),
        ("GET", "/api/v1/pods?labelSelector=a%20in%20(", None, "application/json", 400),
        ("GET", "/api/v1/pods?fieldSelector=nonsense", None, "application/json", 400),
        ("GET", "/api/v1/nodes?limit=abc", None, "application/json", 400),
        ("DELETE", "/api/v1/nodes/x", b"[]", "application/json", 400),
    ]
    for method, path, body, ctype, code in cases:
        status, doc = _raw(sim, method, path, body, ctype)
        assert status == code, (method, path, status, doc)
        assert doc.get("kind") == "Status" and doc.get("code") == code, (path, doc)
    sim.load_objects([node("n1")])
    for ctype, body, code in (("application/json-patch+json", b'{"op":"x"}', 400),
                              ("application/json-patch+json", b'[{"op":"remove","path":"/metadata/nope"}]', 422),
                              ("text/plain", b"{}", 415),
                              ("application/merge-patch+json", b'{"spec": 5}', 422)):
        status, doc = _raw(sim, "PATCH", "/api/v1/nodes/n1", body, ctype)
        assert status == code, (ctype, body, status, doc)


def test_stale_update_conflicts_and_fresh_update_wins(sim: Simulator, k8s: client.ApiClient) -> None:
    v1 = client.CoreV1Api(k8s)
    v1.create_node(node("n1"))
    first = v1.read_node("n1")
    second = v1.read_node("n1")
    first.metadata.labels["who"] = "first"
    v1.replace_node("n1", first)
    second.metadata.labels["who"] = "second"
    with pytest.raises(ApiException) as exc:
        v1.replace_node("n1", second)
    assert exc.value.status == 409 and "the object has been modified" in json.loads(exc.value.body)["message"]
    with pytest.raises(ApiException) as exc2:
        v1.patch_node("n1", {"metadata": {"resourceVersion": second.metadata.resource_version, "labels": {"a": "b"}}})
    assert exc2.value.status == 409
    assert v1.read_node("n1").metadata.labels["who"] == "first"


def test_status_subresource_is_separate_from_the_main_resource(sim: Simulator, k8s: client.ApiClient) -> None:
    v1 = client.CoreV1Api(k8s)
    v1.create_node(node("n1"))
    v1.patch_node("n1", {"status": {"allocatable": {"cpu": "99"}}})
    assert v1.read_node("n1").status.allocatable["cpu"] == "4", "main resource must ignore status"
    v1.patch_node_status("n1", {"status": {"allocatable": {"cpu": "8"}}})
    assert v1.read_node("n1").status.allocatable["cpu"] == "8"
    custom = client.CustomObjectsApi(k8s)
    created = custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims",
                                                  dict(nodeclaim("c1"), status={"nodeName": "x"}))
    assert "status" not in created, "CRD status is dropped on create, as with a status subresource"
    custom.patch_cluster_custom_object_status("karpenter.sh", "v1", "nodeclaims", "c1",
                                              {"status": {"nodeName": "n1"}})
    got = custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "c1")
    assert got["status"]["nodeName"] == "n1" and got["metadata"]["generation"] == 1
    with pytest.raises(ApiException) as refused:  # the CRD's CEL rule on spec: `self == oldSelf`
        custom.patch_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "c1", {"spec": {"expireAfter": "1h"}})
    assert refused.value.status == 422 and "spec is immutable" in json.loads(refused.value.body)["message"]
    custom.patch_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "c1", {"metadata": {"labels": {"a": "b"}}})
    assert custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "c1")["metadata"]["generation"] == 1
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", nodepool("p1"))
    custom.patch_cluster_custom_object("karpenter.sh", "v1", "nodepools", "p1", {"spec": {"weight": 5}})
    assert custom.get_cluster_custom_object("karpenter.sh", "v1", "nodepools", "p1")["metadata"]["generation"] == 2


def test_label_and_field_selectors(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("n1"), node("n2"),
                      pod("a", "n1", labels={"app": "web", "tier": "front"}),
                      pod("b", "n1", labels={"app": "db"}),
                      pod("c", "n2", labels={"app": "web"}),
                      pod("d", None, labels={"app": "web"}, nodeSelector={"nowhere": "x"})])
    v1 = client.CoreV1Api(k8s)

    def names(**kw: str) -> set[str]:
        return {p.metadata.name for p in v1.list_pod_for_all_namespaces(**kw).items}

    assert names(field_selector="spec.nodeName=n1") == {"a", "b"}
    assert names(field_selector="spec.nodeName=") == {"d"}
    assert names(field_selector="spec.nodeName=n1,metadata.name!=a") == {"b"}
    assert names(field_selector="status.phase=Pending") == {"d"}
    assert names(field_selector="metadata.name=c") == {"c"}
    assert names(label_selector="app=web") == {"a", "c", "d"}
    assert names(label_selector="app in (web,db),tier!=front") == {"b", "c", "d"}
    assert names(label_selector="tier") == {"a"}
    assert names(label_selector="!tier,app notin (db)") == {"c", "d"}
    assert {p.metadata.name for p in v1.list_namespaced_pod("default", field_selector="spec.nodeName=n2").items} \
        == {"c"}
    assert not v1.list_namespaced_pod("kube-system").items


def test_paging_with_limit_and_continue(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node(f"n{i:02d}") for i in range(7)])
    v1 = client.CoreV1Api(k8s)
    seen, token, pages = [], None, 0
    while True:
        page = v1.list_node(limit=3, _continue=token) if token else v1.list_node(limit=3)
        seen += [n.metadata.name for n in page.items]
        pages += 1
        token = page.metadata._continue
        if not token:
            break
    assert seen == [f"n{i:02d}" for i in range(7)] and pages == 3


def test_discovery_and_version(sim: Simulator, k8s: client.ApiClient) -> None:
    assert client.VersionApi(k8s).get_code().major == "1"
    core = client.CoreV1Api(k8s).get_api_resources()
    names = {r.name: r for r in core.resources}
    assert {"nodes", "pods", "pods/eviction", "pods/status", "namespaces", "events"} <= set(names)
    assert names["pods/eviction"].group == "policy" and names["pods/eviction"].version == "v1"
    groups = {g.name for g in client.ApisApi(k8s).get_api_versions().groups}
    assert {"karpenter.sh", "policy", "apps", "storage.k8s.io", "coordination.k8s.io"} <= groups
    status, doc = _raw(sim, "GET", "/apis/karpenter.sh/v1")
    assert status == 200 and {r["name"] for r in doc["resources"]} >= {"nodepools", "nodeclaims", "nodeclaims/status"}


def test_generic_resources_round_trip(sim: Simulator, k8s: client.ApiClient) -> None:
    coord = client.CoordinationV1Api(k8s)
    coord.create_namespaced_lease("kube-system", {"metadata": {"name": "nodeflow"},
                                                  "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}})
    coord.patch_namespaced_lease("nodeflow", "kube-system", {"spec": {"holderIdentity": "b"}})
    assert coord.read_namespaced_lease("nodeflow", "kube-system").spec.holder_identity == "b"
    # a pod on n1 keeps the attachment: the attach/detach controller detaches a node's volumes 1 s (10 ms at this
    # time scale) after its last pod goes, which a loaded machine's next request can come after
    sim.load_objects([node("n1"), pod("db", "n1")])
    storage = client.StorageV1Api(k8s)
    storage.create_volume_attachment({"metadata": {"name": "va1"}, "spec": {
        "attacher": "ebs.csi.aws.com", "nodeName": "n1", "source": {"persistentVolumeName": "pv1"}}})
    assert [v.metadata.name for v in storage.list_volume_attachment().items] == ["va1"]
    events = client.CoreV1Api(k8s)
    events.create_namespaced_event("default", {"metadata": {"name": "e1"}, "involvedObject": {"kind": "Node",
                                                                                             "name": "n1"},
                                               "reason": "Unconsolidatable", "message": "x", "type": "Normal"})
    assert events.list_namespaced_event("default", field_selector="reason=Unconsolidatable").items


def test_a_yaml_body_is_decoded_as_kube_apiserver_decodes_it(sim: Simulator) -> None:
    """kube-apiserver takes `application/yaml` bodies on writes and converts YAML to JSON (sigs.k8s.io/yaml), so an
    unquoted timestamp stays a string; the emulator refused a YAML create with 400 and read timestamps as dates."""
    body = b"apiVersion: v1\nkind: Node\nmetadata:\n  name: from-yaml\n  annotations:\n    at: 2026-11-30T12:00:00Z\n"
    status, created = _raw(sim, "POST", "/api/v1/nodes", body, "application/yaml")
    assert status == 201, created
    assert created["metadata"]["annotations"] == {"at": "2026-11-30T12:00:00Z"}
    patch = b"metadata:\n  annotations:\n    later: 2026-12-01\n"
    status, patched = _raw(sim, "PATCH", "/api/v1/nodes/from-yaml", patch, "application/apply-patch+yaml")
    assert status == 200, patched
    assert patched["metadata"]["annotations"] == {"at": "2026-11-30T12:00:00Z", "later": "2026-12-01"}
    status, refused = _raw(sim, "POST", "/api/v1/nodes", b"metadata: [unclosed", "application/yaml")
    assert status == 400 and "could not be decoded" in refused["message"], refused
