"""Capacity and allocatable as the kubelet computes them on an EKS AMI (simulator/kubelet_resources.py), with
figures worked out by hand from nodeadm's formula (awslabs/amazon-eks-ami nodeadm/internal/kubelet/config.go)."""

from __future__ import annotations

from api.quantity import parse_cpu, parse_memory
from simulator.kubelet_resources import Machine, max_pods, node_resources, reserved_cpu_millicores

GI, MI = 2**30, 2**20
M5_LARGE = Machine(cpu=2, memory=8 * GI, ephemeral_storage=20 * GI, eni_pods=29)
M5_4XLARGE = Machine(cpu=16, memory=64 * GI, ephemeral_storage=20 * GI, eni_pods=234)


def test_cpu_reservation_steps() -> None:
    assert reserved_cpu_millicores(1) == 60  # 6% of the first core
    assert reserved_cpu_millicores(2) == 70  # + 1% of the second
    assert reserved_cpu_millicores(4) == 80  # + 0.5% of the third and fourth
    assert reserved_cpu_millicores(16) == 110  # + 0.25% of 12 more cores = 30m


def test_defaults_without_a_kubelet_config() -> None:
    capacity, allocatable = node_resources(M5_LARGE, {})
    assert capacity == {"cpu": "2", "memory": f"{8 * GI // 1024}Ki", "ephemeral-storage": f"{20 * GI // 1024}Ki",
                        "pods": "29"}
    assert parse_cpu(allocatable["cpu"]) == 2 - 0.070
    kube_reserved = (11 * 29 + 255) * MI  # 574Mi
    assert parse_memory(allocatable["memory"]) == 8 * GI - kube_reserved - 100 * MI
    assert parse_memory(allocatable["ephemeral-storage"]) == 20 * GI - GI - int(20 * GI * 0.10)
    assert allocatable["pods"] == "29"


def test_max_pods_from_the_config_leaves_nodeadms_memory_reservation() -> None:
    capacity, allocatable = node_resources(M5_LARGE, {"maxPods": 110})
    assert capacity["pods"] == allocatable["pods"] == "110"
    assert parse_memory(allocatable["memory"]) == 8 * GI - (11 * 29 + 255) * MI - 100 * MI
    _, bottlerocket = node_resources(M5_LARGE, {"maxPods": 110}, reserve_for_config_pods=True)
    assert parse_memory(bottlerocket["memory"]) == 8 * GI - (11 * 110 + 255) * MI - 100 * MI


def test_reservations_and_eviction_from_the_config() -> None:
    config = {"kubeReserved": {"cpu": "200m", "memory": "1Gi"}, "systemReserved": {"cpu": "100m", "memory": "512Mi",
                                                                                    "ephemeral-storage": "2Gi"},
              "evictionHard": {"memory.available": "5%", "nodefs.available": "1Gi"}}
    _, allocatable = node_resources(M5_4XLARGE, config)
    assert parse_cpu(allocatable["cpu"]) == 16 - 0.3
    assert parse_memory(allocatable["memory"]) == 64 * GI - GI - 512 * MI - int(64 * GI * 0.05)
    # kubeReserved without ephemeral-storage keeps nodeadm's 1Gi default for it (the drop-in overlays by key)
    assert parse_memory(allocatable["ephemeral-storage"]) == 20 * GI - GI - 2 * GI - GI
    assert allocatable["pods"] == "234"


def test_pods_per_core_caps_max_pods() -> None:
    assert max_pods(M5_LARGE, {"podsPerCore": 10}) == 20
    assert max_pods(M5_LARGE, {"podsPerCore": 100, "maxPods": 50}) == 50


def test_allocatable_never_negative() -> None:
    _, allocatable = node_resources(Machine(cpu=1, memory=256 * MI, ephemeral_storage=GI, eni_pods=4), {})
    assert allocatable["memory"] == "0Ki" and allocatable["ephemeral-storage"] == "0Ki"
