"""A kubelet's capacity and allocatable: the machine, less kubeReserved, systemReserved and the hard eviction
thresholds, with the EKS AMIs' defaults for what the user data's kubelet config does not set.

The defaults follow awslabs/amazon-eks-ami `nodeadm/internal/kubelet/config.go` (read at 81fec2e8):
`withDefaultReservedResources` reserves cpu by `getCPUMillicoresToReserve` (6% of the first core, 1% of the
second, 0.5% of the third and fourth, 0.25% of every further core), memory by `getMemoryMebibytesToReserve`
(11 MiB per pod of the ENI-based maxPods + 255 MiB) and 1Gi of ephemeral storage; `defaultKubeletSubConfig`
sets evictionHard memory.available=100Mi, nodefs.available=10%. The user's `spec.kubelet.config` is a drop-in
over that base config, so it overrides key by key and a user maxPods leaves nodeadm's memory reservation
(computed from the ENI count) as it was. AL2's bootstrap.sh computes the same figures; Bottlerocket reserves
memory for its own `max-pods` setting.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from api.quantity import QuantityError, format_cpu, parse_cpu, parse_memory

MI = 2**20
DEFAULT_EVICTION_HARD = {"memory.available": "100Mi", "nodefs.available": "10%"}
# (start millicore, end millicore or None, reserved parts per 10,000) as in nodeadm's getCPUMillicoresToReserve.
_CPU_RANGES = ((0, 1000, 600), (1000, 2000, 100), (2000, 4000, 50), (4000, None, 25))


@dataclass(frozen=True)
class Machine:
    """What the instance has: cores, memory and root disk bytes, and the ENI-limited pod count."""

    cpu: float
    memory: int
    ephemeral_storage: int
    eni_pods: int


def reserved_cpu_millicores(cores: float) -> int:
    total = round(cores * 1000)
    reserved = 0
    for start, end, parts in _CPU_RANGES:
        if total <= start:
            break
        top = total if end is None else min(total, end)
        reserved += (top - start) * parts // 10000
    return reserved


def reserved_memory_mib(max_pods: int) -> int:
    return 11 * max_pods + 255


def max_pods(machine: Machine, kubelet: Mapping[str, Any]) -> int:
    """maxPods from the config, else the ENI limit; podsPerCore caps it at pods-per-core x cores."""
    pods = int(kubelet.get("maxPods") or machine.eni_pods)
    per_core = int(kubelet.get("podsPerCore") or 0)
    if per_core > 0:
        pods = min(pods, per_core * max(int(machine.cpu), 1))
    return pods


def default_kube_reserved(machine: Machine, reserve_pods: int) -> dict[str, str]:
    return {"cpu": f"{reserved_cpu_millicores(machine.cpu)}m", "memory": f"{reserved_memory_mib(reserve_pods)}Mi",
            "ephemeral-storage": "1Gi"}


def node_resources(machine: Machine, kubelet: Mapping[str, Any],
                   reserve_for_config_pods: bool = False) -> tuple[dict[str, str], dict[str, str]]:
    """(capacity, allocatable) as the kubelet reports them. `reserve_for_config_pods`: the default memory
    reservation counts the configured maxPods (Bottlerocket) instead of the ENI limit (nodeadm, bootstrap.sh)."""
    pods = max_pods(machine, kubelet)
    defaults = default_kube_reserved(machine, pods if reserve_for_config_pods else machine.eni_pods)
    kube = {**defaults, **_strings(kubelet.get("kubeReserved"))}
    system = _strings(kubelet.get("systemReserved"))
    eviction = {**DEFAULT_EVICTION_HARD, **_strings(kubelet.get("evictionHard"))}
    cpu_left = machine.cpu - _cpu(kube.get("cpu")) - _cpu(system.get("cpu"))
    memory_left = (machine.memory - _bytes(kube.get("memory")) - _bytes(system.get("memory"))
                   - _threshold(eviction.get("memory.available"), machine.memory))
    disk_left = (machine.ephemeral_storage - _bytes(kube.get("ephemeral-storage"))
                 - _bytes(system.get("ephemeral-storage"))
                 - _threshold(eviction.get("nodefs.available"), machine.ephemeral_storage))
    capacity = {"cpu": format_cpu(machine.cpu), "memory": _ki(machine.memory),
                "ephemeral-storage": _ki(machine.ephemeral_storage), "pods": str(pods)}
    allocatable = {"cpu": format_cpu(max(cpu_left, 0.0)), "memory": _ki(max(memory_left, 0)),
                   "ephemeral-storage": _ki(max(disk_left, 0)), "pods": str(pods)}
    return capacity, allocatable


def _strings(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else {}


def _cpu(value: str | None) -> float:
    try:
        return parse_cpu(value) if value else 0.0
    except QuantityError:
        return 0.0


def _bytes(value: str | None) -> int:
    try:
        return parse_memory(value) if value else 0
    except QuantityError:
        return 0


def _threshold(value: str | None, total: int) -> int:
    """An eviction threshold: a quantity, or a percentage of the resource's capacity."""
    if not value:
        return 0
    if value.endswith("%"):
        try:
            return int(total * float(value[:-1]) / 100)
        except ValueError:
            return 0
    return _bytes(value)


def _ki(n_bytes: int) -> str:
    """Bytes as the kubelet prints them: Ki when whole kibibytes."""
    return f"{n_bytes // 1024}Ki" if n_bytes % 1024 == 0 else str(n_bytes)
