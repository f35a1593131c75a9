"""Capacity, overhead and allocatable of a new node, as Karpenter's AWS provider computes them before launch.

Follows aws/karpenter-provider-aws pkg/providers/instancetype/types.go (`NewInstanceType`, `computeCapacity`,
`memory`, `pods`, `ENILimitedPods`, `ephemeralStorage`, `kubeReservedResources`, `evictionThreshold`) and the AMI
families' feature flags in pkg/providers/amifamily/. Allocatable = capacity - (kube-reserved + system-reserved +
eviction threshold), per resource, as kubelet reports it (docs/semantics.md "Instance types and allocatable").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

from api.catalog import InstanceType
from api.ec2nodeclass import EC2NodeClass, EC2NodeClassSpec, KubeletConfiguration
from api.instance_types.from_describe import eni_limited_pods
from api.quantity import QuantityError, format_cpu, format_memory, parse_cpu, parse_memory, parse_quantity

MI = 2**20
GI = 2**30
VM_MEMORY_OVERHEAD_PERCENT = 0.075  # Karpenter's --vm-memory-overhead-percent default
DEFAULT_FAMILY = "AL2023"
GRAVITON_CMA_MIB = 64  # arm64 types keep 64 MiB of CMA memory the kernel cannot hand out
# kube-reserved CPU: a share of each slice of the type's millicores (Bottlerocket's formula, which Karpenter uses)
_CPU_SLICES = ((0, 1000, 0.06), (1000, 2000, 0.01), (2000, 4000, 0.005), (4000, 1 << 31, 0.0025))
# Where each family puts the pods' filesystem, and its size when no mapping names it (amifamily/*.go)
_EPHEMERAL_DEVICE = {"AL2": "/dev/xvda", "AL2023": "/dev/xvda", "Bottlerocket": "/dev/xvdb",
                     "Windows2019": "/dev/sda1", "Windows2022": "/dev/sda1", "Windows2025": "/dev/sda1"}
_DEFAULT_VOLUME = {"Windows2019": 50 * GI, "Windows2022": 50 * GI, "Windows2025": 50 * GI}
DEFAULT_VOLUME_BYTES = 20 * GI


@dataclass(frozen=True, slots=True)
class Resources:
    """cpu in millicores, memory and ephemeral storage in bytes, pods as a count."""

    cpu_milli: int = 0
    memory: int = 0
    ephemeral: int = 0
    pods: int = 0

    def __add__(self, other: Resources) -> Resources:
        return Resources(self.cpu_milli + other.cpu_milli, self.memory + other.memory,
                         self.ephemeral + other.ephemeral, self.pods + other.pods)

    def minus(self, other: Resources) -> Resources:
        """Per resource, never below zero (a reservation larger than the node leaves nothing)."""
        return Resources(max(self.cpu_milli - other.cpu_milli, 0), max(self.memory - other.memory, 0),
                         max(self.ephemeral - other.ephemeral, 0), max(self.pods - other.pods, 0))

    def quantities(self) -> dict[str, str]:
        """As Kubernetes quantity strings (what a Node's status shows)."""
        return {"cpu": format_cpu(self.cpu_milli / 1000), "memory": format_memory(self.memory),
                "ephemeral-storage": format_memory(self.ephemeral), "pods": str(self.pods)}


@dataclass(frozen=True, slots=True)
class NodeResources:
    """What a new node of one type under one node class has: capacity, the three overheads, allocatable."""

    capacity: Resources
    kube_reserved: Resources
    system_reserved: Resources
    eviction: Resources

    @property
    def allocatable(self) -> Resources:
        return self.capacity.minus(self.kube_reserved + self.system_reserved + self.eviction)


@dataclass(frozen=True, slots=True)
class FamilyFlags:
    """Karpenter's amifamily FeatureFlags that shape allocatable."""

    eni_limited_memory_overhead: bool
    pods_per_core: bool
    eni_limited_pod_density: bool


def family_flags(family: str) -> FamilyFlags:
    """Bottlerocket reserves memory by max pods and ignores podsPerCore; Windows has no ENI-limited density."""
    if family == "Bottlerocket":
        return FamilyFlags(False, False, True)
    if family.startswith("Windows"):
        return FamilyFlags(False, True, False)
    return FamilyFlags(True, True, True)


def memory_capacity(it: InstanceType, overhead_percent: float = VM_MEMORY_OVERHEAD_PERCENT) -> int:
    """The type's memory less Graviton's CMA and the VM overhead, the overhead rounded up to a whole MiB."""
    mib = it.memory_mib - (GRAVITON_CMA_MIB if it.arch == "arm64" else 0)
    overhead_mib = math.ceil(mib * MI * overhead_percent / 1024 / 1024)
    return (mib - overhead_mib) * MI


def _eni_pods(it: InstanceType, reserved_enis: int) -> int:
    """ENI-limited pods; a hand-written type without ENI limits carries them in `pods` already."""
    if it.max_enis is None or it.ipv4_per_eni is None:
        return it.pods
    return eni_limited_pods(it.max_enis, it.ipv4_per_eni, reserved_enis)


def max_pods(it: InstanceType, kubelet: KubeletConfiguration | None, family: str, reserved_enis: int = 0) -> int:
    """kubelet.maxPods, else ENI-limited pods (110 for a family without ENI-limited density), capped by
    podsPerCore * vCPUs where the family honours it."""
    flags = family_flags(family)
    if kubelet is not None and kubelet.max_pods is not None:
        count = kubelet.max_pods
    elif flags.eni_limited_pod_density:
        count = _eni_pods(it, reserved_enis)
    else:
        count = 110
    per_core = kubelet.pods_per_core if kubelet is not None else None
    if per_core and per_core > 0 and flags.pods_per_core:
        count = min(per_core * int(it.cpu_cores), count)
    return count


def ephemeral_capacity(it: InstanceType, spec: EC2NodeClassSpec | None, family: str) -> int:
    """RAID0 instance store when asked for and present; else the root volume, the family's ephemeral device (or,
    for Custom, the last mapping) from the class's block device mappings; else the family's default volume."""
    if spec is not None and spec.instance_store_policy == "RAID0" and it.instance_storage_gb is not None:
        return it.instance_storage_gb * 10**9
    mappings = (spec.block_device_mappings if spec is not None else None) or []
    if mappings:
        root = next((m for m in mappings if m.root_volume), None)
        if root is not None and root.ebs is not None and root.ebs.volume_size:
            return parse_memory(root.ebs.volume_size)
        if family == "Custom":
            last = mappings[-1].ebs
            return parse_memory(last.volume_size) if last is not None and last.volume_size else DEFAULT_VOLUME_BYTES
        device = _EPHEMERAL_DEVICE.get(family)
        named = next((m for m in mappings if device and m.device_name == device), None)
        if named is not None and named.ebs is not None and named.ebs.volume_size:
            return parse_memory(named.ebs.volume_size)
    return _DEFAULT_VOLUME.get(family, DEFAULT_VOLUME_BYTES)


def kube_reserved_cpu_milli(vcpus: int) -> int:
    """The sum over Karpenter's CPU slices of the slice's share, each truncated to whole millicores."""
    cpu = vcpus * 1000
    total = 0
    for start, end, share in _CPU_SLICES:
        if cpu >= start:
            total += int((min(cpu, end) - start) * share)
    return total


def _reserved_map(values: dict[str, str] | None) -> dict[str, Decimal]:
    """A kubeReserved/systemReserved map's quantities; an entry that is no quantity (a CEL expression, honoured
    by Karpenter only behind its NodeClassCEL gate) is dropped, as Karpenter does with the gate off."""
    out: dict[str, Decimal] = {}
    for key, value in (values or {}).items():
        try:
            out[key] = parse_quantity(value)
        except QuantityError:
            continue
    return out


def _as_resources(values: dict[str, Decimal]) -> dict[str, int]:
    out = {}
    if "cpu" in values:
        out["cpu_milli"] = int(values["cpu"] * 1000)
    if "memory" in values:
        out["memory"] = math.ceil(values["memory"])
    if "ephemeral-storage" in values:
        out["ephemeral"] = math.ceil(values["ephemeral-storage"])
    return out


def eviction_signal(capacity: int, value: str) -> int:
    """A percentage of capacity rounded up (100% disables the threshold), or a quantity."""
    if value.endswith("%"):
        pct = float(value[:-1])
        return math.ceil(capacity / 100 * (0.0 if pct == 100 else pct))
    return parse_memory(value)


def node_resources(it: InstanceType, spec: EC2NodeClassSpec | None = None, family: str = DEFAULT_FAMILY,
                   overhead_percent: float = VM_MEMORY_OVERHEAD_PERCENT, reserved_enis: int = 0) -> NodeResources:
    """Capacity and overheads of a new node of `it` launched from a class with `spec` (None: an AL2023 class
    without a kubelet block or block device mappings)."""
    kubelet = spec.kubelet if spec is not None else None
    vcpus = int(it.cpu_cores)
    memory = memory_capacity(it, overhead_percent)
    ephemeral = ephemeral_capacity(it, spec, family)
    pods = max_pods(it, kubelet, family, reserved_enis)
    capacity = Resources(cpu_milli=int(parse_cpu(it.cpu) * 1000), memory=memory, ephemeral=ephemeral, pods=pods)
    # kube-reserved memory scales with the ENI-limited pods (no ENIs reserved) on families that say so
    overhead_pods = _eni_pods(it, 0) if family_flags(family).eni_limited_memory_overhead else pods
    kube = {"cpu_milli": kube_reserved_cpu_milli(vcpus), "memory": (11 * overhead_pods + 255) * MI,
            "ephemeral": GI}
    kube.update(_as_resources(_reserved_map(kubelet.kube_reserved if kubelet else None)))
    system = _as_resources(_reserved_map(kubelet.system_reserved if kubelet else None))
    hard = (kubelet.eviction_hard if kubelet else None) or {}
    eviction = Resources(
        memory=eviction_signal(memory, hard["memory.available"]) if "memory.available" in hard else 100 * MI,
        ephemeral=eviction_signal(ephemeral, hard.get("nodefs.available", "10%")))
    return NodeResources(capacity=capacity, kube_reserved=Resources(**kube), system_reserved=Resources(**system),
                         eviction=eviction)


def for_node_class(it: InstanceType, node_class: EC2NodeClass | None,
                   overhead_percent: float = VM_MEMORY_OVERHEAD_PERCENT) -> NodeResources:
    """`node_resources` under an EC2NodeClass (its spec and AMI family), or the AL2023 default without one."""
    if node_class is None:
        return node_resources(it, None, DEFAULT_FAMILY, overhead_percent)
    return node_resources(it, node_class.spec, node_class.ami_family, overhead_percent)


def extended_resources(it: InstanceType) -> dict[str, int]:
    """Device resources a node of `it` advertises (computeCapacity in types.go), those it has any of: GPUs by
    manufacturer, Neuron devices and their cores, Habana Gaudi, EFA interfaces."""
    by_maker: dict[str, int] = {}
    for gpu in it.gpus:
        by_maker[gpu.manufacturer] = by_maker.get(gpu.manufacturer, 0) + gpu.count
    out = {"nvidia.com/gpu": by_maker.get("NVIDIA", 0), "amd.com/gpu": by_maker.get("AMD", 0),
           "habana.ai/gaudi": by_maker.get("Habana", 0),
           "aws.amazon.com/neuron": sum(d.count for d in it.neuron_devices),
           "aws.amazon.com/neuroncore": (it.neuron_devices[0].count * (it.neuron_devices[0].cores or 0)
                                         if it.neuron_devices else 0),
           "vpc.amazonaws.com/efa": it.efa_interfaces}
    return {k: v for k, v in out.items() if v}
