"""Trimming keeps every field a decision reads: planning reaches the same plan, pod by pod the same parse,
and the drain the same verdicts, from trimmed objects as from full ones as a real API server returns them."""

from __future__ import annotations

import copy
import json
import random
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

import pytest

from api.snapshot import Snapshot
from planning.cluster import parse_node, parse_pod
from planning.lifecycle import drain
from planning.planner.plan import plan
from runtime.cluster_trim import LAST_APPLIED, trim
from simulator.generate import generate_cluster

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
MANAGED = [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
            "time": "2026-03-01T10:00:00Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {"f:containers": {}}}}]


def _fatten_pod(p: dict[str, Any], rng: random.Random, i: int) -> None:
    """What a live pod carries beyond the generator's: images, env, probes, mounts, statuses, and (for
    some pods) placement rules that trimming must keep."""
    meta, spec = p["metadata"], p["spec"]
    meta.update(managedFields=MANAGED, generateName=meta["name"][:-5], finalizers=["example.com/keep"])
    meta.setdefault("annotations", {})[LAST_APPLIED] = json.dumps({"spec": spec})
    for c in spec["containers"]:
        c.update(env=[{"name": f"VAR_{k}", "value": "x" * 40} for k in range(8)], ports=[{"containerPort": 8080}],
                 volumeMounts=[{"name": "config", "mountPath": "/etc/app"}], imagePullPolicy="IfNotPresent",
                 livenessProbe={"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10})
    spec["volumes"] = [{"name": "config", "configMap": {"name": "app-config"}},
                       {"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}]
    if i % 7 == 0:
        spec["volumes"].append({"name": "data", "persistentVolumeClaim": {"claimName": f"data-{meta['name']}"}})
    if i % 5 == 0:
        spec["tolerations"] = [{"key": "example.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    if i % 11 == 0:
        spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                              "whenUnsatisfiable": "DoNotSchedule",
                                              "labelSelector": {"matchLabels": dict(meta.get("labels") or {})}}]
    spec.update(serviceAccountName="default", dnsPolicy="ClusterFirst", enableServiceLinks=True)
    p["status"] = {
        "phase": "Running", "podIP": f"10.1.{i // 250}.{i % 250}", "hostIP": "10.0.0.1", "qosClass": "Burstable",
        "startTime": "2026-03-01T09:00:00Z",
        "conditions": [{"type": t, "status": "True", "lastTransitionTime": "2026-03-01T09:00:01Z",
                        "lastProbeTime": None} for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
        "containerStatuses": [{"name": c["name"], "ready": True, "restartCount": rng.randrange(3),
                               "image": c.get("image", ""), "imageID": "sha256:" + "f" * 64,
                               "state": {"running": {"startedAt": "2026-03-01T09:00:02Z"}},
                               # as a 1.33+ kubelet reports every running container (an in-place resize's inputs)
                               "resources": copy.deepcopy(c.get("resources") or {}),
                               "allocatedResources": dict((c.get("resources") or {}).get("requests") or {})}
                              for c in spec["containers"]],
    }
    if i % 17 == 0:  # a resize down in progress: the kubelet still holds twice the cpu (planning/pod_requests.py)
        held = p["status"]["containerStatuses"][0]
        held["allocatedResources"]["cpu"] = "2"
        p["status"]["conditions"].append({"type": "PodResizeInProgress", "status": "True"})
    if i % 13 == 0:
        p["status"]["conditions"][1]["status"] = "False"  # not ready: counts against PDBs


def _fatten(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rng = random.Random(1)
    out = copy.deepcopy(objs)
    for i, o in enumerate(out):
        o["metadata"]["managedFields"] = MANAGED
        if o["kind"] == "Pod":
            _fatten_pod(o, rng, i)
        elif o["kind"] == "Node":
            o["status"]["images"] = [{"names": [f"registry.example.com/img-{k}:1.0"], "sizeBytes": 10**8}
                                     for k in range(40)]
            o["status"]["nodeInfo"] = {"kubeletVersion": "v1.31.0", "containerRuntimeVersion": "containerd://1.7"}
    return out


@pytest.fixture(scope="module")
def cluster() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    full = _fatten(generate_cluster(40, 14, seed=5, now=NOW))
    return full, [trim(o["kind"], o) for o in full]


@pytest.mark.parametrize("until_stable", [False, True])
def test_planning_decides_the_same_from_trimmed_objects(cluster: Any, until_stable: bool) -> None:
    full, trimmed = cluster
    want = plan(Snapshot.from_objects(full), NOW, until_stable=until_stable).to_public(internal=True)
    got = plan(Snapshot.from_objects(trimmed), NOW, until_stable=until_stable).to_public(internal=True)
    assert want["commands"] and want["blocked"]  # a plan with decisions to compare, not an idle pass
    assert got == want


def _parsed(info: Any) -> dict[str, Any]:
    """A parsed pod or node without its raw dict; the dropped last-applied copy is no decision's input."""
    out = asdict(info) | {"raw": None}
    out["annotations"] = {k: v for k, v in out["annotations"].items() if k != LAST_APPLIED}
    return out


def test_every_pod_and_node_parses_the_same(cluster: Any) -> None:
    full, trimmed = cluster
    pairs = [(f, t) for f, t in zip(full, trimmed, strict=True)]
    pods = [(f, t) for f, t in pairs if f["kind"] == "Pod"]
    assert len(pods) > 400
    for f, t in pods:
        assert _parsed(parse_pod(t)) == _parsed(parse_pod(f))
    for f, t in pairs:
        if f["kind"] == "Node":
            assert _parsed(parse_node(0, t)) == _parsed(parse_node(0, f))


def test_the_drain_reads_the_same_from_trimmed_pods(cluster: Any) -> None:
    full, trimmed = cluster
    for f, t in zip(full, trimmed, strict=True):
        if f["kind"] != "Pod":
            continue
        for rule in (drain.is_terminal, drain.is_mirror, drain.tolerates_disrupted_taint, drain.tier_of,
                     drain.grace_seconds, drain.has_do_not_disrupt, drain.deletion_time):
            assert rule(t) == rule(f), rule.__name__
        assert drain.is_waiting_eviction(t, NOW) == drain.is_waiting_eviction(f, NOW)
        claims = [(v.get("persistentVolumeClaim") or {}).get("claimName") for v in f["spec"]["volumes"]]
        assert [(v.get("persistentVolumeClaim") or {}).get("claimName") for v in t["spec"].get("volumes", [])] == \
            [c for c in claims if c]


def test_trimming_drops_most_of_a_live_pod_and_never_changes_its_input(cluster: Any) -> None:
    full, trimmed = cluster
    size = sum(len(json.dumps(o)) for o in full if o["kind"] == "Pod")
    small = sum(len(json.dumps(o)) for o in trimmed if o["kind"] == "Pod")
    assert small < size / 3
    again = _fatten(generate_cluster(40, 14, seed=5, now=NOW))
    assert full == again  # trim() built new dicts; the full objects are as the API returned them
    assert not any("managedFields" in o["metadata"] for o in trimmed)
    assert not any("images" in (o.get("status") or {}) for o in trimmed if o["kind"] == "Node")


def test_only_the_container_statuses_of_a_resize_are_kept(cluster: Any) -> None:
    """Statuses that repeat the spec change no count and are dropped; a resizing pod's are kept, and count."""
    full, trimmed = cluster
    kept = [t for t in trimmed if t["kind"] == "Pod" and "containerStatuses" in t.get("status", {})]
    resizing = [f for f in full if f["kind"] == "Pod" and any(
        c["type"] == "PodResizeInProgress" for c in f["status"]["conditions"])]
    assert resizing and {p["metadata"]["name"] for p in kept} == {p["metadata"]["name"] for p in resizing}
    assert all(parse_pod(t).cpu >= 2.0 for t in kept)
