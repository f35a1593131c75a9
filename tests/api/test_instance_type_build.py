"""Offerings of a discovered catalog (api/instance_types/build.py), as Karpenter's offering resolver and pricing
provider make them."""

from __future__ import annotations

from support.ec2_types_data import describe_item

from api.instance_types.build import build_catalog


def _offs(on_demand: dict[str, float], spot: dict[tuple[str, str], float]) -> dict[tuple[str, str], tuple[float, bool]]:
    cat = build_catalog("eu-west-1", [describe_item("m5.large")], {"m5.large": {"eu-west-1a", "eu-west-1b"}},
                        on_demand, spot)
    return {(o.zone, o.capacity_type): (o.price, o.available) for o in cat.get("m5.large").offerings}  # type: ignore


def test_spot_takes_on_demand_until_a_history_is_read() -> None:
    offs = _offs({"m5.large": 0.107}, {})
    assert offs[("eu-west-1a", "spot")] == (0.107, True) and offs[("eu-west-1b", "on-demand")] == (0.107, True)


def test_a_zone_without_a_spot_price_has_no_spot_offering_available() -> None:
    offs = _offs({"m5.large": 0.107}, {("m5.large", "eu-west-1a"): 0.04, ("c5.large", "eu-west-1b"): 0.03})
    assert offs[("eu-west-1a", "spot")] == (0.04, True)
    assert offs[("eu-west-1b", "spot")] == (0.0, False)


def test_a_type_without_an_on_demand_price_is_listed_unavailable() -> None:
    offs = _offs({}, {})
    assert offs and all(not available for _, available in offs.values())


def test_a_type_offered_nowhere_is_left_out() -> None:
    cat = build_catalog("eu-west-1", [describe_item("m5.large")], {}, {"m5.large": 0.1}, {})
    assert cat.instance_types == [] and cat.region == "eu-west-1"
