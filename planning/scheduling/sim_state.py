"""The state a scheduling simulation writes: the nodes it adds (`NewNode`) and its copy-on-write changes
(`SimState`). The Scheduler (simulation.py) and its checks beyond the fast path (domain_checks.py, pod_context.py)
read and write them; they live here, below all three, so none imports the Scheduler's module for them.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from planning.cluster import PodInfo, PoolInfo
from planning.scheduling.type_options import TypeOption


@dataclass
class NewNode:
    """A node the simulation had to add: its pool, pods, summed requests and remaining type options."""

    index: int
    pool: PoolInfo
    options: list[TypeOption]
    labels: dict[str, str]
    pods: list[PodInfo] = field(default_factory=list)
    cpu: float = 0.0
    mem: int = 0
    npods: int = 0
    eph: int = 0
    attached: set[tuple[str, str]] = field(default_factory=set)  # its pods' volumes (attachment limits)
    # (cpu, memory) of a mix -> the best price per unit of it among `options`, and the type that has it
    # (fill_policy.dearer_fill); a new dict whenever `options` change
    unit_memo: dict[tuple[float, int], tuple[float, TypeOption | None]] = field(default_factory=dict)
    # (cpu, memory, ephemeral storage, signature) of plain pods (Scheduler._plain) it refused since its last join: a
    # pod of the same requests and signature is refused again without the checks (a scale-out's pods try every node)
    refused: set[tuple[float, int, int, str]] = field(default_factory=set)

    @property
    def name(self) -> str:
        return f"new-{self.index}"

    def cheapest_price(self) -> float:
        prices = [o.price for opt in self.options for o in opt.offerings]
        return min(prices) if prices else math.inf


_STATE_SERIALS = itertools.count()


class SimState:
    """Copy-on-write changes of one simulation (or of several that must not double-book capacity)."""

    def __init__(self) -> None:
        self.used: dict[int, list[float]] = {}
        self.placed: dict[str, list[PodInfo]] = {}
        self.removed: set[str] = set()
        self.spread_delta: dict[tuple[str, str], dict[str, int]] = {}
        self.new_nodes: list[NewNode] = []
        # New node name -> the zone it is bound to since a pod spread over zones joined it. Karpenter narrows a
        # NodeClaim to one domain (its topology's next domain) the same way, so pods on new nodes count in a zone and
        # a scale-up spreads its new nodes over the zones instead of launching them all in the cheapest one.
        self.new_zones: dict[str, str] = {}
        self.block_max: dict[int, tuple[float, int, int]] = {}
        self.super_max: dict[int, tuple[float, int, int]] = {}
        # (cpu, memory, ephemeral-storage) of unconstrained pods -> first block where such a pod last fit; capacity only
        # shrinks during a simulation, so a pod at least as big never fits in an earlier block.
        self.frontier: dict[tuple[float, int, int], int] = {}
        self.serial = next(_STATE_SERIALS)  # with `version`, what a cached PodContext was computed from
        self.version = 0  # placements (and removals) so far: a pod's PodContext is reused until the next one
        self.anti_placed = False  # a placed pod has anti-affinity terms other pods must respect
        # a placed pod has hostname anti-affinity though no cluster pod had (a pending pod): _anti_ok runs for all
        self.host_anti_placed = False
        # node name -> the volumes this simulation's pods attach there (volume_topology.py attachment limits)
        self.attached: dict[str, set[tuple[str, str]]] = {}
        # pod key -> the first node that refused it for its volume attachment limit, and why (limit_detail)
        self.volume_full: dict[str, str] = {}

    def copy(self) -> SimState:
        """An independent copy (a Scheduler's reservation is copied into each simulation that starts from it)."""
        out = SimState()
        out.used = {k: list(v) for k, v in self.used.items()}
        out.placed = {k: list(v) for k, v in self.placed.items()}
        out.removed = set(self.removed)
        out.spread_delta = {k: dict(v) for k, v in self.spread_delta.items()}
        out.new_nodes = list(self.new_nodes)
        out.new_zones = dict(self.new_zones)
        out.block_max = dict(self.block_max)
        out.super_max = dict(self.super_max)
        out.frontier = dict(self.frontier)
        out.version = self.version
        out.anti_placed = self.anti_placed
        out.host_anti_placed = self.host_anti_placed
        out.attached = {k: set(v) for k, v in self.attached.items()}
        out.volume_full = dict(self.volume_full)
        return out
