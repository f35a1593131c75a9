"""Deprecated pools (docs/semantics.md §15.11): `provisioning.deprecated: true` stops new launches in a pool, for
pending pods and replacements alike; other pools serve; the pool's nodes go the usual ways."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from planning_factory import AT, node_and_claim, nodepool, pod, snapshot, ts

from api import labels as L
from planning.planner.plan import plan
from planning.provisioning.provisioner import Exclusion, decide

ON_DEMAND = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
             {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]}]


def deprecate(pools: list[str], name: str = "retire-old") -> dict[str, Any]:
    return {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": name},
            "spec": {"nodePools": pools, "provisioning": {"deprecated": True}}}


def _pools() -> list[Any]:
    return [nodepool("old", weight=50, requirements=ON_DEMAND), nodepool("new", requirements=ON_DEMAND)]


def test_a_deprecated_pool_launches_nothing_and_the_next_pool_serves():
    pending = pod("web-0", None, cpu="1")
    assert [lt.node_pool for lt in decide(snapshot(*_pools(), pending)).launches] == ["old"]  # the heavier pool
    decision = decide(snapshot(*_pools(), pending, deprecate(["old"])))
    assert [lt.node_pool for lt in decision.launches] == ["new"] and decision.unservable == []


def test_with_no_other_pool_the_pod_waits_and_its_event_names_the_deprecation():
    decision = decide(snapshot(nodepool("old", requirements=ON_DEMAND), pod("web-0", None, cpu="1"),
                               deprecate(["old"])))
    assert decision.launches == []
    (u,) = decision.unservable
    (excl,) = u.exclusions
    assert excl.reason is Exclusion.DEPRECATED and excl.node_pool == "old"
    assert "deprecated by DisruptionPolicy retire-old" in u.message()


def test_a_pool_that_would_not_serve_the_pod_anyway_says_its_own_reason():
    tainted = nodepool("old", requirements=ON_DEMAND, taints=[{"key": "gpu", "effect": "NoSchedule"}])
    (u,) = decide(snapshot(tainted, pod("web-0", None), deprecate(["old"]))).unservable
    assert [e.reason for e in u.exclusions] == [Exclusion.TAINT]


def test_existing_nodes_of_a_deprecated_pool_still_take_pods():
    objs = [*_pools(), node_and_claim("o1", "m5.xlarge", pool="old"), pod("web-0", None, cpu="1")]
    decision = decide(snapshot(*objs, deprecate(["old"])))
    assert decision.launches == [] and decision.scheduled == {"default/web-0": "o1"}


def test_a_drift_replacement_comes_from_another_pool():
    cond = [{"type": "Initialized", "status": "True", "lastTransitionTime": ts(AT - timedelta(hours=2))},
            {"type": "Drifted", "status": "True", "lastTransitionTime": ts(AT - timedelta(hours=1))}]
    old = nodepool("old", weight=50, consolidate_after="Never", requirements=ON_DEMAND)
    new = nodepool("new", consolidate_after="Never", requirements=ON_DEMAND)
    objs = [old, new, node_and_claim("o1", "m5.xlarge", pool="old", conditions=cond), pod("x-1", "o1", cpu="3")]
    (cmd,) = plan(snapshot(*objs, deprecate(["old"])), AT).commands
    assert cmd.method == "Drift" and [r.node_pool for r in cmd.replacements] == ["new"]


def test_an_empty_node_of_a_deprecated_pool_goes_by_emptiness():
    objs = [*_pools(), node_and_claim("o1", "m5.xlarge", pool="old")]
    (cmd,) = plan(snapshot(*objs, deprecate(["old"])), AT).commands
    assert (cmd.method, cmd.nodes) == ("Emptiness", ["o1"])


def test_a_spot_interruption_pre_spin_comes_from_another_pool():
    from planning.provisioning.spot_sizing import size_interrupted

    spot = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["spot"]},
            {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]}]
    objs = [nodepool("old", weight=50, requirements=spot), nodepool("new", requirements=spot),
            node_and_claim("o1", "m5.xlarge", pool="old", capacity_type="spot"), pod("x-1", "o1", cpu="1")]
    assert [lt.node_pool for lt in size_interrupted(snapshot(*objs), "o1", at=AT).launches] == ["old"]
    (launch,) = size_interrupted(snapshot(*objs, deprecate(["old"])), "o1", at=AT).launches
    assert launch.node_pool == "new"
