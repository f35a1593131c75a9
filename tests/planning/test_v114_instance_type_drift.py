"""InstanceTypeNotFound drift (Karpenter nodeclaim/disruption/drift.go; docs/semantics.md §4.1, §12).

A NodeClaim older than an hour drifts when the catalog no longer lists its instance type, or lists no offering
(available or not) for its zone and capacity type; reserved capacity also matches on-demand offerings.
"""

from __future__ import annotations

from datetime import timedelta

from planning_factory import AT, OLD, node_and_claim, nodepool, pod, snapshot

from api.catalog import InstanceTypeCatalog, load_default_catalog
from planning.cluster import Cluster
from planning.disruption.drift import INSTANCE_TYPE_NOT_FOUND, instance_type_not_found
from planning.planner.plan import plan


def _catalog(drop: str = "", offerings: list[dict] | None = None) -> InstanceTypeCatalog:
    """The default catalog without `drop`, or with m5.xlarge's offerings replaced."""
    base = load_default_catalog()
    types = []
    for it in base.instance_types:
        if it.name == drop:
            continue
        if offerings is not None and it.name == "m5.xlarge":
            it = it.model_copy(update={"offerings": [type(it.offerings[0]).model_validate(o) for o in offerings]})
        types.append(it)
    return InstanceTypeCatalog(instance_types=types)  # a fresh model: model_copy would keep the by_name cache


def _node(**kw):
    cluster = Cluster.from_snapshot(snapshot(nodepool(), node_and_claim("a", "m5.xlarge", **kw)))
    return cluster.by_name["a"]


def test_a_type_gone_from_the_catalog_is_drift() -> None:
    assert instance_type_not_found(_node(), _catalog(drop="m5.xlarge"), AT) == INSTANCE_TYPE_NOT_FOUND
    assert instance_type_not_found(_node(), _catalog(), AT) is None


def test_only_after_an_hour() -> None:
    young = _node(created=AT - timedelta(minutes=59))
    assert instance_type_not_found(young, _catalog(drop="m5.xlarge"), AT) is None
    exactly = _node(created=AT - timedelta(hours=1))
    assert instance_type_not_found(exactly, _catalog(drop="m5.xlarge"), AT) is None  # Karpenter: Since > 1h


def test_no_offering_in_its_zone_and_capacity_type_is_drift() -> None:
    other_zone = [{"zone": "us-east-1b", "capacityType": "on-demand", "price": 0.2}]
    assert instance_type_not_found(_node(), _catalog(offerings=other_zone), AT) == INSTANCE_TYPE_NOT_FOUND
    spot_only = [{"zone": "us-east-1a", "capacityType": "spot", "price": 0.1}]
    assert instance_type_not_found(_node(), _catalog(offerings=spot_only), AT) == INSTANCE_TYPE_NOT_FOUND


def test_an_unavailable_offering_still_counts() -> None:
    ice = [{"zone": "us-east-1a", "capacityType": "on-demand", "price": 0.2, "available": False}]
    assert instance_type_not_found(_node(), _catalog(offerings=ice), AT) is None


def test_reserved_also_matches_on_demand() -> None:
    od = [{"zone": "us-east-1a", "capacityType": "on-demand", "price": 0.2}]
    assert instance_type_not_found(_node(capacity_type="reserved"), _catalog(offerings=od), AT) is None
    spot = [{"zone": "us-east-1a", "capacityType": "spot", "price": 0.1}]
    assert instance_type_not_found(_node(capacity_type="reserved"), _catalog(offerings=spot), AT) \
        == INSTANCE_TYPE_NOT_FOUND


def test_an_empty_catalog_drifts_nothing() -> None:
    empty = InstanceTypeCatalog(instance_types=[])
    assert instance_type_not_found(_node(), empty, AT) is None


def test_the_pass_replaces_a_node_whose_type_is_gone() -> None:
    snap = snapshot(nodepool(), node_and_claim("a", "m5.xlarge", created=OLD), pod("w-1", "a"),
                    node_and_claim("x", "m5.2xlarge", created=OLD), pod("big-1", "x", cpu="7", memory="1Gi"))
    result = plan(snap, AT, catalog=_catalog(drop="m5.xlarge"))
    drift = [c for c in result.commands if c.method == "Drift"]
    assert [c.nodes for c in drift] == [["a"]]
    assert not [c for c in plan(snap, AT).commands if c.method == "Drift"]


def test_a_pools_drifted_nodes_count_a_gone_type_when_asked_at_a_time() -> None:
    from planning.policies.drift_waves import drifted_in_pool

    cluster = Cluster.from_snapshot(snapshot(nodepool(), node_and_claim("a", "m5.xlarge")),
                                    _catalog(drop="m5.xlarge"))
    assert [n.name for n in drifted_in_pool(cluster, "default", at=AT)] == ["a"]
    assert drifted_in_pool(cluster, "default") == []  # without a time: template and requirements drift only
