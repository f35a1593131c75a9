"""Property: whatever the cluster, a simulation never overfills a node and places each pod once."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from planning_factory import node_and_claim, nodepool, pod, snapshot

from planning.cluster import Cluster
from planning.scheduling.simulation import Scheduler

TYPES = ("m5.large", "m5.xlarge", "c5.xlarge", "r5.large")
SIZES = (("100m", "128Mi"), ("250m", "512Mi"), ("500m", "1Gi"), ("1", "2Gi"), ("1500m", "6Gi"))


@st.composite
def clusters(draw):
    n = draw(st.integers(2, 8))
    objs = []
    for i in range(n):
        objs.append(node_and_claim(f"n{i}", draw(st.sampled_from(TYPES))))
        for j in range(draw(st.integers(0, 5))):
            cpu, mem = draw(st.sampled_from(SIZES))
            objs.append(pod(f"p{i}-{j}", f"n{i}", cpu, mem))
    remove = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=3, unique=True))
    return objs, [f"n{i}" for i in remove]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_simulation_respects_capacity_and_places_each_pod_once(case):
    objs, remove = case
    cluster = Cluster.from_snapshot(snapshot(nodepool(), *objs))
    nodes = [cluster.by_name[r] for r in remove]
    pods = [p for n in nodes for p in n.pods if p.reschedulable]
    sim = Scheduler(cluster).simulate(nodes, pods, max_new=1)
    placed = [p.key for p, _ in sim.placements]
    assert len(placed) == len(set(placed))
    if sim.all_scheduled:
        assert sorted(placed) == sorted(p.key for p in pods)
    for node in cluster.nodes:
        extra = [p for p, to in sim.placements if to == node.name]
        assert node.name not in remove or not extra
        assert node.used_cpu + sum(p.cpu for p in extra) <= node.cpu + 1e-6 or not extra
        assert node.used_mem + sum(p.mem for p in extra) <= node.mem or not extra
    for nn in sim.new_nodes:
        assert nn.options and all(o.cpu >= nn.cpu - 1e-6 and o.mem >= nn.mem for o in nn.options)
