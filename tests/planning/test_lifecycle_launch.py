"""planning/lifecycle/launch.py against karpenter-behaviour.md "NodeClaim lifecycle" §1: what a NodeClaim records
once its instance exists (providerID aws:///<zone>/<id>, imageID, capacity, labels with the claim's winning,
Launched=True), and nothing once it already says so."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from api import labels as L
from api.catalog import InstanceType
from planning.lifecycle.conditions import condition
from planning.lifecycle.launch import capacity_type, launch_patch, launched_labels, provider_id

NOW = datetime(2026, 11, 27, 4, 0, 30, tzinfo=UTC)
M5 = InstanceType(name="m5.large", cpu="2", memory="8Gi", pods=29)


def claim(labels: dict[str, str] | None = None, *, launched: bool = False, pid: str = "") -> dict[str, Any]:
    conds = []
    if launched:
        conds.append({"type": "Launched", "status": "True", "reason": "Launched", "message": "",
                      "lastTransitionTime": "2026-11-27T04:00:20Z"})
    status: dict[str, Any] = {"conditions": conds}
    if pid:
        status["providerID"] = pid
    return {"metadata": {"name": "default-abc", "uid": "uid-1", "creationTimestamp": "2026-11-27T04:00:00Z",
                         "labels": labels if labels is not None else {"karpenter.sh/nodepool": "default"}},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}},
            "status": status}


def instance(*, spot: bool = False, image: str | None = "ami-0123456789abcdef0") -> dict[str, Any]:
    inst: dict[str, Any] = {"InstanceId": "i-0abc123", "InstanceType": "m5.large",
                            "Placement": {"AvailabilityZone": "us-east-1b"}, "State": {"Name": "pending"}}
    if image:
        inst["ImageId"] = image
    if spot:
        inst["InstanceLifecycle"] = "spot"
    return inst


def test_provider_id_format() -> None:
    assert provider_id("us-east-1b", "i-0abc123") == "aws:///us-east-1b/i-0abc123"


def test_capacity_type_from_instance_lifecycle() -> None:
    assert capacity_type(instance(spot=True)) == L.CAPACITY_SPOT
    assert capacity_type(instance()) == L.CAPACITY_ON_DEMAND
    assert capacity_type({**instance(), "InstanceLifecycle": "scheduled"}) == L.CAPACITY_ON_DEMAND


def test_launch_records_provider_id_image_and_launched() -> None:
    _, status = launch_patch(claim(), instance(), M5, NOW)
    assert status is not None
    s = status["status"]
    assert s["providerID"] == "aws:///us-east-1b/i-0abc123"
    assert s["imageID"] == "ami-0123456789abcdef0"
    launched = condition({"status": s}, "Launched")
    assert launched is not None and launched["status"] == "True"
    assert launched["lastTransitionTime"] == "2026-11-27T04:00:30Z"
    assert s["capacity"] == {"cpu": "2", "memory": "8Gi", "pods": "29", "ephemeral-storage": "20Gi"}
    assert set(s["allocatable"]) >= {"cpu", "memory", "pods"}


def test_launch_labels_zone_region_type_and_capacity_type() -> None:
    meta, _ = launch_patch(claim(), instance(spot=True), M5, NOW)
    assert meta is not None
    labels = meta["metadata"]["labels"]
    assert labels[L.ZONE_LABEL] == "us-east-1b"
    assert labels[L.REGION_LABEL] == "us-east-1"
    assert labels[L.INSTANCE_TYPE_LABEL] == "m5.large"
    assert labels[L.CAPACITY_TYPE_LABEL] == L.CAPACITY_SPOT
    assert labels["karpenter.k8s.aws/instance-family"] == "m5"
    assert labels["karpenter.sh/nodepool"] == "default"
    assert all(isinstance(v, str) for v in labels.values())


def test_on_demand_instance_labels_on_demand() -> None:
    meta, _ = launch_patch(claim(), instance(), M5, NOW)
    assert meta is not None and meta["metadata"]["labels"][L.CAPACITY_TYPE_LABEL] == L.CAPACITY_ON_DEMAND


def test_capacity_type_given_by_the_launcher_wins_over_the_description() -> None:
    meta, status = launch_patch(claim(), instance(), M5, NOW, L.CAPACITY_SPOT)
    assert meta is not None and meta["metadata"]["labels"][L.CAPACITY_TYPE_LABEL] == L.CAPACITY_SPOT
    assert status is not None and status["status"]["capacity"]["cpu"] == "2"


def test_claim_labels_win_over_instance_labels() -> None:
    mine = {"karpenter.sh/nodepool": "default", L.CAPACITY_TYPE_LABEL: L.CAPACITY_ON_DEMAND,
            L.ZONE_LABEL: "us-east-1b", "team": "a", "karpenter.k8s.aws/instance-family": "custom"}
    labels = launched_labels(claim(mine), instance(spot=True), M5)
    for k, v in mine.items():
        assert labels[k] == v


def test_unknown_instance_type_still_records_the_launch() -> None:
    meta, status = launch_patch(claim(), instance(image=None), None, NOW)
    assert status is not None
    s = status["status"]
    assert s["providerID"] == "aws:///us-east-1b/i-0abc123"
    assert "imageID" not in s and "capacity" not in s
    assert meta is not None and meta["metadata"]["labels"][L.INSTANCE_TYPE_LABEL] == "m5.large"


def test_existing_status_fields_and_conditions_are_kept() -> None:
    c = claim()
    c["status"]["conditions"].append({"type": "Drifted", "status": "False", "reason": "NotDrifted", "message": "",
                                      "lastTransitionTime": "2026-11-27T04:00:05Z"})
    _, status = launch_patch(c, instance(), M5, NOW)
    assert status is not None
    types = [x["type"] for x in status["status"]["conditions"]]
    assert types == ["Drifted", "Launched", "Ready"]


def test_the_launch_record_carries_the_root_ready_unknown_until_registered_and_initialized() -> None:
    _, status = launch_patch(claim(), instance(), M5, NOW)
    assert status is not None
    ready = condition(status, "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "Unknown", "ReconcilingDependents", "Registered=Unknown, Initialized=Unknown")


def test_labels_already_recorded_give_no_metadata_patch() -> None:
    c = claim()
    meta, _ = launch_patch(c, instance(), M5, NOW)
    assert meta is not None
    c["metadata"]["labels"] = meta["metadata"]["labels"]
    again, status = launch_patch(c, instance(), M5, NOW)
    assert again is None and status is not None


def test_nothing_once_launched_with_provider_id() -> None:
    assert launch_patch(claim(launched=True, pid="aws:///us-east-1b/i-0abc123"), instance(), M5, NOW) == (None, None)


def test_launched_without_provider_id_is_recorded_again() -> None:
    _, status = launch_patch(claim(launched=True), instance(), M5, NOW)
    assert status is not None and status["status"]["providerID"] == "aws:///us-east-1b/i-0abc123"
    launched = condition({"status": status["status"]}, "Launched")
    assert launched is not None and launched["lastTransitionTime"] == "2026-11-27T04:00:20Z"
