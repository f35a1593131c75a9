"""Prices: what a replacement may cost (docs/semantics.md §5.4-5.5), and the Replacement a command launches.

Consolidation only replaces with a strictly cheaper node: an instance type stays an option only when its
worst launch price is below the candidates' price. Spot-to-spot single-node replacement needs 15 cheaper
types and launches with the 15 cheapest. When a replacement could be spot or on-demand, it is narrowed to
spot so a launch never falls back to a dearer on-demand node.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from api import labels as L
from api.capacity_reservations import CAPACITY_RESERVED
from planning.disruption.candidates import Candidate
from planning.disruption.commands import Replacement, Requirement
from planning.scheduling.sim_state import NewNode
from planning.scheduling.simulation import worst_launch_price
from planning.scheduling.type_options import TypeOption, option_label_values

SPOT_TO_SPOT_MIN_TYPES = 15
MAX_INSTANCE_TYPES = 60


@dataclass(slots=True)
class PricedReplacement:
    """A replacement and the hourly price it launches at (its cheapest offering)."""

    replacement: Replacement
    price: float


def _capacity_types(options: Sequence[TypeOption]) -> set[str]:
    return {o.capacity_type for opt in options for o in opt.offerings if o.available}


def _only(options: Sequence[TypeOption], capacity_type: str) -> list[TypeOption]:
    out = []
    for opt in options:
        offs = tuple(o for o in opt.offerings if o.capacity_type == capacity_type)
        if offs:
            out.append(TypeOption(opt.itype, offs, opt.cpu, opt.mem, opt.pods, opt.eph))
    return out


def _cheapest_first(options: Sequence[TypeOption]) -> list[TypeOption]:
    return sorted(options, key=lambda t: (min(o.price for o in t.offerings), t.itype.name))


def to_replacement(nn: NewNode, options: Sequence[TypeOption], capacity_type: str,
                   pool_zones: set[str] | None = None) -> PricedReplacement:
    """The Replacement of docs/contracts.md §3 for a new node restricted to `options` and one capacity type."""
    ordered = _cheapest_first(_only(options, capacity_type))
    # the 60 cheapest, or as many as it takes to keep minValues (Karpenter's Truncate refuses instead: semantics §17.2)
    options = ordered[:max(MAX_INSTANCE_TYPES, min_values_prefix(nn, ordered))]
    zones = sorted({o.zone for opt in options for o in opt.offerings})
    price = min(o.price for opt in options for o in opt.offerings)
    requirements = [
        Requirement(key=L.INSTANCE_TYPE_LABEL, operator="In", values=[o.itype.name for o in options]),
        Requirement(key=L.CAPACITY_TYPE_LABEL, operator="In", values=[capacity_type]),
    ]
    constrained = pool_zones is None or set(zones) != pool_zones
    if constrained:
        requirements.append(Requirement(key=L.ZONE_LABEL, operator="In", values=zones))
    rep = Replacement(
        instance_types=[o.itype.name for o in options], capacity_type=capacity_type, price=round(price, 6),
        zone=zones[0] if len(zones) == 1 else None, node_pool=nn.pool.name, requirements=requirements,
    )
    return PricedReplacement(rep, price)


def pool_zones(nn: NewNode, all_options: Sequence[TypeOption]) -> set[str]:
    return {o.zone for opt in all_options for o in opt.offerings}


def launch_replacement(nn: NewNode, all_options: Sequence[TypeOption]) -> PricedReplacement | None:
    """Drift / provisioning: the cheapest options, spot when the pool allows it (Karpenter's launch choice)."""
    if not nn.options:
        return None
    return to_replacement(nn, nn.options, _preferred_capacity_type(_capacity_types(nn.options)),
                          pool_zones(nn, all_options))


def launch_replacements(new_nodes: Sequence[NewNode], pool_options: Callable[[str], Sequence[TypeOption]]
                        ) -> tuple[list[Replacement], float]:
    """Launch choices for the new nodes of a simulation, and what they cost per hour together."""
    replacements: list[Replacement] = []
    cost = 0.0
    for nn in new_nodes:
        priced = launch_replacement(nn, pool_options(nn.pool))
        if priced is not None:
            replacements.append(priced.replacement)
            cost += priced.price
    return replacements, cost


def _preferred_capacity_type(cts: set[str]) -> str:
    """Reserved when a reservation has room (Karpenter's getCapacityType: reserved, spot, on-demand; the options
    hold available offerings only, §16.4), then spot when allowed (cheapest), then on-demand."""
    if CAPACITY_RESERVED in cts:
        return CAPACITY_RESERVED
    if L.CAPACITY_SPOT in cts:
        return L.CAPACITY_SPOT
    return L.CAPACITY_ON_DEMAND if L.CAPACITY_ON_DEMAND in cts else sorted(cts)[0]


_label_values = option_label_values  # one definition, shared with the scheduler's minValues check


def min_values_problem(nn: NewNode, options: Sequence[TypeOption]) -> str | None:
    """Karpenter minValues: each requirement with `minValues` needs that many distinct values among the options."""
    for req in nn.pool.requirements:
        need = req.get("minValues")
        if not need:
            continue
        key = req.get("key", "")
        have = set().union(*(_label_values(o, key) for o in options)) if options else set()
        if len(have) < int(need):
            return f"minValues requirement is not met for label(s) (label={key}, needed {need}, got {len(have)})"
    return None


def min_values_prefix(nn: NewNode, cheapest_first: Sequence[TypeOption]) -> int:
    """How many of the cheapest options it takes to satisfy every minValues (0 when there is none)."""
    reqs = [(r.get("key", ""), int(r["minValues"])) for r in nn.pool.requirements if r.get("minValues")]
    if not reqs:
        return 0
    seen: dict[str, set[str]] = {k: set() for k, _ in reqs}
    for i, opt in enumerate(cheapest_first, start=1):
        for k, _ in reqs:
            seen[k] |= _label_values(opt, k)
        if all(len(seen[k]) >= n for k, n in reqs):
            return i
    return len(cheapest_first)


def _cheaper(nn: NewNode, options: Sequence[TypeOption], capacity_types: set[str], candidates: Sequence[Candidate],
             candidate_price: float, same_type_filter: bool) -> tuple[list[TypeOption], str]:
    """Options whose worst launch price is strictly below the candidates' (Karpenter's price filter), and the
    Unconsolidatable message when none remain or minValues can no longer be met."""
    cheaper = [o for o in options if worst_launch_price(o, capacity_types) < candidate_price]
    if same_type_filter:
        cheaper = filter_out_same_instance_type(cheaper, candidates)
    if not cheaper:
        return [], "Can't replace with a cheaper node"
    problem = min_values_problem(nn, cheaper)
    if problem is not None:
        return [], f"Filtering by price: {problem}"
    return cheaper, ""


def consolidation_replacement(
    nn: NewNode, candidates: Sequence[Candidate], all_options: Sequence[TypeOption], single: bool,
    same_type_filter: bool,
) -> tuple[PricedReplacement | None, str]:
    """A strictly cheaper replacement for `candidates`, or None and the Unconsolidatable message why not."""
    candidate_price = sum(c.price for c in candidates)
    cts = _capacity_types(nn.options)
    all_spot = all(c.node.capacity_type == L.CAPACITY_SPOT for c in candidates)
    if all_spot and L.CAPACITY_SPOT in cts:
        options, problem = _cheaper(nn, _only(nn.options, L.CAPACITY_SPOT), {L.CAPACITY_SPOT}, candidates,
                                    candidate_price, same_type_filter)
        if problem:
            return None, problem
        if single and len(options) < SPOT_TO_SPOT_MIN_TYPES:
            return None, ("SpotToSpotConsolidation requires 15 cheaper instance type options than the current "
                          f"candidate to consolidate, got {len(options)}")
        if single:
            ordered = _cheapest_first(options)
            options = ordered[:max(SPOT_TO_SPOT_MIN_TYPES, min_values_prefix(nn, ordered))]
        priced = to_replacement(nn, options, L.CAPACITY_SPOT, pool_zones(nn, all_options))
        return priced, ""
    options, problem = _cheaper(nn, nn.options, cts, candidates, candidate_price, same_type_filter)
    if problem:
        return None, problem
    ct = _preferred_capacity_type(_capacity_types(options))
    return to_replacement(nn, options, ct, pool_zones(nn, all_options)), ""


def filter_out_same_instance_type(options: Sequence[TypeOption], candidates: Sequence[Candidate]) -> list[TypeOption]:
    """Multi-node: never replace N nodes with one of a type they already run unless cheaper (docs/semantics.md §5.6)."""
    candidate_types: dict[str, float] = {}
    for c in candidates:
        if c.node.itype is not None:
            name = c.node.itype.name
            candidate_types[name] = min(c.price, candidate_types.get(name, c.price))
    shared = [candidate_types[o.itype.name] for o in options if o.itype.name in candidate_types]
    if not shared:
        return list(options)
    max_price = min(shared)
    cts = _capacity_types(options)
    return [o for o in options if worst_launch_price(o, cts) < max_price]
