"""The suite's do-not-disrupt survival check counts exactly the protected pods that are Running and Ready."""

from __future__ import annotations

from typing import Any

from api import labels as L
from bench.karpenter_probe import _protected


def _pod(uid: str, protected: bool, running: bool = True, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"uid": uid, "name": uid, "annotations": {L.DO_NOT_DISRUPT_ANNOTATION: "true"}
                            if protected else {}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"phase": "Running" if running else "Pending",
                                         "conditions": [{"type": "Ready", "status": "True" if running else "False"}]}}


def test_only_healthy_do_not_disrupt_pods_count() -> None:
    pods = [_pod("a", True), _pod("b", False), _pod("c", True, running=False), _pod("d", True, deleting=True)]
    assert _protected(pods) == frozenset({"a"})


def test_an_evicted_protected_pod_fails_the_survival_check() -> None:
    before = _protected([_pod("a", True), _pod("b", True)])
    after_ok = _protected([_pod("a", True), _pod("b", True), _pod("new", True)])
    after_evicted = _protected([_pod("a", True), _pod("b", True, deleting=True)])
    assert before <= after_ok
    assert not before <= after_evicted  # b is being deleted: the check must fail


def _node(itype: str | None) -> dict[str, Any]:
    labels = {L.INSTANCE_TYPE_LABEL: itype} if itype is not None else {}
    return {"metadata": {"name": f"n-{itype}", "labels": labels}}


def test_the_pools_price_sums_known_types_and_counts_the_rest_unpriced() -> None:
    from api.price_table import region_prices
    from bench.karpenter_probe import nodes_price

    prices = region_prices("us-east-1")
    nodes = [_node("r5a.4xlarge"), _node("r5a.4xlarge"), _node("f2.6xlarge"), _node(None), _node("no.such")]
    total, unpriced = nodes_price(nodes, prices)
    assert total == round(2 * prices["r5a.4xlarge"] + prices["f2.6xlarge"], 2) == 3.79  # $0.904, $1.98 an hour
    assert unpriced == 2  # no label yet, a type outside the table: never free
    assert nodes_price([], prices) == (0.0, 0)
