"""What a new node of the simulation may be: instance types with their allowed offerings, and the label values
they give it (planning/scheduling/simulation.py, domain_checks.py)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from api import labels as L
from api.catalog import InstanceType, Offering
from api.instance_types.labels import WELL_KNOWN_TYPE_KEYS
from planning.cluster import type_labels

OFFERING_KEYS = (L.ZONE_LABEL, L.CAPACITY_TYPE_LABEL)
# Keys the instance type and offering decide: never a custom label the pool sets (absent = DoesNotExist)
TYPE_KEYS = frozenset({*OFFERING_KEYS, *WELL_KNOWN_TYPE_KEYS})


@dataclass(slots=True)
class TypeOption:
    """An instance type a new node may be, with the offerings still allowed."""

    itype: InstanceType
    offerings: tuple[Offering, ...]
    cpu: float
    mem: int
    pods: int
    eph: int = 0  # allocatable ephemeral storage; 0: unknown, the type's `ephemeralStorage` stands in

    @property
    def eph_room(self) -> int:
        return self.eph or self.itype.ephemeral_storage_bytes

    def cheapest(self) -> Offering | None:
        return min(self.offerings, key=lambda o: o.price, default=None)


def unit_price(price: float, cpu: float, mem: float, mix_cpu: float, mix_mem: float) -> float:
    """Price per unit of a cpu/memory mix: what a node of `cpu` cores and `mem` bytes at `price` pays for each copy
    of the mix it holds (its scarcer resource decides), so types of different shapes compare for the same pods."""
    units = min(cpu / mix_cpu if mix_cpu > 0 else math.inf, mem / mix_mem if mix_mem > 0 else math.inf)
    return price / units if units > 0 else math.inf


def best_unit_price(options: Sequence[TypeOption], mix_cpu: float, mix_mem: float) -> tuple[float, TypeOption | None]:
    """The lowest price per unit of the mix among `options` (each at its cheapest offering), and the option that
    has it; (inf, None) when none has an offering."""
    best, found = math.inf, None
    for opt in options:
        off = opt.cheapest()
        if off is not None:
            price = unit_price(off.price, opt.cpu, opt.mem, mix_cpu, mix_mem)
            if price < best:
                best, found = price, opt
    return best, found


def option_label_values(opt: TypeOption, key: str) -> set[str]:
    """The values a label may take on a node of `opt`: its offerings' zones or capacity types, else the type's."""
    if key == L.ZONE_LABEL:
        return {o.zone for o in opt.offerings}
    if key == L.CAPACITY_TYPE_LABEL:
        return {o.capacity_type for o in opt.offerings}
    value = type_labels(opt.itype).get(key)
    return {value} if value is not None else set()
