"""api/node_overlay.py: Karpenter's NodeOverlay fields, rules and price arithmetic."""

from __future__ import annotations

from typing import Any

import pytest

from api.node_overlay import (
    NodeOverlay,
    adjusted_price,
    by_weight,
    node_overlay_warnings,
    validate_node_overlay,
)
from api.snapshot import SnapshotError, parse_snapshot


def overlay(name: str = "sp", **spec: Any) -> dict[str, Any]:
    spec.setdefault("requirements", [{"key": "karpenter.k8s.aws/instance-family", "operator": "In",
                                      "values": ["m5"]}])
    return {"apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay", "metadata": {"name": name}, "spec": spec}


def test_a_savings_plan_overlay_is_valid() -> None:
    assert validate_node_overlay(overlay(priceAdjustment="-20%", weight=10)) == []
    assert validate_node_overlay(overlay(price="0.05")) == []
    assert validate_node_overlay(overlay(capacity={"example.com/fpga": "2"})) == []


@pytest.mark.parametrize(("spec", "problem"), [
    ({"price": "0.1", "priceAdjustment": "+1"}, "spec: cannot set both 'price' and 'priceAdjustment'"),
    ({"price": "-1"}, "spec.price: '-1' must be a price"),
    ({"priceAdjustment": "10%"}, "spec.priceAdjustment: '10%' must be a signed amount"),
    ({"priceAdjustment": "-101%"}, "spec.priceAdjustment: '-101%' must be a signed amount"),
    ({"capacity": {"cpu": "1"}}, "spec.capacity: invalid resource restricted: cpu"),
    ({"weight": 0}, "spec.weight: Input should be greater than or equal to 1"),
    ({"weight": 10001}, "spec.weight: Input should be less than or equal to 10000"),
    ({"requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In"}]},
     "spec.requirements[0]: requirements with operator 'In' must have a value defined"),
    ({"requirements": [{"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gte", "values": ["x"]}]},
     "spec.requirements[0]: requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single positive integer"),
    ({"requirements": [{"key": "k8s.io/foo", "operator": "Exists"}]},
     "spec.requirements[0]: key: label domain \"k8s.io\" is restricted"),
    ({"bogus": 1}, "spec.bogus: unknown field"),
])
def test_invalid_overlays_name_the_field(spec: dict[str, Any], problem: str) -> None:
    problems = validate_node_overlay(overlay(**spec))
    assert any(p.startswith(problem) for p in problems), problems


def test_requirements_are_required_but_may_be_empty() -> None:
    doc = overlay(price="1")
    del doc["spec"]["requirements"]
    assert validate_node_overlay(doc) == ["spec.requirements: required field is missing"]
    assert validate_node_overlay(overlay(price="1", requirements=[])) == []


def test_the_nodepool_label_is_a_valid_key_and_capacity_is_warned_about() -> None:
    doc = overlay(requirements=[{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["default"]}],
                  price="0.01")
    assert validate_node_overlay(doc) == [] and node_overlay_warnings(doc) == []
    (warning,) = node_overlay_warnings(overlay(capacity={"example.com/fpga": "1"}))
    assert "does not count extended resources" in warning


@pytest.mark.parametrize(("price", "change", "expected"), [
    (0.10, None, 0.10), (0.10, "0.05", 0.05), (0.10, "+0.02", 0.12), (0.10, "-0.02", 0.08),
    (0.10, "+10%", 0.11), (0.10, "-15%", 0.085), (0.10, "-100%", 0.0), (0.10, "-0.5", 0.0),
])
def test_adjusted_price_follows_karpenter(price: float, change: str | None, expected: float) -> None:
    assert adjusted_price(price, change) == pytest.approx(expected)


def test_order_is_weight_then_the_later_name_first() -> None:
    docs = [NodeOverlay.model_validate(overlay(n, weight=w, price="1") if w else overlay(n, price="1"))
            for n, w in (("a", 5), ("b", 5), ("c", None), ("d", 50))]
    assert [o.name for o in by_weight(docs)] == ["d", "b", "a", "c"]


def test_a_snapshot_reads_overlays_and_refuses_invalid_ones() -> None:
    import yaml

    snap = parse_snapshot(yaml.safe_dump(overlay(price="0.05")), "s.yaml")
    assert [o.name for o in snap.node_overlays] == ["sp"] and snap.to_objects()[0]["spec"]["price"] == "0.05"
    with pytest.raises(SnapshotError, match="cannot set both"):
        parse_snapshot(yaml.safe_dump(overlay(price="0.05", priceAdjustment="+1")), "s.yaml")
    with pytest.raises(SnapshotError, match=r"apiVersion 'karpenter\.sh/v1' is not supported for NodeOverlay"):
        parse_snapshot(yaml.safe_dump({**overlay(price="1"), "apiVersion": "karpenter.sh/v1"}), "s.yaml")
