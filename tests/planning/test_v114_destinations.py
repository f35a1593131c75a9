"""consolidateAfter applies to destination nodes (kubernetes-sigs/karpenter#3006, v1.14.0; docs/semantics.md §5.1).

In a consolidation's what-if, a node whose NodeClaim is still under its pool's consolidateAfter (a pod event less
than that ago) takes none of the candidates' pods; pending pods may still go there, and drift ignores the rule.
"""

from __future__ import annotations

from datetime import timedelta

from planning_factory import AT, OLD, node_and_claim, nodepool, pod, snapshot

from api import labels as L
from planning.cluster import Cluster, parse_pod
from planning.disruption.candidates import under_consolidate_after
from planning.planner.plan import plan
from planning.scheduling.simulation import Scheduler

# m5.xlarge (4 cpu) and m5.2xlarge (8 cpu) only: nothing cheaper replaces a, and x's 6-cpu pod stays on x.
M5 = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
      {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.xlarge", "m5.2xlarge"]}]


def _objects(x_event_ago: timedelta, consolidate_after: str = "10m"):
    return [nodepool(requirements=M5, consolidate_after=consolidate_after),
            node_and_claim("a", "m5.xlarge", last_pod_event=OLD), pod("w-1", "a"),
            node_and_claim("x", "m5.2xlarge", last_pod_event=AT - x_event_ago),
            pod("big-1", "x", cpu="6", memory="1Gi")]


def _methods(result):
    return [(c.method, sorted(c.nodes)) for c in result.commands]


def test_a_node_under_consolidate_after_takes_no_candidate_pod() -> None:
    # x had a pod event a minute ago: a's pod may not move there, and no cheaper node can take it
    assert plan(snapshot(*_objects(timedelta(minutes=1))), AT).commands == []


def test_once_consolidate_after_passed_the_node_is_a_destination_again() -> None:
    assert _methods(plan(snapshot(*_objects(timedelta(minutes=11))), AT)) == [("SingleNodeConsolidation", ["a"])]


def test_zero_consolidate_after_never_holds_a_destination_back() -> None:
    objs = _objects(timedelta(seconds=1), consolidate_after="0s")
    assert _methods(plan(snapshot(*objs), AT)) == [("SingleNodeConsolidation", ["a"])]


def test_under_consolidate_after() -> None:
    cluster = Cluster.from_snapshot(snapshot(*_objects(timedelta(minutes=1)),
                                             node_and_claim("u", "m5.xlarge", conditions=[
                                                 {"type": "Initialized", "status": "False"}])))
    pool = cluster.pools["default"]
    by = cluster.by_name
    assert under_consolidate_after(by["x"], pool, AT)
    assert not under_consolidate_after(by["x"], pool, AT + timedelta(minutes=9, seconds=1))
    assert not under_consolidate_after(by["a"], pool, AT)
    assert not under_consolidate_after(by["u"], pool, AT)  # not initialized: Karpenter does not hold it back


def test_pending_pods_may_still_use_a_closed_node() -> None:
    cluster = Cluster.from_snapshot(snapshot(*_objects(timedelta(minutes=1))))
    scheduler = Scheduler(cluster)
    a, x = cluster.by_name["a"], cluster.by_name["x"]
    moved = [p for p in a.pods if p.name == "w-1"]
    waiting = parse_pod(pod("p-1", None, phase="Pending", start=None))
    sim = scheduler.simulate([a], moved, max_new=1, pending=[waiting], closed={x.name})
    where = {p.name: to for p, to in sim.placements}
    assert where["p-1"] == "x"          # the pending pod goes to x
    assert where["w-1"] != "x"          # the candidate's pod does not
    open_sim = scheduler.simulate([a], moved, max_new=1, pending=[waiting])
    assert {p.name: to for p, to in open_sim.placements}["w-1"] == "x"


def test_drift_ignores_consolidate_after_on_destinations() -> None:
    objs = _objects(timedelta(minutes=1))
    objs[1] = node_and_claim("a", "m5.xlarge", last_pod_event=OLD, conditions=[
        {"type": "Initialized", "status": "True", "lastTransitionTime": "2026-11-22T18:00:00Z"},
        {"type": "Drifted", "status": "True", "reason": "NodePoolDrifted",
         "lastTransitionTime": "2026-11-22T19:00:00Z"}])
    result = plan(snapshot(*objs), AT)
    assert _methods(result) == [("Drift", ["a"])]
    assert result.commands[0].replacements == []  # a's pod goes to x, recently used or not
