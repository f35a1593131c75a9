"""Karpenter v1.15's API changes as the planner reads them: a NodePool without consolidateAfter consolidates at once
(kubernetes-sigs/karpenter#3220), and NodePool requirements with Gte and Lte select, launch and drift by number
(the operators v1.15's full enum lists, kubernetes-sigs/karpenter#2924)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from planning_factory import AT, node_and_claim, nodepool, pod, snapshot

from api import labels as L
from api.catalog import load_default_catalog
from planning.cluster import Cluster, parse_pool
from planning.disruption.drift import drift_reason
from planning.planner.plan import plan
from planning.provisioning.provisioner import decide
from planning.selectors import match_requirement

CPU = "karpenter.k8s.aws/instance-cpu"


def pool_without_consolidate_after() -> dict:
    pool = nodepool()
    del pool["spec"]["disruption"]["consolidateAfter"]
    return pool


def test_a_missing_consolidate_after_is_0s_and_never_stays_never() -> None:
    assert parse_pool(pool_without_consolidate_after()).consolidate_after == timedelta(0)
    assert parse_pool(nodepool(consolidate_after="Never")).consolidate_after is None
    assert parse_pool(nodepool(consolidate_after="5m")).consolidate_after == timedelta(minutes=5)


def test_a_pool_without_consolidate_after_deletes_an_empty_node_at_once() -> None:
    """A pod left the node this very second: with 0s the node is consolidatable now (the boundary counts)."""
    result = plan(snapshot(pool_without_consolidate_after(), node_and_claim("a", last_pod_event=AT)), AT)
    assert [(c.method, c.nodes) for c in result.commands] == [("Emptiness", ["a"])]


@pytest.mark.parametrize(("op", "bound", "have", "ok"), [
    ("Gte", "4", "4", True), ("Gte", "4", "3", False), ("Lte", "4", "4", True), ("Lte", "4", "5", False),
    ("Gt", "4", "4", False), ("Lt", "4", "4", False), ("Gte", "4", "four", False), ("Gte", "4", None, False)])
def test_numeric_operators_compare_integers_and_an_absent_label_fails(op: str, bound: str, have: str | None,
                                                                      ok: bool) -> None:
    labels = {} if have is None else {CPU: have}
    assert match_requirement(CPU, op, [bound], labels) is ok


def test_a_gte_lte_pool_launches_only_types_within_the_bounds() -> None:
    reqs = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
            {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]},
            {"key": CPU, "operator": "Gte", "values": ["8"]}, {"key": CPU, "operator": "Lte", "values": ["16"]}]
    (launch,) = decide(snapshot(nodepool(requirements=reqs), pod("web-0", None, cpu="1"))).launches
    cores = {load_default_catalog().get(t).cpu_cores for t in launch.replacement.instance_types}
    assert cores and min(cores) == 8 and max(cores) <= 16, cores


def test_a_node_below_a_gte_bound_is_requirements_drifted() -> None:
    def drift(bound: str) -> str | None:
        pool = nodepool(requirements=[{"key": CPU, "operator": "Gte", "values": [bound]}])
        cluster = Cluster.from_snapshot(snapshot(pool, node_and_claim("a", extra_labels={CPU: "4"})))
        return drift_reason(cluster.by_name["a"], cluster.pools["default"])

    assert drift("4") is None
    assert drift("8") == "RequirementsDrifted"
