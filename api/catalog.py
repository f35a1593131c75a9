"""Instance types, their offerings and prices: the `InstanceTypeCatalog` document of docs/contracts.md §1.2.

A default catalog of real EC2 types with public us-east-1 on-demand prices ships in `api/data/`; a
catalog given on the command line or inside a snapshot replaces it.
"""

from __future__ import annotations

from functools import cached_property, lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from api.instance_types.labels import instance_type_labels
from api.quantity import QuantityError, parse_cpu, parse_memory
from api.yaml_load import safe_load

CATALOG_KIND = "InstanceTypeCatalog"
CATALOG_API_VERSION = "nodeflow.dev/v1alpha1"
DEFAULT_CATALOG_PATH = Path(__file__).parent / "data" / "catalog.yaml"


class Offering(BaseModel):
    """Where and how an instance type can be bought, and at what hourly price."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    zone: str
    capacity_type: Literal["on-demand", "spot", "reserved"] = Field(alias="capacityType")
    price: float = Field(ge=0)
    available: bool = True
    # a `reserved` offering's capacity reservation (api/capacity_reservations.py); None for the others
    reservation_id: str | None = Field(default=None, alias="reservationID")
    reservation_type: str | None = Field(default=None, alias="reservationType")


class Accelerator(BaseModel):
    """A GPU, an inference accelerator or a Neuron device of an instance type, as DescribeInstanceTypes lists it."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    name: str
    manufacturer: str
    count: int = Field(ge=0)
    memory_mib: int | None = Field(default=None, alias="memoryMiB")
    cores: int | None = None  # Neuron cores per device


class InstanceType(BaseModel):
    """One instance type: capacity and offerings.

    `cpu`, `memory` and `pods` are the raw capacity (vCPUs, the type's memory, ENI-limited pods); everything
    below `offerings` is optional and filled by discovery (api/instance_types/from_describe.py) for the
    well-known labels and Karpenter's allocatable (api/allocatable.py, docs/semantics.md "Instance types and
    allocatable"). A hand-written catalog may leave them out."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    name: str = Field(min_length=1)
    cpu: str
    memory: str
    pods: int = Field(gt=0)
    arch: Literal["amd64", "arm64"] = "amd64"
    ephemeral_storage: str = Field(default="20Gi", alias="ephemeralStorage")
    offerings: tuple[Offering, ...] = ()
    cpu_manufacturer: str | None = Field(default=None, alias="cpuManufacturer")
    sustained_clock_speed_ghz: float | None = Field(default=None, alias="sustainedClockSpeedGhz")
    hypervisor: str | None = None
    bare_metal: bool = Field(default=False, alias="bareMetal")
    current_generation: bool | None = Field(default=None, alias="currentGeneration")
    gpus: tuple[Accelerator, ...] = ()
    inference_accelerators: tuple[Accelerator, ...] = Field(default=(), alias="inferenceAccelerators")
    neuron_devices: tuple[Accelerator, ...] = Field(default=(), alias="neuronDevices")
    max_enis: int | None = Field(default=None, ge=0, alias="maxENIs")  # of the default network card
    ipv4_per_eni: int | None = Field(default=None, ge=0, alias="ipv4PerENI")
    efa_interfaces: int = Field(default=0, ge=0, alias="efaInterfaces")
    instance_storage_gb: int | None = Field(default=None, ge=0, alias="instanceStorageGB")
    local_nvme: bool = Field(default=False, alias="localNVMe")
    network_bandwidth_mbps: int | None = Field(default=None, alias="networkBandwidthMbps")
    ebs_bandwidth_mbps: int | None = Field(default=None, alias="ebsBandwidthMbps")
    encryption_in_transit: bool = Field(default=False, alias="encryptionInTransitSupported")
    nitro_enclaves: bool = Field(default=False, alias="nitroEnclavesSupported")

    @field_validator("cpu", "memory", "ephemeral_storage", mode="before")
    @classmethod
    def _quantity(cls, v: object) -> str:
        text = str(v)
        try:
            parse_memory(text)
        except QuantityError as exc:
            raise ValueError(str(exc)) from exc
        return text

    @cached_property
    def cpu_cores(self) -> float:
        return parse_cpu(self.cpu)

    @cached_property
    def memory_bytes(self) -> int:
        return parse_memory(self.memory)

    @cached_property
    def ephemeral_storage_bytes(self) -> int:
        return parse_memory(self.ephemeral_storage)

    @cached_property
    def memory_mib(self) -> int:
        return self.memory_bytes // 2**20

    @cached_property
    def labels(self) -> dict[str, str]:
        """The well-known labels a node of this type carries (computed once: the planner asks per option)."""
        return instance_type_labels(self)

    def offering(self, zone: str, capacity_type: str) -> Offering | None:
        """The offering for an exact (zone, capacity type), if any."""
        for o in self.offerings:
            if o.zone == zone and o.capacity_type == capacity_type:
                return o
        return None

    def cheapest(self, zones: set[str] | None = None, capacity_types: set[str] | None = None) -> Offering | None:
        """The cheapest available offering within the given zones / capacity types (None = any)."""
        best: Offering | None = None
        for o in self.offerings:
            if not o.available:
                continue
            if zones is not None and o.zone not in zones:
                continue
            if capacity_types is not None and o.capacity_type not in capacity_types:
                continue
            if best is None or o.price < best.price:
                best = o
        return best


class InstanceTypeCatalog(BaseModel):
    """A set of instance types, as a Kubernetes-style document."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    api_version: str = Field(default=CATALOG_API_VERSION, alias="apiVersion")
    kind: Literal["InstanceTypeCatalog"] = CATALOG_KIND
    metadata: dict = Field(default_factory=lambda: {"name": "default"})
    instance_types: list[InstanceType] = Field(alias="instanceTypes")
    # Karpenter's --vm-memory-overhead-percent: the share of memory the hypervisor keeps (api/allocatable.py)
    vm_memory_overhead_percent: float = Field(default=0.075, ge=0, lt=1, alias="vmMemoryOverheadPercent")
    region: str | None = None  # the region discovery read (None for a hand-written catalog)

    @field_validator("instance_types")
    @classmethod
    def _unique(cls, v: list[InstanceType]) -> list[InstanceType]:
        seen: set[str] = set()
        for it in v:
            if it.name in seen:
                raise ValueError(f"duplicate instance type {it.name!r}")
            seen.add(it.name)
        return v

    @cached_property
    def by_name(self) -> dict[str, InstanceType]:
        return {it.name: it for it in self.instance_types}

    def get(self, name: str) -> InstanceType | None:
        return self.by_name.get(name)


def current_catalog(catalog: object) -> object:
    """A catalog source resolved to the catalog in force now: a refreshing source (anything with `current()`, e.g.
    gateways.instance_types.LiveCatalog) gives its current catalog, so one pass plans on one catalog; a plain
    InstanceTypeCatalog (or None) is itself."""
    current = getattr(catalog, "current", None)
    return current() if callable(current) else catalog


def load_catalog(path: str | Path) -> InstanceTypeCatalog:
    """Read a catalog document from a YAML file."""
    with open(path, encoding="utf-8") as fh:
        return InstanceTypeCatalog.model_validate(safe_load(fh))


@lru_cache(maxsize=1)
def load_default_catalog() -> InstanceTypeCatalog:
    """The catalog that ships with nodeflow (cached: it is read-only)."""
    return load_catalog(DEFAULT_CATALOG_PATH)
