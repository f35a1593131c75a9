"""In-flight nodes' pods are reserved first (docs/semantics.md §2): two commands must not count on the same room.

Node x has 3 cpu free. Nodes a and b each run one 2.5-cpu pod that fits only there. With a in flight (its pods
will need that room), a pass must not delete b onto x; with nothing in flight it does.
"""

from __future__ import annotations

from api import labels as L
from planning.cluster import Cluster, Parsed, parse_claim, parse_pod
from planning.disruption.candidates import in_flight_pods
from planning.planner.plan import run_pass
from planning.scheduling.simulation import Scheduler
from tests.planning.planning_factory import AT, node_and_claim, nodepool, pod, snapshot

TYPES = {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.xlarge", "m5.2xlarge"]}
ON_DEMAND = {"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]}


def _cluster(a_pod_cpu: str = "2500m") -> object:
    return snapshot(
        nodepool(requirements=[ON_DEMAND, TYPES]),
        node_and_claim("x", "m5.2xlarge"), pod("big-1", "x", cpu="5", memory="1Gi"),
        node_and_claim("a", "m5.xlarge"), pod("wa-1", "a", cpu=a_pod_cpu, memory="1Gi"),
        node_and_claim("b", "m5.xlarge"), pod("wb-1", "b", cpu="2500m", memory="1Gi"),
    )


def _deletes_b(outcome: object) -> bool:
    return any("b" in c.nodes for c in outcome.commands)  # type: ignore[attr-defined]


def test_nothing_in_flight_b_is_deleted_onto_x() -> None:
    out = run_pass(_cluster(), AT)
    assert any(set(c.nodes) <= {"a", "b"} and not c.replacements for c in out.commands), out.commands


def test_a_in_flight_b_is_not_deleted_onto_the_same_room() -> None:
    out = run_pass(_cluster(), AT, exclude_nodes={"a"})
    assert not _deletes_b(out), out.commands


def test_a_tainted_disrupted_counts_as_in_flight() -> None:
    snap = snapshot(
        nodepool(requirements=[ON_DEMAND, TYPES]),
        node_and_claim("x", "m5.2xlarge"), pod("big-1", "x", cpu="5", memory="1Gi"),
        node_and_claim("a", "m5.xlarge", taints=[dict(L.DISRUPTED_TAINT)]),
        pod("wa-1", "a", cpu="2500m", memory="1Gi"),
        node_and_claim("b", "m5.xlarge"), pod("wb-1", "b", cpu="2500m", memory="1Gi"),
    )
    assert not _deletes_b(run_pass(snap, AT)), run_pass(snap, AT).commands


def test_in_flight_pod_that_fits_nowhere_blocks_nothing() -> None:
    out = run_pass(_cluster(a_pod_cpu="3500m"), AT, exclude_nodes={"a"})
    assert any(c.nodes == ["b"] and not c.replacements for c in out.commands), out.commands


def test_daemonset_and_terminal_pods_of_in_flight_nodes_are_not_reserved() -> None:
    snap = snapshot(
        nodepool(requirements=[ON_DEMAND, TYPES]),
        node_and_claim("x", "m5.2xlarge"), pod("big-1", "x", cpu="5", memory="1Gi"),
        node_and_claim("a", "m5.xlarge"), pod("ds-1", "a", cpu="2500m", memory="1Gi", owner="DaemonSet"),
        pod("done-1", "a", cpu="1", memory="1Gi", phase="Succeeded"),
        node_and_claim("b", "m5.xlarge"), pod("wb-1", "b", cpu="2500m", memory="1Gi"),
    )
    out = run_pass(snap, AT, exclude_nodes={"a"})
    assert any(c.nodes == ["b"] and not c.replacements for c in out.commands), out.commands


def test_reservation_does_not_leak_into_the_next_pass_on_reused_parts() -> None:
    snap = _cluster()
    parsed = Parsed([parse_pod(p) for p in snap.pods], [parse_claim(c) for c in snap.node_claims])
    held = run_pass(snap, AT, exclude_nodes={"a"}, parsed=parsed)
    assert not _deletes_b(held)
    again = run_pass(snap, AT, parsed=parsed)
    fresh = run_pass(snap, AT)
    assert [(c.nodes, c.replacements) for c in again.commands] == [(c.nodes, c.replacements) for c in fresh.commands]
    assert again.commands


def test_reserved_pods_on_a_removed_node_are_placed_again() -> None:
    """A simulation removing the node that holds reserved pods re-places them first, elsewhere or nowhere."""
    snap = snapshot(
        nodepool(requirements=[ON_DEMAND, TYPES]),
        node_and_claim("x", "m5.2xlarge"), pod("big-1", "x", cpu="5", memory="1Gi"),
        node_and_claim("y", "m5.2xlarge"), pod("big-2", "y", cpu="5500m", memory="1Gi"),
        node_and_claim("a", "m5.xlarge"), pod("wa-1", "a", cpu="2500m", memory="1Gi"),
    )
    cluster = Cluster.from_snapshot(snap)
    sched = Scheduler(cluster, {"a"}, in_flight_pods(cluster, {"a"}, AT))
    x = cluster.by_name["x"]
    y = cluster.by_name["y"]
    # wa-1 is reserved on x (emptiest first); moving x's 5-cpu pod needs 5 cpu, y has 2.5 free: no fit anyway.
    small = parse_pod(pod("s-1", "x", cpu="2", memory="1Gi"))
    sim = sched.simulate([x], [small], max_new=0)
    # with x gone, wa-1 takes y's 2.5 cpu first, so the 2-cpu pod has no room left on y
    assert not sim.all_scheduled
    sim_y = sched.simulate([y], [small], max_new=0)
    # y removed: wa-1 stays on x (0.5 cpu left), the 2-cpu pod fits nowhere
    assert not sim_y.all_scheduled
    fresh = Scheduler(cluster, {"a"}).simulate([x], [small], max_new=0)
    assert fresh.all_scheduled
