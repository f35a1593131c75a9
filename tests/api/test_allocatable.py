"""Allocatable of a new node as Karpenter computes it (api/allocatable.py), checked against hand-derived values.

Each row of EXPECTED derives its numbers from Karpenter's formulas (aws/karpenter-provider-aws
pkg/providers/instancetype/types.go) and the type's DescribeInstanceTypes item (moto's copy of AWS's data), for
an AL2023 class without a kubelet block, vm-memory-overhead-percent 0.075:
  capacity memory = (MiB - 64 on arm64) - ceil((MiB - 64 on arm64) * 0.075)     [Mi]
  pods            = ENIs of the default card * (IPv4 per ENI - 1) + 2
  kube-reserved   = cpu: 6% of the 1st core + 1% of the 2nd + 0.5% of cores 3-4 + 0.25% above;
                    memory: 11 * pods + 255 Mi;  eviction memory.available = 100Mi
  allocatable     = capacity - kube-reserved - eviction
"""

from __future__ import annotations

import pytest
from support.ec2_types_data import describe_item

from api.allocatable import (
    MI,
    eviction_signal,
    kube_reserved_cpu_milli,
    max_pods,
    node_resources,
)
from api.ec2nodeclass import EC2NodeClassSpec
from api.instance_types.from_describe import from_describe

# name: (cpu millicores, memory MiB, pods)
EXPECTED = {
    # m5.large: 2 vCPU, 8192 MiB, 3 ENIs x 10 IPv4.  pods 3*9+2 = 29.  memory 8192 - ceil(614.4)=615 -> 7577,
    # less 11*29+255 = 574 and 100 -> 6903.  cpu 2000 - (60 + 10) = 1930.
    "m5.large": (1930, 6903, 29),
    # c6g.xlarge (Graviton): 4 vCPU, 8192 MiB, 4 ENIs x 15.  pods 4*14+2 = 58.  memory 8192-64 = 8128,
    # - ceil(609.6)=610 -> 7518, less 11*58+255 = 893 and 100 -> 6525.  cpu 4000 - (60+10+10) = 3920.
    "c6g.xlarge": (3920, 6525, 58),
    # r6i.4xlarge: 16 vCPU, 131072 MiB, 8 ENIs x 30.  pods 8*29+2 = 234.  memory 131072 - ceil(9830.4)=9831
    # -> 121241, less 11*234+255 = 2829 and 100 -> 118312.  cpu 16000 - (60+10+10+12000*0.25%=30) = 15890.
    "r6i.4xlarge": (15890, 118312, 234),
    # t3.medium: 2 vCPU, 4096 MiB, 3 ENIs x 6.  pods 3*5+2 = 17.  memory 4096 - ceil(307.2)=308 -> 3788,
    # less 11*17+255 = 442 and 100 -> 3246.  cpu 1930 (as m5.large).
    "t3.medium": (1930, 3246, 17),
    # p4d.24xlarge: 96 vCPU, 1179648 MiB, default network card 15 ENIs x 50 (the other 3 cards do not count).
    # pods 15*49+2 = 737.  memory 1179648 - ceil(88473.6)=88474 -> 1091174, less 11*737+255 = 8362 and 100
    # -> 1082712.  cpu 96000 - (60+10+10+92000*0.25%=230) = 95690.
    "p4d.24xlarge": (95690, 1082712, 737),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_allocatable_matches_karpenter(name: str) -> None:
    it = from_describe(describe_item(name))
    assert it is not None
    alloc = node_resources(it).allocatable
    cpu, mem_mib, pods = EXPECTED[name]
    assert alloc.cpu_milli == cpu
    assert abs(alloc.memory - mem_mib * MI) <= MI
    assert alloc.pods == pods


def test_default_ephemeral_storage_is_20gi_less_1gi_and_ten_percent() -> None:
    """AL2023's /dev/xvda 20Gi; kube-reserved 1Gi; nodefs.available 10% = 2Gi."""
    res = node_resources(from_describe(describe_item("m5.large")))
    assert res.capacity.ephemeral == 20 * 2**30
    assert res.allocatable.ephemeral == 17 * 2**30


def test_kube_reserved_cpu_slices() -> None:
    assert [kube_reserved_cpu_milli(n) for n in (1, 2, 3, 4, 8, 64)] == [60, 70, 75, 80, 90, 230]


def test_kubelet_block_overrides() -> None:
    """maxPods replaces ENI pods (kube-reserved memory still from ENI pods on AL2023); kubeReserved and
    systemReserved add per key; evictionHard in percent of the VM-overhead-reduced memory."""
    it = from_describe(describe_item("m5.large"))
    spec = EC2NodeClassSpec.model_validate({"kubelet": {
        "maxPods": 50, "kubeReserved": {"cpu": "200m"}, "systemReserved": {"memory": "300Mi", "cpu": "100m"},
        "evictionHard": {"memory.available": "5%", "nodefs.available": "15%"},
        "evictionSoft": {"memory.available": "20%"}}})
    res = node_resources(it, spec)
    assert res.capacity.pods == 50
    assert res.kube_reserved.memory == 574 * MI  # 11*29+255: ENI-limited, not maxPods
    assert res.allocatable.cpu_milli == 2000 - 200 - 100
    # evictionSoft does not count (aws/karpenter-provider-aws#8565: only evictionHard shapes allocatable)
    assert res.eviction.memory == -(-7577 * MI * 5 // 100)
    assert res.allocatable.memory == 7577 * MI - 574 * MI - 300 * MI - res.eviction.memory
    assert res.eviction.ephemeral == eviction_signal(20 * 2**30, "15%")


def test_pods_per_core_caps_and_bottlerocket_ignores_it() -> None:
    it = from_describe(describe_item("m5.large"))
    spec = EC2NodeClassSpec.model_validate({"kubelet": {"podsPerCore": 4}})
    assert max_pods(it, spec.kubelet, "AL2023") == 8
    assert max_pods(it, spec.kubelet, "Bottlerocket") == 29
    assert max_pods(it, None, "Windows2022") == 110


def test_bottlerocket_reserves_memory_by_max_pods() -> None:
    it = from_describe(describe_item("m5.large"))
    spec = EC2NodeClassSpec.model_validate({"kubelet": {"maxPods": 110}})
    assert node_resources(it, spec, "Bottlerocket").kube_reserved.memory == (11 * 110 + 255) * MI


def test_ephemeral_from_block_devices_and_raid0() -> None:
    it = from_describe(describe_item("p4d.24xlarge"))
    root = EC2NodeClassSpec.model_validate({"blockDeviceMappings": [
        {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": "50Gi"}},
        {"deviceName": "/dev/xvdc", "ebs": {"volumeSize": "80Gi"}, "rootVolume": True}]})
    assert node_resources(it, root).capacity.ephemeral == 80 * 2**30
    named = EC2NodeClassSpec.model_validate({"blockDeviceMappings": [
        {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "100Gi"}}]})
    assert node_resources(it, named).capacity.ephemeral == 100 * 2**30
    assert node_resources(it, named, "Bottlerocket").capacity.ephemeral == 20 * 2**30
    raid = EC2NodeClassSpec.model_validate({"instanceStorePolicy": "RAID0"})
    assert node_resources(it, raid).capacity.ephemeral == 8000 * 10**9
    no_store = from_describe(describe_item("m5.large"))
    assert node_resources(no_store, raid).capacity.ephemeral == 20 * 2**30


def test_overhead_percent_is_configurable() -> None:
    it = from_describe(describe_item("m5.large"))
    assert node_resources(it, overhead_percent=0.0).capacity.memory == 8192 * MI


def test_hand_written_type_uses_its_pods_as_eni_limit() -> None:
    """A bundled-catalog type without ENI fields: its `pods` is the ENI-limited count."""
    from api.catalog import InstanceType

    it = InstanceType(name="m5.large", cpu="2", memory="8Gi", pods=29)
    assert node_resources(it).allocatable == node_resources(from_describe(describe_item("m5.large"))).allocatable
