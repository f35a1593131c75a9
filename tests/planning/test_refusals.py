"""Typed refusals: the simulation and the consolidation what-if say why not with an enum, beside the message."""

from __future__ import annotations

from planning_factory import AT, node_and_claim, nodepool, pod, snapshot

from api import labels as L
from planning.cluster import Cluster
from planning.disruption.candidates import GRACEFUL, build_candidates
from planning.disruption.consolidation import Attempt, Refusal
from planning.disruption.method import PassContext
from planning.disruption.singlenode import SingleNodeConsolidation
from planning.planner.plan import plan
from planning.scheduling.simulation import Scheduler, Unschedulable

ON_DEMAND = {"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]}


def _only(*types: str) -> dict:
    return nodepool(requirements=[ON_DEMAND, {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": list(types)}])


def _attempt(pool: dict, *objs) -> Attempt:
    """Single-node consolidation's what-if for node "a"."""
    cluster = Cluster.from_snapshot(snapshot(pool, *objs))
    ctx = PassContext(cluster, Scheduler(cluster), AT)
    (cand,) = [c for c in build_candidates(cluster, AT, set(), GRACEFUL).candidates if c.name == "a"]
    method = SingleNodeConsolidation(ctx)
    return method.compute_consolidation(method, [cand], single=True)


def test_simulation_outcome_is_an_enum_beside_the_message() -> None:
    cluster = Cluster.from_snapshot(snapshot(_only("m5.xlarge"), node_and_claim("a", "m5.4xlarge"),
                                             pod("huge-1", "a", "60", "1Gi"),
                                             *[pod(f"x-{i}", "a", "3", "10Gi") for i in range(3)]))
    a = cluster.by_name["a"]
    huge, *three = sorted(a.pods, key=lambda p: p.name)
    sim = Scheduler(cluster).simulate([a], [huge])
    assert sim.unschedulable is Unschedulable.NO_FIT
    assert sim.failure_message().startswith("Not all pods would schedule, default/huge-1 => ")
    assert Scheduler(cluster).simulate([a], three).unschedulable is Unschedulable.TOO_MANY_NEW_NODES
    assert Scheduler(cluster).simulate([a], three, max_new=3).unschedulable is None


def test_consolidation_refusals_are_typed_and_keep_their_messages() -> None:
    nowhere = _attempt(_only("m5.large"), node_and_claim("a", "m5.large"),
                       pod("x-1", "a", "1", "1Gi", node_selector={"gpu": "yes"}))
    assert nowhere.command is None and nowhere.refusal is Refusal.UNSCHEDULABLE
    assert nowhere.message.startswith("Not all pods would schedule, default/x-1 => ")
    crowded = _attempt(_only("m5.xlarge"), node_and_claim("a", "m5.4xlarge"),
                       *[pod(f"x-{i}", "a", "3", "10Gi") for i in range(3)])
    assert crowded.refusal is Refusal.TOO_MANY_NEW_NODES
    assert crowded.message == "Can't remove without creating more than 1 candidates"
    dear = _attempt(_only("m5.large"), node_and_claim("a", "m5.large"), pod("x-1", "a", "1500m", "1Gi"))
    assert dear.refusal is Refusal.NOT_CHEAPER and dear.message == "Can't replace with a cheaper node"


def test_single_node_blocks_only_a_node_whose_pods_fit_nowhere() -> None:
    dear = plan(snapshot(_only("m5.large"), node_and_claim("a", "m5.large"), pod("x-1", "a", "1500m", "1Gi")), AT)
    assert dear.blocked == []
    assert any(e.reason == "Unconsolidatable" and e.message == "Can't replace with a cheaper node" for e in dear.events)
    nowhere = plan(snapshot(_only("m5.large"), node_and_claim("a", "m5.large"),
                            pod("x-1", "a", "1", "1Gi", node_selector={"gpu": "yes"})), AT)
    assert [b.node for b in nowhere.blocked] == ["a"]
