"""bench/basic_packing.py reproduces basic's scale-out only while its set-up is the suite's: 1,000 pending pods of
the two shapes, the suite's NodePool with its `instance-cpu Lt 32` bound, every pod on exactly one new node, each
node launched as the cheapest of its NodeClaim's options (on-demand lowest-price)."""

from __future__ import annotations

from collections import Counter
from functools import cache

import pytest

from api.catalog import InstanceTypeCatalog, load_default_catalog
from api.instance_types.labels import CPU as INSTANCE_CPU_LABEL
from bench.basic_packing import Node, pending_pods, scale_out, suite_pool, utilization
from bench.karpenter_scenarios import SCENARIOS
from bench.karpenter_world import node_pool

GI = 2**30


@cache
def _nodes(batches: int) -> tuple[InstanceTypeCatalog, list[Node]]:
    catalog = load_default_catalog()
    return catalog, scale_out(catalog, batches)


def test_the_pods_are_basics_thousand_of_two_shapes() -> None:
    pods = pending_pods(SCENARIOS["basic"].workloads)
    shapes = Counter((p["spec"]["containers"][0]["resources"]["requests"]["cpu"],
                      p["spec"]["containers"][0]["resources"]["requests"]["memory"]) for p in pods)
    assert shapes == {("900m", "3100Mi"): 500, ("3500m", "28Gi"): 500}
    assert len({p["metadata"]["uid"] for p in pods}) == 1000
    assert all(p["status"]["phase"] == "Pending" and "nodeName" not in p["spec"] for p in pods)


def test_the_pool_is_the_suites_with_its_size_bound() -> None:
    assert suite_pool() == node_pool()
    reqs = suite_pool()["spec"]["template"]["spec"]["requirements"]
    assert {"key": INSTANCE_CPU_LABEL, "operator": "Lt", "values": ["32"]} in reqs
    moved = suite_pool(17)["spec"]["template"]["spec"]["requirements"]
    assert {"key": INSTANCE_CPU_LABEL, "operator": "Lt", "values": ["17"]} in moved


@pytest.mark.parametrize("batches", [1, 3])
def test_every_pod_lands_once_on_a_node_of_the_cheapest_option_below_32_vcpu(batches: int) -> None:
    catalog, nodes = _nodes(batches)
    uids = [u for n in nodes for u in n.uids]
    assert len(uids) == len(set(uids)) == 1000
    for n in nodes:
        options = [catalog.get(t) for t in n.options]
        assert all(it is not None and it.cpu_cores < 32 for it in options)
        prices = {it.name: min(o.price for o in it.offerings if o.capacity_type == "on-demand")
                  for it in options if it is not None}
        assert n.itype == n.options[0] and prices[n.itype] == min(prices.values())
        assert n.cpu_req <= n.cpu_alloc and n.mem_req <= n.mem_alloc  # fits as the planner estimates it
        assert n.mem_alloc < n.mem_kubelet  # the estimate keeps the 7.5% VM overhead the kubelet does not report


def test_utilization_is_the_mean_over_nodes_and_the_pooled_figure_beside_it() -> None:
    def node(mem_req: int, mem_kubelet: int) -> Node:
        return Node("x", ["x"], 0.1, 1.0, mem_req * GI, 2.0, mem_kubelet * GI, 2.0, mem_kubelet * GI, Counter(), [])

    got = utilization([node(30, 40), node(10, 100)])
    assert got["memoryUtil"] == pytest.approx((0.75 + 0.1) / 2, abs=1e-3)
    assert got["memoryUtilPooled"] == pytest.approx(40 / 140, abs=1e-3)
    assert got["cpuUtil"] == 0.5
