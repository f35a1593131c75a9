"""planning/lifecycle/launch.py against docs/karpenter-reference.md §3: what a NodeClaim records
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
    # memory less Karpenter's VM overhead: 8192Mi - ceil(8192 * 0.075)=615 -> 7577Mi (not the type's 8Gi)
    assert s["capacity"] == {"cpu": "2", "memory": "7577Mi", "pods": "29", "ephemeral-storage": "20Gi"}
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


GI, MI = 2**30, 2**20
CLASS = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"},
         "spec": {"role": "NodeRole", "amiSelectorTerms": [{"alias": "al2023@latest"}],
                  "subnetSelectorTerms": [{"tags": {"k": "v"}}], "securityGroupSelectorTerms": [{"tags": {"k": "v"}}],
                  "blockDeviceMappings": [
                      {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": "50Gi"}},
                      {"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {"volumeSize": "100Gi"}}],
                  "kubelet": {"kubeReserved": {"memory": "1Gi"}, "systemReserved": {"cpu": "100m", "memory": "200Mi"},
                              "evictionHard": {"memory.available": "5%", "nodefs.available": "15%"}}}}


def test_capacity_and_allocatable_honour_the_node_class() -> None:
    """Ephemeral storage is the class's root volume (the mapping marked rootVolume, not the first one),
    memory is less the VM overhead at the catalog's percentage, and allocatable takes off the class's
    kube-reserved, system-reserved and eviction thresholds (types.go computeCapacity / evictionThreshold)."""
    from api.ec2nodeclass import load_ec2nodeclass
    from api.quantity import parse_cpu, parse_memory

    _, status = launch_patch(claim(), instance(), M5, NOW, node_class=load_ec2nodeclass(CLASS),
                             overhead_percent=0.1)
    assert status is not None
    cap, alloc = status["status"]["capacity"], status["status"]["allocatable"]
    memory = (8192 - 820) * MI  # 8192Mi - ceil(8192 * 0.1)
    assert (cap["cpu"], parse_memory(cap["memory"]), cap["ephemeral-storage"], cap["pods"]) == (
        "2", memory, "100Gi", "29")
    # cpu: 2000m - kube-reserved 60 + 10 (Karpenter's slices) - system-reserved 100
    assert round(parse_cpu(alloc["cpu"]) * 1000) == 1830
    # memory: the class's kube-reserved 1Gi replaces the computed one; eviction 5% of capacity, rounded up
    assert parse_memory(alloc["memory"]) == memory - GI - 200 * MI - -(-memory * 5 // 100)
    # ephemeral storage: kube-reserved 1Gi (Karpenter's default) and nodefs.available 15% of the 100Gi volume
    assert parse_memory(alloc["ephemeral-storage"]) == 100 * GI - GI - -(-100 * GI * 15 // 100)
    assert alloc["pods"] == "29"


def test_device_resources_are_recorded_and_zero_ones_left_out() -> None:
    from api.catalog import Accelerator

    g4 = InstanceType(name="g4dn.xlarge", cpu="4", memory="16Gi", pods=29,
                      gpus=(Accelerator(name="t4", manufacturer="NVIDIA", count=1),))
    _, status = launch_patch(claim(), instance(), g4, NOW)
    assert status is not None
    assert status["status"]["capacity"]["nvidia.com/gpu"] == status["status"]["allocatable"]["nvidia.com/gpu"] == "1"
    assert "amd.com/gpu" not in status["status"]["capacity"]
