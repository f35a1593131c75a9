"""The consolidation search loops stop when their time limit passes, read from the pass's injected clock."""

from __future__ import annotations

from collections.abc import Callable

from planning_factory import AT, node_and_claim, nodepool, pod, snapshot

from api import labels as L
from planning.cluster import Cluster
from planning.disruption.candidates import GRACEFUL, Candidate, build_candidates
from planning.disruption.method import Limits, PassContext
from planning.disruption.multinode import MultiNodeConsolidation
from planning.disruption.singlenode import SingleNodeConsolidation
from planning.scheduling.simulation import Scheduler

M5 = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
      {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"]}]


class FakeClock:
    """Seconds that pass only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _context(objs: list, clock: FakeClock, seconds_per_simulation: float) -> PassContext:
    """A pass context whose every scheduling simulation takes `seconds_per_simulation` on the fake clock."""
    cluster = Cluster.from_snapshot(snapshot(nodepool(requirements=M5), *objs))
    scheduler = Scheduler(cluster)
    simulate: Callable = scheduler.simulate

    def slow_simulate(*args, **kwargs):
        clock.now += seconds_per_simulation
        return simulate(*args, **kwargs)

    scheduler.simulate = slow_simulate  # type: ignore[method-assign]
    return PassContext(cluster, scheduler, AT, Limits(), clock=clock)


def _candidates(ctx: PassContext, method: SingleNodeConsolidation | MultiNodeConsolidation) -> list[Candidate]:
    found = build_candidates(ctx.cluster, AT, set(), GRACEFUL).candidates
    return [c for c in found if method.should_disrupt(c)]


def _unschedulable_nodes() -> list:
    """Four nodes whose pod fits nowhere, so single-node consolidation tries (and blocks) each in turn."""
    objs: list = []
    for name in ("a", "b", "c", "d"):
        objs += [node_and_claim(name, "m5.large"), pod(f"x{name}-1", name, node_selector={"gpu": "yes"})]
    return objs


def test_single_node_stops_once_its_time_limit_passes_mid_way() -> None:
    clock = FakeClock()
    ctx = _context(_unschedulable_nodes(), clock, seconds_per_simulation=100)  # limit: 180 s
    method = SingleNodeConsolidation(ctx)
    assert method.compute_commands({"default": 10}, _candidates(ctx, method)) == []
    # a at t=0 and b at t=100 were tried; at t=200 the 180 s limit has passed, so c and d never are
    assert sorted(ctx.blocked) == ["a", "b"] and clock.now == 1200.0


def test_single_node_tries_every_candidate_while_time_stands_still() -> None:
    ctx = _context(_unschedulable_nodes(), FakeClock(), seconds_per_simulation=0)
    method = SingleNodeConsolidation(ctx)
    method.compute_commands({"default": 10}, _candidates(ctx, method))
    assert sorted(ctx.blocked) == ["a", "b", "c", "d"]


def test_multi_node_returns_the_best_prefix_found_before_the_limit() -> None:
    objs: list = []
    for i in range(8):
        objs += [node_and_claim(f"n{i}", "m5.2xlarge"), pod(f"x{i}-1", f"n{i}", "400m", "1Gi")]
    unhurried = _context(objs, FakeClock(), seconds_per_simulation=0)
    method = MultiNodeConsolidation(unhurried)
    (full,) = method.compute_commands({"default": 8}, _candidates(unhurried, method))
    assert len(full.nodes) == 8

    clock = FakeClock()
    hurried = _context(objs, clock, seconds_per_simulation=40)  # limit: 60 s, so two probes (t=0, t=40)
    method = MultiNodeConsolidation(hurried)
    (cut,) = method.compute_commands({"default": 8}, _candidates(hurried, method))
    assert len(cut.nodes) == 7 and clock.now == 1080.0
