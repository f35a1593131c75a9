"""One DescribeInstanceTypes item (the EC2 API's InstanceTypeInfo, as boto3 returns it) as an InstanceType.

Which fields are read, and how, follows aws/karpenter-provider-aws pkg/providers/instancetype/types.go:
vCPUs from VCpuInfo.DefaultVCpus, ENI limits of the *default* network card (the VPC CNI uses only that one),
local NVMe only when the instance store supports NVMe, EBS bandwidth only when EBS optimisation is the default,
network bandwidth as the sum of the cards' baseline bandwidth (what Karpenter's generated table holds).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from api.catalog import Accelerator, InstanceType, Offering

# EC2's architecture names as Kubernetes writes them (Karpenter's AWSToKubeArchitectures)
KUBE_ARCH = {"x86_64": "amd64", "arm64": "arm64"}


def architecture(info: Mapping[str, Any]) -> str | None:
    """The first supported architecture Kubernetes knows (i386-only or x86_64_mac types have none)."""
    for arch in (info.get("ProcessorInfo") or {}).get("SupportedArchitectures") or ():
        if arch in KUBE_ARCH:
            return KUBE_ARCH[arch]
    return None


def _accelerators(items: Sequence[Mapping[str, Any]], memory_key: str = "MemoryInfo") -> tuple[Accelerator, ...]:
    out = []
    for a in items:
        mem = (a.get(memory_key) or {}).get("SizeInMiB")
        cores = (a.get("CoreInfo") or {}).get("Count")
        out.append(Accelerator(name=a.get("Name") or "", manufacturer=a.get("Manufacturer") or "",
                               count=int(a.get("Count") or 0), memory_mib=mem, cores=cores))
    return tuple(out)


def _network(info: Mapping[str, Any]) -> dict[str, Any]:
    net = info.get("NetworkInfo") or {}
    cards = net.get("NetworkCards") or []
    default_index = net.get("DefaultNetworkCardIndex", 0)
    card = next((c for c in cards if c.get("NetworkCardIndex") == default_index), None)
    baseline = [c["BaselineBandwidthInGbps"] for c in cards if c.get("BaselineBandwidthInGbps") is not None]
    return {
        "max_enis": (card or net).get("MaximumNetworkInterfaces"),
        "ipv4_per_eni": net.get("Ipv4AddressesPerInterface"),
        "efa_interfaces": int((net.get("EfaInfo") or {}).get("MaximumEfaInterfaces") or 0),
        "network_bandwidth_mbps": round(sum(baseline) * 1000) if baseline else None,
        "encryption_in_transit": bool(net.get("EncryptionInTransitSupported")),
    }


def _storage(info: Mapping[str, Any]) -> dict[str, Any]:
    store = info.get("InstanceStorageInfo") or {}
    ebs = info.get("EbsInfo") or {}
    optimized = ebs.get("EbsOptimizedInfo") or {}
    return {
        "instance_storage_gb": store.get("TotalSizeInGB"),
        "local_nvme": bool(store) and store.get("NvmeSupport") != "unsupported",
        "ebs_bandwidth_mbps": optimized.get("MaximumBandwidthInMbps") if ebs.get("EbsOptimizedSupport") == "default"
        else None,
    }


def eni_limited_pods(max_enis: int, ipv4_per_eni: int, reserved_enis: int = 0) -> int:
    """Karpenter's ENILimitedPods: usable ENIs * (IPv4 addresses per ENI - 1) + 2 (the eni-max-pods formula)."""
    usable = max(max_enis - reserved_enis, 0)
    return usable * (ipv4_per_eni - 1) + 2 if usable else 0


def from_describe(info: Mapping[str, Any], offerings: Sequence[Offering] = ()) -> InstanceType | None:
    """The catalog model of one item; None for a type Kubernetes cannot run (no Linux architecture it knows)."""
    arch = architecture(info)
    if arch is None:
        return None
    vcpus = int((info.get("VCpuInfo") or {}).get("DefaultVCpus") or 0)
    mib = int((info.get("MemoryInfo") or {}).get("SizeInMiB") or 0)
    if vcpus <= 0 or mib <= 0:
        return None
    proc = info.get("ProcessorInfo") or {}
    net = _network(info)
    pods = eni_limited_pods(net["max_enis"] or 0, net["ipv4_per_eni"] or 0) or 110
    neuron = (info.get("NeuronInfo") or {}).get("NeuronDevices") or ()
    return InstanceType(
        name=info["InstanceType"], cpu=str(vcpus), memory=f"{mib}Mi", pods=pods, arch=arch,
        offerings=tuple(offerings),
        cpu_manufacturer=proc.get("Manufacturer"), sustained_clock_speed_ghz=proc.get("SustainedClockSpeedInGhz"),
        hypervisor=info.get("Hypervisor") or "", bare_metal=bool(info.get("BareMetal")),
        current_generation=info.get("CurrentGeneration"),
        gpus=_accelerators((info.get("GpuInfo") or {}).get("Gpus") or ()),
        inference_accelerators=_accelerators((info.get("InferenceAcceleratorInfo") or {}).get("Accelerators") or ()),
        neuron_devices=_accelerators(neuron, memory_key="MemoryInfo"),
        nitro_enclaves=info.get("NitroEnclavesSupport") == "supported",
        **net, **_storage(info),
    )
