"""planning/pricing/overlays.py: which offerings NodeOverlays price, who wins, and what conflicts (Karpenter's
store)."""

from __future__ import annotations

from typing import Any

import pytest

from api.catalog import load_default_catalog
from api.node_overlay import NodeOverlay
from planning.pricing.overlays import apply_overlays, evaluate_overlays, overlay_pool_labels

TYPE = "node.kubernetes.io/instance-type"
FAMILY = "karpenter.k8s.aws/instance-family"


def ov(name: str, requirements: list[dict[str, Any]], **spec: Any) -> NodeOverlay:
    return NodeOverlay.model_validate({"apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay",
                                       "metadata": {"name": name}, "spec": {"requirements": requirements, **spec}})


def req(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)}


def price(catalog: Any, itype: str, zone: str = "us-east-1a", cap: str = "on-demand") -> float:
    return catalog.get(itype).offering(zone, cap).price


def test_no_overlays_is_the_catalog_itself() -> None:
    catalog = load_default_catalog()
    assert apply_overlays(catalog, []) is catalog


def test_a_percentage_prices_every_offering_of_the_family_and_nothing_else() -> None:
    catalog = load_default_catalog()
    out = evaluate_overlays(catalog, [ov("sp", [req(FAMILY, "In", "m5")], priceAdjustment="-20%")]).catalog
    for zone in ("us-east-1a", "us-east-1b"):
        for cap in ("on-demand", "spot"):
            assert price(out, "m5.large", zone, cap) == pytest.approx(0.8 * price(catalog, "m5.large", zone, cap))
    assert out.get("c5.large") is catalog.get("c5.large")
    assert price(catalog, "m5.large") == 0.096  # the original is untouched


def test_offering_labels_select_offerings() -> None:
    """A Reserved Instance: one type, one zone, on-demand only."""
    catalog = load_default_catalog()
    ri = ov("ri", [req(TYPE, "In", "m5.large"), req("topology.kubernetes.io/zone", "In", "us-east-1b"),
                   req("karpenter.sh/capacity-type", "In", "on-demand")], price="0")
    out = evaluate_overlays(catalog, [ri]).catalog
    assert price(out, "m5.large", "us-east-1b") == 0
    assert price(out, "m5.large", "us-east-1a") == 0.096
    assert price(out, "m5.large", "us-east-1b", "spot") == price(catalog, "m5.large", "us-east-1b", "spot")


def test_numeric_operators_compare_labels_as_integers() -> None:
    catalog = load_default_catalog()
    big = ov("big", [req("karpenter.k8s.aws/instance-cpu", "Gte", "16"), req(FAMILY, "In", "m5")], price="9")
    out = evaluate_overlays(catalog, [big]).catalog
    assert price(out, "m5.4xlarge") == 9 and price(out, "m5.2xlarge") != 9


def test_the_heavier_overlay_wins_and_a_lighter_one_still_prices_the_rest() -> None:
    catalog = load_default_catalog()
    family = ov("family", [req(FAMILY, "In", "m5")], priceAdjustment="+1", weight=10)
    one = ov("one", [req(TYPE, "In", "m5.large")], price="0.01", weight=50)
    result = evaluate_overlays(catalog, [family, one])
    assert price(result.catalog, "m5.large") == 0.01  # weight 50 decides m5.large
    m5_offerings = sum(len(it.offerings) for it in catalog.instance_types if it.name.startswith("m5."))
    one_offerings = len(catalog.get("m5.large").offerings)
    assert result.priced == {"one": one_offerings, "family": m5_offerings - one_offerings}
    assert price(result.catalog, "m5.xlarge") == pytest.approx(price(catalog, "m5.xlarge") + 1)
    assert result.conflicts == []


def test_equal_weights_on_one_offering_conflict_and_the_later_name_wins() -> None:
    """Karpenter: the name later in the alphabet is taken first; the other is applied nowhere (not even where
    it alone would select)."""
    catalog = load_default_catalog()
    a = ov("a", [req(FAMILY, "In", "m5")], price="1")
    b = ov("b", [req(TYPE, "In", "m5.large")], price="2")
    result = evaluate_overlays(catalog, [a, b])
    assert result.conflicts == ["a"]
    assert price(result.catalog, "m5.large") == 2
    assert price(result.catalog, "m5.xlarge") == price(catalog, "m5.xlarge")


def test_a_requirement_on_the_nodepool_prices_that_pool_only() -> None:
    """Karpenter evaluates overlays per NodePool: its name and template labels count as the type's labels."""
    catalog = load_default_catalog()
    pools = {"a": overlay_pool_labels("a", {"team": "web"}), "b": overlay_pool_labels("b", {})}
    by_pool = ov("pool-a", [req("karpenter.sh/nodepool", "In", "a"), req(TYPE, "In", "m5.large")], price="0")
    by_label = ov("team-web", [req("team", "In", "web"), req(TYPE, "In", "m5.xlarge")], price="0.01")
    result = evaluate_overlays(catalog, [by_pool, by_label], pools)
    assert price(result.pools["a"], "m5.large") == 0 and price(result.pools["a"], "m5.xlarge") == 0.01
    assert price(result.pools["b"], "m5.large") == 0.096 and result.pools["b"].get("m5.xlarge") is \
        catalog.get("m5.xlarge")
    assert result.catalog is catalog  # no pool in particular: neither selects
    assert evaluate_overlays(catalog, [by_pool]).catalog is catalog  # without pools: nothing to select


def test_overlays_without_pool_keys_price_every_pool_alike() -> None:
    catalog = load_default_catalog()
    pools = {"a": overlay_pool_labels("a", {}), "b": overlay_pool_labels("b", {})}
    result = evaluate_overlays(catalog, [ov("sp", [req(FAMILY, "In", "m5")], price="0.5")], pools)
    assert result.pools == {} and price(result.catalog, "m5.large") == 0.5


def test_a_conflict_in_one_pool_applies_the_overlay_nowhere() -> None:
    catalog = load_default_catalog()
    pools = {"a": overlay_pool_labels("a", {}), "b": overlay_pool_labels("b", {})}
    in_a = ov("z-a", [req("karpenter.sh/nodepool", "In", "a"), req(TYPE, "In", "m5.large")], price="1")
    both = ov("a-both", [req(TYPE, "In", "m5.large", "m5.xlarge")], price="2")
    result = evaluate_overlays(catalog, [in_a, both], pools)
    assert result.conflicts == ["a-both"]  # same weight as z-a on m5.large in pool a
    assert price(result.pools["b"], "m5.xlarge") == price(catalog, "m5.xlarge")  # so not even in pool b


def test_capacity_merges_by_weight_and_conflicts_on_the_same_resource() -> None:
    catalog = load_default_catalog()
    heavy = ov("heavy", [req(TYPE, "In", "m5.large")], capacity={"example.com/fpga": "2"}, weight=20)
    light = ov("light", [req(FAMILY, "In", "m5")], capacity={"example.com/fpga": "1", "example.com/nic": "4"},
               weight=10)
    result = evaluate_overlays(catalog, [light, heavy])
    assert result.capacity["m5.large"] == {"example.com/fpga": "2", "example.com/nic": "4"}
    assert result.capacity["m5.xlarge"] == {"example.com/fpga": "1", "example.com/nic": "4"}
    m5_types = sum(1 for it in catalog.instance_types if it.name.startswith("m5."))
    assert result.gave_capacity == {"heavy": 1, "light": m5_types}  # light still adds example.com/nic to m5.large
    twin = ov("twin", [req(TYPE, "In", "m5.large")], capacity={"example.com/fpga": "3"}, weight=20)
    assert evaluate_overlays(catalog, [heavy, twin]).conflicts == ["heavy"]


def test_apply_keeps_its_last_result_for_the_same_inputs() -> None:
    catalog = load_default_catalog()
    overlays = [ov("sp", [req(FAMILY, "In", "m5")], priceAdjustment="-20%")]
    first = apply_overlays(catalog, overlays)
    assert apply_overlays(catalog, list(overlays)) is first
    other = apply_overlays(catalog, [ov("sp", [req(FAMILY, "In", "m5")], priceAdjustment="-30%")])
    assert other is not first and price(other, "m5.large") == pytest.approx(0.7 * 0.096)


def test_a_refreshing_catalog_source_is_priced_as_its_current_catalog() -> None:
    catalog = load_default_catalog()

    class Source:  # like gateways.instance_types.LiveCatalog
        def current(self) -> Any:
            return catalog

    out = apply_overlays(Source(), [ov("sp", [req(FAMILY, "In", "m5")], price="0.5")])  # type: ignore[arg-type]
    assert price(out, "m5.large") == 0.5 and out.get("c5.large") is catalog.get("c5.large")
