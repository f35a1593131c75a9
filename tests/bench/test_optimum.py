"""The exact optimum on cases small enough to check by hand."""

from __future__ import annotations

from api.catalog import InstanceTypeCatalog
from bench.clusters import pod
from bench.optimum import optimum_for_objects


def _catalog(*types: tuple[str, str, str, float, str]) -> InstanceTypeCatalog:
    return InstanceTypeCatalog.model_validate({"instanceTypes": [
        {"name": name, "cpu": cpu, "memory": mem, "pods": 20, "arch": arch,
         "offerings": [{"zone": "z1", "capacityType": "on-demand", "price": price}]}
        for name, cpu, mem, price, arch in types]})


SMALL_BIG = _catalog(("a.small", "2", "8Gi", 0.10, "amd64"), ("a.big", "4", "16Gi", 0.15, "amd64"))


def test_four_one_cpu_pods_take_one_four_cpu_node_not_two_small() -> None:
    result = optimum_for_objects([pod(f"p{i}", "n", 1, 1) for i in range(4)], SMALL_BIG, time_limit=5)
    assert result.status == "OPTIMAL"
    assert result.cost_per_hour == 0.15
    assert result.lower_bound == 0.15
    assert [(n.instance_type, n.count) for n in result.nodes] == [("a.big", 1)]


def test_daemonset_overhead_is_counted_on_every_node() -> None:
    ds = pod("agent-1", "n", 0.5, 0.25, owner_kind="DaemonSet", owner="agent")
    objs = [ds, *[pod(f"p{i}", "n", 1, 1) for i in range(4)]]
    result = optimum_for_objects(objs, SMALL_BIG, time_limit=5)
    # a.big keeps 3.5 cpu (3 pods), a.small 1.5 cpu (1 pod): 0.25 beats 2 x a.big (0.30) and 4 x a.small (0.40)
    assert result.status == "OPTIMAL"
    assert result.cost_per_hour == 0.25
    assert sorted((n.instance_type, n.count) for n in result.nodes) == [("a.big", 1), ("a.small", 1)]
    assert result.pods == 4


def test_node_selectors_decide_which_types_pods_may_share() -> None:
    catalog = _catalog(("x86.big", "4", "16Gi", 0.10, "amd64"), ("arm.big", "4", "16Gi", 0.30, "arm64"))
    arm_only = pod("b", "n", 1, 1, node_selector={"kubernetes.io/arch": "arm64"})
    # the free pod joins the arm pod on one arm node
    shared = optimum_for_objects([pod("a", "n", 1, 1), arm_only], catalog, time_limit=5)
    assert shared.cost_per_hour == 0.30
    assert [n.instance_type for n in shared.nodes] == ["arm.big"]
    # pinned to amd64, it needs a node of its own
    apart = optimum_for_objects([pod("a", "n", 1, 1, node_selector={"kubernetes.io/arch": "amd64"}), arm_only],
                                catalog, time_limit=5)
    assert apart.cost_per_hour == 0.40
    assert sorted(n.instance_type for n in apart.nodes) == ["arm.big", "x86.big"]


def test_a_pod_too_big_for_every_type_is_reported_not_packed() -> None:
    objs = [pod("huge", "n", 64, 1), pod("ok", "n", 1, 1)]
    result = optimum_for_objects(objs, SMALL_BIG, time_limit=5)
    assert result.unplaceable_pods == ["default/huge"]
    assert result.cost_per_hour == 0.10


def test_bound_never_exceeds_the_solution_on_a_generated_cluster() -> None:
    from bench.clusters import random_cluster

    result = optimum_for_objects(random_cluster(12, seed=5), time_limit=3)
    assert result.status in ("OPTIMAL", "FEASIBLE")
    assert result.cost_per_hour is not None
    assert 0 < result.lower_bound <= result.cost_per_hour <= result.greedy_cost_per_hour + 1e-9
