"""Replacement pricing: strictly cheaper, spot-to-spot needs 15 cheaper types, narrowing to spot, same-type filter."""

from __future__ import annotations

from planning_factory import AT, node_and_claim, nodepool, pod, snapshot

from api import labels as L
from api.catalog import InstanceType, InstanceTypeCatalog, Offering
from planning.planner.plan import plan

ZONE = "us-east-1a"


def catalog(types: dict[str, tuple[int, float, float | None]]) -> InstanceTypeCatalog:
    """name -> (cpu, on-demand price, spot price or None); memory 4Gi per cpu."""
    out = []
    for name, (cpu, od, spot) in types.items():
        offs = [Offering(zone=ZONE, capacity_type="on-demand", price=od)]
        if spot is not None:
            offs.append(Offering(zone=ZONE, capacity_type="spot", price=spot))
        out.append(InstanceType(name=name, cpu=str(cpu), memory=f"{4 * cpu}Gi", pods=110, offerings=tuple(offs)))
    return InstanceTypeCatalog(instance_types=out)


def _node(name, itype, ct="on-demand"):
    objs = node_and_claim(name, "m5.large", capacity_type=ct)
    for o in objs:
        o["metadata"]["labels"][L.INSTANCE_TYPE_LABEL] = itype
    objs[0]["status"]["allocatable"] = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    return objs


def _plan(cat, *objs, pool=None):
    return plan(snapshot(pool or nodepool(), *objs), AT, catalog=cat)


def test_single_node_replaced_only_by_strictly_cheaper_type():
    cat = catalog({"big.8x": (8, 0.40, None), "small.2x": (2, 0.10, None)})
    result = _plan(cat, _node("a", "big.8x"), pod("x-1", "a", "1", "1Gi"))
    (cmd,) = result.commands
    assert cmd.method == "SingleNodeConsolidation" and cmd.replacements[0].instance_types == ["small.2x"]
    assert round(cmd.savings_per_hour, 3) == 0.30
    same = catalog({"big.8x": (8, 0.40, None), "small.2x": (2, 0.40, None)})
    result = _plan(same, _node("a", "big.8x"), pod("x-1", "a", "1", "1Gi"))
    assert result.commands == []
    assert any(e.reason == "Unconsolidatable" and e.message == "Can't replace with a cheaper node"
               for e in result.events)


def test_replacement_is_narrowed_to_spot_when_the_pool_allows_both():
    cat = catalog({"big.8x": (8, 0.40, 0.12), "small.2x": (2, 0.10, 0.03)})
    pool = nodepool(requirements=[{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["spot", "on-demand"]}])
    (cmd,) = _plan(cat, _node("a", "big.8x"), pod("x-1", "a", "1", "1Gi"), pool=pool).commands
    assert cmd.replacements[0].capacity_type == "spot" and cmd.replacements[0].price == 0.03


def _spot_catalog(cheaper: int) -> InstanceTypeCatalog:
    types = {"cur.8x": (8, 0.40, 0.20)}
    for i in range(cheaper):
        types[f"t{i:02d}.2x"] = (2, 0.30, 0.05 + i * 0.001)
    types["dear.2x"] = (2, 0.30, 0.25)
    return catalog(types)


def test_spot_to_spot_single_node_needs_15_cheaper_types_and_keeps_the_15_cheapest():
    spot_pool = nodepool(requirements=[{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["spot"]}])
    objs = [_node("a", "cur.8x", "spot"), pod("x-1", "a", "1", "1Gi")]
    result = _plan(_spot_catalog(14), *objs, pool=spot_pool)
    assert result.commands == []
    assert any("requires 15 cheaper instance type options" in e.message and e.message.endswith("got 14")
               for e in result.events)
    (cmd,) = _plan(_spot_catalog(20), *objs, pool=spot_pool).commands
    rep = cmd.replacements[0]
    assert rep.capacity_type == "spot" and len(rep.instance_types) == 15
    assert rep.instance_types == [f"t{i:02d}.2x" for i in range(15)]


def test_multi_node_spot_to_spot_has_no_15_type_rule():
    spot_pool = nodepool(requirements=[{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["spot"]}])
    result = _plan(_spot_catalog(3), _node("a", "cur.8x", "spot"), _node("b", "cur.8x", "spot"),
                   pod("x-1", "a", "900m", "1Gi"), pod("y-1", "b", "900m", "1Gi"), pool=spot_pool)
    (cmd,) = result.commands
    assert cmd.method == "MultiNodeConsolidation" and sorted(cmd.nodes) == ["a", "b"]
    assert len(cmd.replacements[0].instance_types) == 3


def test_multi_node_never_replaces_with_a_type_the_candidates_run_unless_cheaper():
    # three nodes: 2 x big and 1 x mid; the pods need a mid-sized node. Options cheaper than all three
    # include "mid.4x", which a candidate runs at 0.20: only types cheaper than 0.20 remain.
    cat = catalog({"big.8x": (8, 0.40, None), "mid.4x": (4, 0.20, None), "alt.4x": (4, 0.19, None),
                   "odd.4x": (4, 0.21, None)})
    objs = [_node("a", "big.8x"), _node("b", "big.8x"), _node("c", "mid.4x"),
            pod("x-1", "a", "1500m", "1Gi"), pod("y-1", "b", "1500m", "1Gi"), pod("z-1", "c", "500m", "1Gi")]
    result = _plan(cat, *objs)
    (cmd,) = result.commands
    assert cmd.method == "MultiNodeConsolidation"
    assert cmd.replacements[0].instance_types == ["alt.4x"]


def test_delete_savings_are_the_node_prices():
    cat = catalog({"big.8x": (8, 0.40, None)})
    (cmd,) = _plan(cat, _node("a", "big.8x"), _node("b", "big.8x"), pod("x-1", "a", "1", "1Gi"),
                   pod("y-1", "b", "1", "1Gi")).commands
    assert cmd.replacements == [] and cmd.savings_per_hour == 0.40 and len(cmd.nodes) == 1


def test_min_values_must_survive_the_price_filter():
    cat = catalog({"big.8x": (8, 0.40, None), "small.2x": (2, 0.10, None), "mid.4x": (4, 0.20, None)})
    def pool(n):
        return nodepool(requirements=[{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
                                      {"key": L.INSTANCE_TYPE_LABEL, "operator": "Exists", "minValues": n}])
    objs = [_node("a", "big.8x"), pod("x-1", "a", "1", "1Gi")]
    (cmd,) = _plan(cat, *objs, pool=pool(2)).commands
    assert cmd.replacements[0].instance_types == ["small.2x", "mid.4x"]
    result = _plan(cat, *objs, pool=pool(3))
    assert result.commands == []
    assert any(e.message.startswith("Filtering by price: minValues requirement is not met") for e in result.events)
