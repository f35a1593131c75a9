"""In-flight pods are reserved where their own command planned them (planning/scheduling/simulation.py `Scheduler`,
`planned`).

Node x (m5.2xlarge) has 3 cpu free and y (m5.2xlarge) 2.2; x is the emptier, so first-fit tries it first. a runs a
2.5-cpu pod that fits only on x, b a 2-cpu pod that fits on either. Command A deletes a onto x; command B, planned
with a's pod reserved on x, deletes b onto y. First-fit of B's pod alone (A's validation, B in flight) puts it on
x and leaves a's pod no room: A fails although nothing changed. Reserved where B's plan put it, A still holds.
"""

from __future__ import annotations

from api import labels as L
from planning.cluster import Cluster
from planning.disruption.candidates import in_flight_pods
from planning.disruption.validation import Decision, Mismatch
from planning.planner.plan import run_pass
from planning.planner.recheck import recheck_consolidation
from planning.scheduling.simulation import Scheduler
from tests.planning.planning_factory import AT, node_and_claim, nodepool, pod, snapshot

TYPES = {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.xlarge", "m5.2xlarge"]}
ON_DEMAND = {"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]}
SINGLE = "SingleNodeConsolidation"


def _snap(b_cpu: str = "2") -> object:
    return snapshot(
        nodepool(requirements=[ON_DEMAND, TYPES]),
        node_and_claim("x", "m5.2xlarge"), pod("big-x", "x", cpu="5", memory="1Gi"),
        node_and_claim("y", "m5.2xlarge"), pod("big-y", "y", cpu="5800m", memory="1Gi"),
        node_and_claim("a", "m5.xlarge"), pod("wa-1", "a", cpu="2500m", memory="1Gi"),
        node_and_claim("b", "m5.xlarge"), pod("wb-1", "b", cpu=b_cpu, memory="1Gi"),
    )


def _key(name: str) -> str:
    return f"default/{name}"


def _scheduler(in_flight: set[str], planned: dict[str, str] | None) -> tuple[Cluster, Scheduler]:
    cluster = Cluster.from_snapshot(_snap())
    return cluster, Scheduler(cluster, in_flight, in_flight_pods(cluster, in_flight, AT), planned)


def _recheck(exclude: set[str], planned: dict[str, str] | None) -> Mismatch | None:
    return recheck_consolidation(_snap(), AT, ["a"], Decision.of(SINGLE, ["a"], []), exclude=frozenset(exclude),
                                 planned=planned).mismatch


def test_first_fit_puts_the_reserved_pod_on_the_emptiest_node() -> None:
    cluster, sched = _scheduler({"b"}, None)
    assert sched.reserved_usage(cluster.by_name["x"])[0] == 2.0
    assert sched.reserved_usage(cluster.by_name["y"])[0] == 0.0


def test_a_planned_pod_is_reserved_on_its_planned_node() -> None:
    cluster, sched = _scheduler({"b"}, {_key("wb-1"): "y"})
    assert sched.reserved_usage(cluster.by_name["y"])[0] == 2.0
    assert sched.reserved_usage(cluster.by_name["x"])[0] == 0.0


def test_a_pod_planned_onto_its_replacement_takes_no_room_here() -> None:
    cluster, sched = _scheduler({"b"}, {_key("wb-1"): ""})
    assert all(sched.reserved_usage(n) == (0.0, 0, 0, 0) for n in cluster.nodes)


def test_room_a_replacement_bound_pod_does_not_need_is_free_for_others() -> None:
    """b's pod is bound for b's replacement: x keeps its room, and a's command holds."""
    assert _recheck({"b"}, {_key("wb-1"): ""}) is None


def test_a_planned_node_that_no_longer_takes_the_pod_falls_back_to_first_fit() -> None:
    cluster, sched = _scheduler({"b"}, {_key("wb-1"): "gone"})
    assert sched.reserved_usage(cluster.by_name["x"])[0] == 2.0
    # the planned node is the one a simulation removes: the pod is placed again, first-fit
    sim = sched.simulate([cluster.by_name["y"]], [], max_new=0)
    assert sim.all_scheduled
    pinned = Scheduler(cluster, {"b"}, in_flight_pods(cluster, {"b"}, AT), {_key("wb-1"): "y"})
    state = pinned.new_state([cluster.by_name["y"]])
    assert [p.key for p in state.placed.get("x", [])] == [_key("wb-1")]


def test_the_second_command_plans_around_the_first() -> None:
    """B is planned with a in flight: a's pod is reserved on x, so b goes to y."""
    out = run_pass(_snap(), AT, exclude_nodes={"a"}, planned={_key("wa-1"): "x"})
    moves = {m.pod: m.to for c in out.commands if c.nodes == ["b"] for m in c.pods}
    assert moves == {_key("wb-1"): "y"}, out.commands


def test_the_first_command_still_holds_when_the_second_is_reserved_where_it_was_planned() -> None:
    assert _recheck(set(), None) is None  # nothing in flight: a goes onto x
    assert _recheck({"b"}, None) is Mismatch.NEW_SCHEDULING_RESULTS  # first-fit: b's pod takes x's room
    assert _recheck({"b"}, {_key("wb-1"): "y"}) is None


def test_in_flight_pods_count_for_zone_spread_where_reserved_not_twice() -> None:
    """A zone-spread pod of an in-flight node counts in the zone it is reserved in and no longer in its old one.
    Counted in both, zone 1a looked allowed for f's pod (1a: 1, 1b: 1 with f's own pod) and every plan's skew
    depended on which commands were in flight. Counted once, f's pod must stay in 1b: it is reserved on e, though
    d (1a) is emptier."""
    spread = [{"maxSkew": 1, "topologyKey": L.ZONE_LABEL, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]
    snap = snapshot(
        nodepool(requirements=[ON_DEMAND, TYPES]),
        node_and_claim("d", "m5.2xlarge", zone="us-east-1a"),
        node_and_claim("e", "m5.xlarge", zone="us-east-1b"), pod("fill-e", "e", cpu="1"),
        node_and_claim("g", "m5.xlarge", zone="us-east-1a"), pod("web-g", "g", labels={"app": "web"}, spread=spread),
        node_and_claim("f", "m5.xlarge", zone="us-east-1b"), pod("web-f", "f", labels={"app": "web"}, spread=spread),
    )
    cluster = Cluster.from_snapshot(snap)
    sched = Scheduler(cluster, {"f"}, in_flight_pods(cluster, {"f"}, AT))
    state = sched.new_state()
    assert {n: [p.key for p in ps] for n, ps in state.placed.items()} == {"e": [_key("web-f")]}
    counts = sched._zone_counts(cluster.by_name["f"].pods[0], spread[0]["labelSelector"], state)
    assert (counts.get("us-east-1a", 0), counts.get("us-east-1b", 0)) == (1, 1)
