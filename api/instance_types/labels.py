"""The well-known labels of an instance type, as Karpenter's AWS provider computes them.

Follows `computeRequirements` in aws/karpenter-provider-aws pkg/providers/instancetype/types.go and the label
names of pkg/apis/v1/labels.go. A label whose source field is unknown (a hand-written catalog without the
discovery fields) is left out, as Karpenter leaves out a label the DescribeInstanceTypes item lacks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from api import labels as L


class DeviceFields(Protocol):
    """What the labels read of a GPU, inference accelerator or Neuron device (api.catalog.Accelerator)."""

    name: str
    manufacturer: str
    count: int
    memory_mib: int | None


class TypeFields(Protocol):
    """What the labels read of an instance type: api.catalog.InstanceType, which imports this module for its
    `labels` (so this module names the fields instead of importing the model back)."""

    name: str
    arch: str
    cpu_cores: float
    memory_mib: int
    cpu_manufacturer: str | None
    sustained_clock_speed_ghz: float | None
    ebs_bandwidth_mbps: int | None
    network_bandwidth_mbps: int | None
    local_nvme: bool
    instance_storage_gb: int | None
    hypervisor: str | None
    encryption_in_transit: bool
    nitro_enclaves: bool
    gpus: Sequence[DeviceFields]
    inference_accelerators: Sequence[DeviceFields]
    neuron_devices: Sequence[DeviceFields]


GROUP = "karpenter.k8s.aws"
CATEGORY = f"{GROUP}/instance-category"
FAMILY = f"{GROUP}/instance-family"
GENERATION = f"{GROUP}/instance-generation"
SIZE = f"{GROUP}/instance-size"
CAPABILITY_FLEX = f"{GROUP}/instance-capability-flex"
CPU = f"{GROUP}/instance-cpu"
CPU_MANUFACTURER = f"{GROUP}/instance-cpu-manufacturer"
CPU_CLOCK_MHZ = f"{GROUP}/instance-cpu-sustained-clock-speed-mhz"
MEMORY = f"{GROUP}/instance-memory"
EBS_BANDWIDTH = f"{GROUP}/instance-ebs-bandwidth"
NETWORK_BANDWIDTH = f"{GROUP}/instance-network-bandwidth"
LOCAL_NVME = f"{GROUP}/instance-local-nvme"
HYPERVISOR = f"{GROUP}/instance-hypervisor"
ENCRYPTION_IN_TRANSIT = f"{GROUP}/instance-encryption-in-transit-supported"
NITRO_ENCLAVES = f"{GROUP}/nitro-sandbox"
TENANCY = f"{GROUP}/instance-tenancy"
GPU_NAME = f"{GROUP}/instance-gpu-name"
GPU_MANUFACTURER = f"{GROUP}/instance-gpu-manufacturer"
GPU_COUNT = f"{GROUP}/instance-gpu-count"
GPU_MEMORY = f"{GROUP}/instance-gpu-memory"
ACCELERATOR_NAME = f"{GROUP}/instance-accelerator-name"
ACCELERATOR_MANUFACTURER = f"{GROUP}/instance-accelerator-manufacturer"
ACCELERATOR_COUNT = f"{GROUP}/instance-accelerator-count"

# Keys Karpenter knows for every type: a requirement on one of them is judged against the type, never taken as
# a custom label the pool sets on its nodes (absent on a type = DoesNotExist, so `In` fails and `NotIn` passes).
WELL_KNOWN_TYPE_KEYS = frozenset({
    L.INSTANCE_TYPE_LABEL, L.ARCH_LABEL, L.OS_LABEL, CATEGORY, FAMILY, GENERATION, SIZE, CAPABILITY_FLEX, CPU,
    CPU_MANUFACTURER, CPU_CLOCK_MHZ, MEMORY, EBS_BANDWIDTH, NETWORK_BANDWIDTH, LOCAL_NVME, HYPERVISOR,
    ENCRYPTION_IN_TRANSIT, NITRO_ENCLAVES, TENANCY, GPU_NAME, GPU_MANUFACTURER, GPU_COUNT, GPU_MEMORY,
    ACCELERATOR_NAME, ACCELERATOR_MANUFACTURER, ACCELERATOR_COUNT,
})

# Karpenter's instanceTypeScheme: category letters, an optional "-<n>tb" (u-6tb1), then the generation digits.
_SCHEME = re.compile(r"(^[a-z]+)(\-[0-9]+tb)?([0-9]+).*\.")


def kabob(text: str) -> str:
    """Karpenter's lowerKabobCase: "NVIDIA A100" -> "nvidia-a100"."""
    return text.replace(" ", "-").lower()


def _bool(value: bool) -> str:
    return "true" if value else "false"


def name_labels(name: str) -> dict[str, str]:
    """Category, generation, family, size and flex capability from the type's name alone."""
    out: dict[str, str] = {}
    m = _SCHEME.match(name)
    if m:
        out[CATEGORY] = m.group(1)
        out[GENERATION] = m.group(3)
    parts = name.split(".")
    if len(parts) == 2:
        out[FAMILY], out[SIZE] = parts
    out[CAPABILITY_FLEX] = _bool("-flex" in parts[0])
    return out


def _hardware_labels(it: TypeFields) -> dict[str, str]:
    """Processor, storage, network and security labels; each only when discovery knew its source."""
    out: dict[str, str] = {}
    if it.cpu_manufacturer is not None:
        out[CPU_MANUFACTURER] = kabob(it.cpu_manufacturer)
        out[CPU_CLOCK_MHZ] = str(round((it.sustained_clock_speed_ghz or 0.0) * 1000))
    if it.ebs_bandwidth_mbps is not None:
        out[EBS_BANDWIDTH] = str(it.ebs_bandwidth_mbps)
    if it.network_bandwidth_mbps is not None:
        out[NETWORK_BANDWIDTH] = str(it.network_bandwidth_mbps)
    if it.local_nvme and it.instance_storage_gb is not None:
        out[LOCAL_NVME] = str(it.instance_storage_gb)
    if it.hypervisor is not None:  # discovered: "" on bare metal, as Karpenter writes it
        out[HYPERVISOR] = it.hypervisor
        out[ENCRYPTION_IN_TRANSIT] = _bool(it.encryption_in_transit)
        out[NITRO_ENCLAVES] = _bool(it.nitro_enclaves)
        out[TENANCY] = "default"
    return out


def _accelerator_labels(it: TypeFields) -> dict[str, str]:
    """GPU labels for a single GPU kind; accelerator labels for a single inference accelerator (when the type
    has no Neuron device) or a single Neuron device, whose manufacturer Karpenter writes as "aws"."""
    out: dict[str, str] = {}
    if len(it.gpus) == 1:
        gpu = it.gpus[0]
        out[GPU_NAME] = kabob(gpu.name)
        out[GPU_MANUFACTURER] = kabob(gpu.manufacturer)
        out[GPU_COUNT] = str(gpu.count)
        out[GPU_MEMORY] = str(gpu.memory_mib or 0)
    if len(it.inference_accelerators) == 1 and not it.neuron_devices:
        acc = it.inference_accelerators[0]
        out[ACCELERATOR_NAME] = kabob(acc.name)
        out[ACCELERATOR_MANUFACTURER] = kabob(acc.manufacturer)
        out[ACCELERATOR_COUNT] = str(acc.count)
    if len(it.neuron_devices) == 1:
        dev = it.neuron_devices[0]
        out[ACCELERATOR_NAME] = kabob(dev.name)
        out[ACCELERATOR_MANUFACTURER] = "aws"
        out[ACCELERATOR_COUNT] = str(dev.count)
    return out


def instance_type_labels(it: TypeFields) -> dict[str, str]:
    """Every label a node of `it` carries from its type (zone, capacity type and region come from the offering)."""
    return {
        L.INSTANCE_TYPE_LABEL: it.name,
        L.ARCH_LABEL: it.arch,
        L.OS_LABEL: "linux",
        CPU: str(int(it.cpu_cores)),
        MEMORY: str(it.memory_mib),
        **name_labels(it.name),
        **_hardware_labels(it),
        **_accelerator_labels(it),
    }
