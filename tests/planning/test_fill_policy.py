"""`--fill-policy` (planning/scheduling/fill_policy.py; docs/semantics.md §3.7): under CostAware a pod does not grow a
new node onto types that cost over 25% more per unit of its pods' mix; Greedy is Karpenter's fill. Pure: snapshots
and small catalogs of the AWS types' shapes and prices."""

from __future__ import annotations

import pytest
from planning_factory import nodepool, pod, snapshot

from api.catalog import InstanceType, InstanceTypeCatalog, Offering
from planning.cluster import Cluster
from planning.provisioning.provisioner import decide
from planning.scheduling.fill_policy import FillPolicy, configured, dearer_fill, fill_policy, parse
from planning.scheduling.simulation import Scheduler
from planning.scheduling.type_options import TypeOption, best_unit_price, unit_price

GI = 2**30
# name -> (vCPU, GiB, on-demand $/h), as us-east-1 prices them
SHAPES = {"r5a.4xlarge": (16, 128, 0.904), "f2.6xlarge": (24, 256, 1.98),
          "c6a.large": (2, 4, 0.0765), "c6a.xlarge": (4, 8, 0.153), "c6a.4xlarge": (16, 32, 0.612),
          "t3.medium": (2, 4, 0.0416)}


def catalog(*names: str) -> InstanceTypeCatalog:
    return InstanceTypeCatalog(instance_types=[
        InstanceType(name=n, cpu=str(SHAPES[n][0]), memory=f"{SHAPES[n][1]}Gi", pods=110,
                     offerings=(Offering(zone="us-east-1a", capacity_type="on-demand", price=SHAPES[n][2]),))
        for n in names])


def large_pods(n: int) -> list[dict]:
    """basic's large pods (Karpenter's performance suite): 3.5 CPU, 28 GiB, 8 GiB a CPU."""
    return [pod(f"large-{i}", None, cpu="3500m", memory="28Gi") for i in range(n)]


def launches(policy: FillPolicy, cat: InstanceTypeCatalog, pods: list[dict]) -> list[tuple[str, int, float]]:
    with fill_policy(policy):
        decision = decide(snapshot(nodepool(), *pods), cat)
    assert decision.unservable == []
    return sorted((ln.replacement.instance_types[0], len(ln.pods), ln.replacement.price) for ln in decision.launches)


def test_cost_aware_keeps_four_large_pods_on_a_memory_type_where_greedy_grows_to_six_on_a_dearer_one() -> None:
    cat = catalog("r5a.4xlarge", "f2.6xlarge")
    greedy = launches(FillPolicy.GREEDY, cat, large_pods(12))
    aware = launches(FillPolicy.COST_AWARE, cat, large_pods(12))
    assert greedy == [("f2.6xlarge", 6, 1.98)] * 2  # Karpenter's fill: a type still fits, so the pod joins
    assert aware == [("r5a.4xlarge", 4, 0.904)] * 3
    assert sum(p for *_, p in aware) < sum(p for *_, p in greedy)  # $2.71/h against $3.96/h for the same pods


def test_sizes_of_one_family_still_fill_one_node_and_a_burstable_type_holds_none_small() -> None:
    cat = catalog("c6a.large", "c6a.xlarge", "c6a.4xlarge", "t3.medium")
    pods = [pod(f"web-{i}", None, cpu="1", memory="1Gi") for i in range(10)]
    assert launches(FillPolicy.COST_AWARE, cat, pods) == launches(FillPolicy.GREEDY, cat, pods) == [
        ("c6a.4xlarge", 10, 0.612)]  # not ten t3.medium at $0.0416: its price buys a CPU baseline, not a core


def test_only_provisioning_fills_cost_aware_a_simulation_without_fill_is_greedy() -> None:
    cluster = Cluster.from_snapshot(snapshot(nodepool(), *large_pods(6)), catalog("r5a.4xlarge", "f2.6xlarge"))
    sched = Scheduler(cluster)
    assert configured() is FillPolicy.COST_AWARE  # the default
    plain = sched.simulate([], cluster.pending, max_new=1)  # a consolidation's replacement: one node, as Karpenter
    (nn,) = plain.new_nodes
    assert len(nn.pods) == 6 and plain.all_scheduled
    filled = Scheduler(cluster).simulate([], cluster.pending, max_new=3, fill=True)
    assert sorted(len(n.pods) for n in filled.new_nodes) == [2, 4]


def test_a_node_held_back_takes_a_smaller_pod_that_keeps_its_price() -> None:
    """The refusal is per pod: a small pod that fits the node's best type still joins it after a large one was
    turned away (the refusal memo is per requests, not per node)."""
    cat = catalog("r5a.4xlarge", "f2.6xlarge")
    pods = [*large_pods(5), pod("small-0", None, cpu="900m", memory="3100Mi")]
    assert launches(FillPolicy.COST_AWARE, cat, pods) == [("r5a.4xlarge", 1, 0.904), ("r5a.4xlarge", 5, 0.904)]


def option(name: str) -> TypeOption:
    it = catalog(name).instance_types[0]
    return TypeOption(it, it.offerings, float(SHAPES[name][0]), SHAPES[name][1] * GI, 110)


def test_unit_price_counts_the_scarcer_resource_and_dearer_fill_its_rise() -> None:
    assert unit_price(1.0, 16, 128, 4, 16) == pytest.approx(1.0 / 4)  # cpu holds 4 copies, memory 8
    assert unit_price(1.0, 0, 128, 4, 16) == float("inf")
    r5a, f2 = option("r5a.4xlarge"), option("f2.6xlarge")
    mix = (17.5, 140 * GI)  # five large pods
    assert best_unit_price([r5a, f2], *mix)[1] is r5a
    assert dearer_fill([r5a, f2], [f2], *mix)  # 1.98 / (24/17.5) against 0.904 / (128/140): 58% dearer
    assert not dearer_fill([r5a, f2], [r5a, f2], *mix)
    with fill_policy(FillPolicy.GREEDY):
        assert not dearer_fill([r5a, f2], [f2], *mix)
    assert not dearer_fill([option("t3.medium"), f2], [f2], *mix)  # no sustained type before: nothing to hold to


def test_parse_names_the_values() -> None:
    assert parse("Greedy") is FillPolicy.GREEDY and parse("CostAware") is FillPolicy.COST_AWARE
    with pytest.raises(ValueError, match="not CostAware or Greedy"):
        parse("cheapest")


def test_pods_with_the_tolerations_every_real_pod_carries_fill_the_same() -> None:
    """A real cluster's pods carry not-ready/unreachable tolerations: the refusal memo keys on them too."""
    not_ready = [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                  "tolerationSeconds": 300}]
    pods = [pod(f"large-{i}", None, cpu="3500m", memory="28Gi", tolerations=not_ready) for i in range(12)]
    pods += [pod(f"small-{i}", None, cpu="900m", memory="3100Mi", tolerations=not_ready) for i in range(3)]
    got = launches(FillPolicy.COST_AWARE, catalog("r5a.4xlarge", "f2.6xlarge"), pods)
    assert [(t, n) for t, n, _ in got] == [("r5a.4xlarge", 5)] * 3  # four large and one small each
