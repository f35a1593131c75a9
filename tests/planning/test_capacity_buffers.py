"""CapacityBuffer -> virtual pods, and what they do to provisioning and consolidation (docs/semantics.md §20).

Pure: snapshots in memory, no servers. The buffer rules are Karpenter v1.14's (pkg/controllers/capacitybuffer,
pkg/state/virtualpods, pkg/controllers/provisioning/buffers.go, disruption/emptiness.go).
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from api import capacity_buffer as cb
from api import events
from api.snapshot import Snapshot, load_snapshot
from planning.capacity_buffers import (
    desired_replicas,
    limit_replicas,
    percentage_replicas,
    provisioning_condition,
    resolve,
    status_body,
    status_changed,
    virtual_pods,
)
from planning.cluster import Cluster
from planning.planner.buffer_report import buffer_rows
from planning.planner.plan import plan
from planning.provisioning.provisioner import decide

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
AT = datetime(2026, 11, 22, 20, 0, tzinfo=UTC)
CHUNK = {"containers": [{"name": "pause", "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}]}


def buffer(name: str = "headroom", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": cb.API_VERSION, "kind": cb.KIND,
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "generation": 1},
            "spec": spec or {"podTemplateRef": {"name": "chunk"}, "replicas": 1}}


def template(name: str = "chunk", spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PodTemplate",
            "metadata": {"name": name, "namespace": "default", "generation": 3},
            "template": {"metadata": {"labels": {"app": "headroom"}}, "spec": spec or CHUNK}}


def deployment(replicas: int | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"metadata": {"labels": {"app": "web"}}, "spec": CHUNK}}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
            "spec": spec}


def model(obj: dict[str, Any]) -> cb.CapacityBuffer:
    return cb.CapacityBuffer.model_validate(obj)


# ---- the API's rules ------------------------------------------------------------------------------------------

def test_the_spec_rules_refuse_both_refs_and_a_template_without_a_count() -> None:
    with pytest.raises(ValidationError, match=cb.ONE_REF_MESSAGE):
        model(buffer(podTemplateRef={"name": "a"}, scalableRef={"kind": "Deployment", "name": "b"}, replicas=1))
    with pytest.raises(ValidationError, match=cb.PODTEMPLATE_NEEDS_COUNT_MESSAGE):
        model(buffer(podTemplateRef={"name": "a"}))
    with pytest.raises(ValidationError):
        model(buffer(podTemplateRef={"name": "a"}, replicas=-1))
    assert model(buffer(podTemplateRef={"name": "a"}, limits={"cpu": "4"})).spec.provisioning_strategy == \
        cb.ACTIVE_CAPACITY


# ---- how many chunks ------------------------------------------------------------------------------------------

def test_percentage_rounds_up_and_is_at_least_one() -> None:
    assert percentage_replicas(10, 20) == 2
    assert percentage_replicas(10, 25) == 3
    assert percentage_replicas(3, 1) == 1
    assert percentage_replicas(0, 50) == 0
    assert percentage_replicas(10, 0) == 0


def test_replicas_and_percentage_take_the_larger_and_limits_cap_them() -> None:
    spec = model(buffer(scalableRef={"kind": "Deployment", "name": "web"}, replicas=1, percentage=50)).spec
    assert desired_replicas(spec, CHUNK, 10) == 5  # max(1, ceil(10 x 50%)), as Karpenter's computeReplicas
    capped = model(buffer(scalableRef={"kind": "Deployment", "name": "web"}, replicas=8,
                          limits={"cpu": "3500m", "memory": "100Gi"})).spec
    assert desired_replicas(capped, CHUNK, None) == 3  # floor(3.5 / 1): the tightest resource wins
    only_limits = model(buffer(podTemplateRef={"name": "chunk"}, limits={"memory": "9Gi"})).spec
    assert desired_replicas(only_limits, CHUNK, None) == 4  # floor(9Gi / 2Gi)


def test_limits_on_a_resource_the_chunk_does_not_request_do_not_count() -> None:
    assert limit_replicas({"nvidia.com/gpu": "4"}, CHUNK) is None
    gpu = {"containers": [{"name": "g", "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "1"}}}]}
    assert limit_replicas({"nvidia.com/gpu": "2", "cpu": "10"}, gpu) == 2


# ---- resolution and the virtual pods ------------------------------------------------------------------------

def test_a_missing_template_or_workload_is_not_ready_with_karpenters_reason() -> None:
    missing = resolve(model(buffer()), [])
    assert (missing.ready, missing.reason, missing.replicas) == (False, cb.REASON_POD_TEMPLATE_NOT_FOUND, 0)
    no_workload = resolve(model(buffer(scalableRef={"kind": "Deployment", "name": "web"}, replicas=1)), [])
    assert no_workload.reason == cb.REASON_SCALABLE_REF_NOT_FOUND
    odd = resolve(model(buffer(scalableRef={"apiGroup": "batch", "kind": "Job", "name": "j"}, replicas=1)), [])
    assert (odd.ready, odd.reason) == (False, cb.REASON_RESOLUTION_FAILED)
    assert virtual_pods(missing) == virtual_pods(odd) == []


def test_a_scalable_ref_takes_the_workloads_template_and_replicas() -> None:
    res = resolve(model(buffer(scalableRef={"kind": "Deployment", "name": "web"}, percentage=20)), [deployment(10)])
    assert (res.ready, res.replicas, res.pod_template) == (True, 2, None)
    defaulted = resolve(model(buffer(scalableRef={"kind": "Deployment", "name": "web"}, percentage=20)),
                        [deployment(None)])
    assert defaulted.replicas == 1  # spec.replicas unset means 1, as the API server defaults it


def test_virtual_pods_have_the_chunks_shape_lowest_priority_and_no_claims() -> None:
    spec = copy.deepcopy(CHUNK)
    spec["nodeName"] = "somewhere"
    spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "x"}}, {"name": "tmp", "emptyDir": {}}]
    spec["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/d"}, {"name": "tmp", "mountPath": "/t"}]
    res = resolve(model(buffer(podTemplateRef={"name": "chunk"}, replicas=2)), [template(spec=spec)])
    pods = virtual_pods(res)
    assert [p["metadata"]["name"] for p in pods] == ["capacity-buffer-headroom-1", "capacity-buffer-headroom-2"]
    assert [p["metadata"]["uid"] for p in pods] == ["uid-headroom-1", "uid-headroom-2"]
    first = pods[0]
    assert first["metadata"]["labels"] == {"app": "headroom"}
    assert cb.is_virtual(first["metadata"]["annotations"])
    assert cb.buffer_key(first["metadata"]["annotations"]) == "default/headroom"
    assert first["spec"]["priority"] == cb.VIRTUAL_POD_PRIORITY and "nodeName" not in first["spec"]
    assert [v["name"] for v in first["spec"]["volumes"]] == ["tmp"]
    assert [m["name"] for m in first["spec"]["containers"][0]["volumeMounts"]] == ["tmp"]
    assert spec["nodeName"] == "somewhere"  # the template is not changed


def test_another_strategy_keeps_no_headroom() -> None:
    obj = buffer(podTemplateRef={"name": "chunk"}, replicas=2, provisioningStrategy="example.com/standby")
    res = resolve(model(obj), [template()])
    assert res.ready and res.replicas == 2 and virtual_pods(res) == []
    (row,) = buffer_rows([obj, template()], {})
    assert row["reason"] == "OtherStrategy"


def test_virtual_pods_join_the_clusters_pending_pods_only() -> None:
    snap = load_snapshot(EXAMPLES / "plan-capacity-buffer.yaml")
    cluster = Cluster.from_snapshot(snap)
    assert [(p.key, p.virtual, p.cpu) for p in cluster.pending] == [("default/capacity-buffer-headroom-1", True, 1.0)]
    assert all(not p.virtual for n in cluster.nodes for p in n.pods)


# ---- provisioning ---------------------------------------------------------------------------------------------

def _snapshot_with(*extra: dict[str, Any], base: str = "plan-empty.yaml") -> Snapshot:
    snap = load_snapshot(EXAMPLES / base)
    return Snapshot.from_objects([*snap.to_objects(), *extra])


def test_headroom_that_fits_an_existing_node_launches_nothing_and_names_no_pod() -> None:
    decision = decide(_snapshot_with(buffer(), template()), at=AT)
    assert decision.launches == [] and decision.scheduled == {} and decision.unservable == []
    assert decision.headroom["default/headroom"].to_public() == {"existing": {"node-b": 1}, "new": 0, "failed": 0}


def test_headroom_beyond_the_cluster_launches_a_node_for_no_real_pod() -> None:
    decision = decide(_snapshot_with(buffer(podTemplateRef={"name": "chunk"}, replicas=3), template()), at=AT)
    room = decision.headroom["default/headroom"]
    assert (sum(room.existing.values()), room.new, room.failed) == (1, 2, 0)
    assert decision.launches and all(launch.pods == [] for launch in decision.launches)
    assert not any(k.startswith("default/capacity-buffer-") for k in [*decision.scheduled, *decision.nominated])


def test_headroom_over_the_pools_limits_has_no_place_and_warns_no_pool() -> None:
    objs = load_snapshot(EXAMPLES / "plan-empty.yaml").to_objects()
    pool = next(o for o in objs if o["kind"] == "NodePool")
    pool["spec"]["limits"] = {"cpu": "4"}  # the two m5.large already use it
    snap = Snapshot.from_objects([*objs, buffer(podTemplateRef={"name": "chunk"}, replicas=3), template()])
    decision = decide(snap, at=AT)
    room = decision.headroom["default/headroom"]
    assert (sum(room.existing.values()), room.new, room.failed) == (1, 0, 2)
    assert decision.launches == [] and decision.unservable == [] and decision.pools_at_limit == {}


def test_a_real_batch_takes_the_room_a_chunk_holds() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "late", "namespace": "default", "uid": "uid-late"},
           "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
           "status": {"phase": "Pending"}}
    snap = _snapshot_with(buffer(), template(), pod)
    real = decide(snap, pods=["uid-late"], at=AT)
    assert real.launches == [] and real.scheduled == {"default/late": "node-b"}  # not launched past the chunk
    chunks = decide(snap, pods=["uid-headroom-1"], at=AT)
    assert chunks.headroom["default/headroom"].new == 1  # the real pod took node-b: the headroom is launched again


# ---- consolidation --------------------------------------------------------------------------------------------

def test_emptiness_keeps_the_node_holding_a_buffers_chunk() -> None:
    assert [c.nodes[0] for c in plan(load_snapshot(EXAMPLES / "plan-empty.yaml"), AT).commands] == ["node-b"]
    result = plan(load_snapshot(EXAMPLES / "plan-capacity-buffer.yaml"), AT)
    assert result.commands == []
    blocked = {b.node: b.reason for b in result.blocked}
    assert blocked["node-b"] == events.has_buffer_pods("node-b")
    assert blocked["node-a"] == events.buffer_headroom("default/headroom", "node-b")


def test_a_buffer_with_room_elsewhere_does_not_block_emptiness() -> None:
    small = template(spec={"containers": [{"name": "p", "resources": {"requests": {"cpu": "100m"}}}]})
    result = plan(_snapshot_with(buffer(), small), AT)
    assert [c.nodes[0] for c in result.commands] == ["node-b"]  # node-a has room for a 100m chunk


# ---- status ---------------------------------------------------------------------------------------------------

def test_provisioning_condition_follows_where_the_chunks_went() -> None:
    res = resolve(model(buffer(podTemplateRef={"name": "chunk"}, replicas=2)), [template()])
    assert provisioning_condition(res, 2)["reason"] == cb.REASON_FITS_EXISTING
    needs = provisioning_condition(res, 1, new=1)
    assert (needs["status"], needs["reason"]) == ("False", cb.REASON_REQUIRES_NEW)
    assert provisioning_condition(res, None) is None
    empty = resolve(model(buffer(podTemplateRef={"name": "chunk"}, replicas=0)), [template()])
    assert provisioning_condition(empty, 0)["reason"] == cb.REASON_EMPTY
    assert provisioning_condition(resolve(model(buffer()), []), 0)["reason"] == cb.REASON_NOT_READY


def test_an_unchanged_status_owes_no_write_and_keeps_its_transition_time() -> None:
    res = resolve(model(buffer()), [template()])
    body = status_body(res, provisioning_condition(res, 1), "2026-11-22T20:00:00Z")
    assert body["replicas"] == 1 and body["podTemplateRef"] == {"name": "chunk"} and body["podTemplateGeneration"] == 3
    assert status_changed(res, body)
    stored = {**buffer(), "status": {k: v for k, v in body.items() if v is not None}}
    again = resolve(model(stored), [template()])
    later = status_body(again, provisioning_condition(again, 1), "2026-11-22T21:00:00Z")
    assert not status_changed(again, later)
    assert {c["lastTransitionTime"] for c in later["conditions"]} == {"2026-11-22T20:00:00Z"}
