"""The scheduling simulation: resources, selectors, affinity, taints, anti-affinity, spread, new nodes, limits."""

from __future__ import annotations

from planning_factory import node_and_claim, nodepool, pod, snapshot

from api import labels as L
from planning.cluster import Cluster
from planning.scheduling.simulation import Scheduler

REQ = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
       {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]}]


def _simulate(*objs, remove=("a",), max_new=1, pool=None):
    cluster = Cluster.from_snapshot(snapshot(pool or nodepool(requirements=REQ), *objs))
    nodes = [cluster.by_name[n] for n in remove]
    pods = [p for n in nodes for p in n.pods if p.reschedulable]
    return Scheduler(cluster).simulate(nodes, pods, max_new=max_new)


def _where(sim):
    return {p.name: to for p, to in sim.placements}


def test_pods_go_to_existing_free_capacity():
    sim = _simulate(node_and_claim("a"), node_and_claim("b"), pod("x-1", "a", "1", "1Gi"), pod("y-1", "b"))
    assert sim.all_scheduled and _where(sim) == {"x-1": "b"} and not sim.new_nodes


def test_cpu_memory_and_pod_count_limits_force_a_new_node():
    # b (m5.large: 2 cpu, 8Gi) has 0.5 cpu free: a 1-cpu pod cannot go there
    sim = _simulate(node_and_claim("a"), node_and_claim("b", "m5.large"), pod("x-1", "a", "1", "1Gi"),
                    pod("y-1", "b", "1500m", "1Gi"))
    assert _where(sim) == {"x-1": "new-0"} and len(sim.new_nodes) == 1
    sim = _simulate(node_and_claim("a"), node_and_claim("b", "m5.large"), pod("x-1", "a", "100m", "7Gi"),
                    pod("y-1", "b", "100m", "2Gi"))
    assert _where(sim) == {"x-1": "new-0"}
    full = node_and_claim("b", "m5.large")
    full[0]["status"]["allocatable"]["pods"] = "1"
    sim = _simulate(node_and_claim("a"), full, pod("x-1", "a", "10m", "1Mi"), pod("y-1", "b", "10m", "1Mi"))
    assert _where(sim) == {"x-1": "new-0"}


def test_more_than_one_new_node_is_refused_for_consolidation():
    pods = [pod(f"x-{i}", "a", "3", "10Gi") for i in range(3)]
    sim = _simulate(node_and_claim("a", "m5.4xlarge"), *pods, pool=nodepool(requirements=[
        *REQ, {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.xlarge"]}]))
    assert sim.too_many_new and not sim.all_scheduled


def test_node_selector_and_required_affinity():
    b = node_and_claim("b", extra_labels={"disk": "ssd"})
    c = node_and_claim("c")
    sim = _simulate(node_and_claim("a"), c, b, pod("x-1", "a", node_selector={"disk": "ssd"}))
    assert _where(sim) == {"x-1": "b"}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": L.ZONE_LABEL, "operator": "In", "values": ["us-east-1b"]}]}]}}}
    sim = _simulate(node_and_claim("a"), node_and_claim("b"), node_and_claim("c", zone="us-east-1b"),
                    pod("x-1", "a", affinity=affinity))
    assert _where(sim) == {"x-1": "c"}


def test_new_node_honours_pod_zone_affinity():
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": L.ZONE_LABEL, "operator": "In", "values": ["us-east-1c"]}]}]}}}
    sim = _simulate(node_and_claim("a"), pod("x-1", "a", affinity=affinity))
    zones = {o.zone for opt in sim.new_nodes[0].options for o in opt.offerings}
    assert zones == {"us-east-1c"}


def test_taints_need_tolerations():
    taint = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    objs = [node_and_claim("a"), node_and_claim("b", taints=taint)]
    assert _where(_simulate(*objs, pod("x-1", "a"))) == {"x-1": "new-0"}
    tol = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
    assert _where(_simulate(*objs, pod("x-1", "a", tolerations=tol))) == {"x-1": "b"}
    prefer = [{"key": "soft", "effect": "PreferNoSchedule"}]
    # Karpenter's Taints.Tolerates counts PreferNoSchedule too, until the last relaxation (preferences.go,
    # docs/semantics.md §3.5): a new node first, b only when none can be launched
    objs = [node_and_claim("a"), node_and_claim("b", taints=prefer), pod("x-1", "a")]
    assert _where(_simulate(*objs)) == {"x-1": "new-0"}
    assert _where(_simulate(*objs, pool=nodepool(requirements=[*REQ, {
        "key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["none.such"]}]))) == {"x-1": "b"}


def test_pool_taints_apply_to_new_nodes():
    pool = nodepool(requirements=REQ, taints=[{"key": "team", "value": "a", "effect": "NoSchedule"}])
    sim = _simulate(node_and_claim("a"), pod("x-1", "a"), pool=pool)
    assert not sim.all_scheduled and "default/x-1" in sim.failure_text()


def test_required_anti_affinity_on_hostname():
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": L.HOSTNAME_LABEL, "labelSelector": {"matchLabels": {"app": "db"}}}]}}
    sim = _simulate(node_and_claim("a"), node_and_claim("b"), node_and_claim("c"), pod("filler-1", "c", "2"),
                    pod("db-1", "a", labels={"app": "db"}, affinity=anti),
                    pod("db-2", "b", labels={"app": "db"}, affinity=anti))
    assert _where(sim) == {"db-1": "c"}
    # two replicas from the same node cannot share one new node
    sim = _simulate(node_and_claim("a"), pod("db-1", "a", labels={"app": "db"}, affinity=anti),
                    pod("db-2", "a", labels={"app": "db"}, affinity=anti))
    assert sim.too_many_new


def test_topology_spread_on_zone():
    spread = [{"maxSkew": 1, "topologyKey": L.ZONE_LABEL, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]
    objs = [node_and_claim("a", zone="us-east-1a"), node_and_claim("b", zone="us-east-1b"),
            node_and_claim("c", zone="us-east-1c"), node_and_claim("d", zone="us-east-1a"),
            pod("web-1", "a", labels={"app": "web"}, spread=spread),
            pod("web-2", "b", labels={"app": "web"}, spread=spread),
            pod("web-3", "c", labels={"app": "web"}, spread=spread),
            pod("web-4", "b", labels={"app": "web"}, spread=spread), pod("filler-1", "d")]
    # leaving a: zone a would have 0 while b has 2: the pod must go back to zone a (node d), though c ties d
    assert _where(_simulate(*objs)) == {"web-1": "d"}


def test_topology_spread_on_hostname():
    spread = [{"maxSkew": 1, "topologyKey": L.HOSTNAME_LABEL, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]
    sim = _simulate(node_and_claim("a"), node_and_claim("b"), node_and_claim("c"), pod("filler-1", "c", "2"),
                    pod("web-1", "a", labels={"app": "web"}, spread=spread),
                    pod("web-2", "b", labels={"app": "web"}, spread=spread))
    assert _where(sim) == {"web-1": "c"}  # b is emptier, but already holds one web pod
    soft = [dict(spread[0], whenUnsatisfiable="ScheduleAnyway")]
    objs = (node_and_claim("a"), node_and_claim("b"), pod("web-1", "a", labels={"app": "web"}, spread=soft),
            pod("web-2", "b", labels={"app": "web"}, spread=soft))
    # Karpenter first treats ScheduleAnyway as DoNotSchedule and relaxes it only when the pod fits nowhere, new
    # nodes included (preferences.go, docs/semantics.md §3.5): a new node keeps the spread
    assert _where(_simulate(*objs)) == {"web-1": "new-0"}
    # with no new node possible (the pool cannot launch) it relaxes and shares b
    assert _where(_simulate(*objs, pool=nodepool(requirements=[*REQ, {
        "key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["none.such"]}]))) == {"web-1": "b"}


def test_pool_requirements_restrict_new_node_types():
    pool = nodepool(requirements=[*REQ, {"key": "karpenter.k8s.aws/instance-family", "operator": "In",
                                         "values": ["r5"]}])
    sim = _simulate(node_and_claim("a"), pod("x-1", "a"), pool=pool)
    assert {o.itype.name.split(".")[0] for o in sim.new_nodes[0].options} == {"r5"}
    assert all(o.itype.arch == "amd64" for o in sim.new_nodes[0].options)


def test_pool_limits_bound_new_nodes():
    pool = nodepool(requirements=REQ, limits={"cpu": "5"})  # a (4 cpu) leaves: at most 5 cpu for the new node
    sim = _simulate(node_and_claim("a"), node_and_claim("b", "m5.large"), pod("x-1", "a", "1700m", "1Gi"),
                    pod("y-1", "b", "1500m"), pool=pool)
    assert sim.all_scheduled and all(o.itype.cpu_cores <= 3 for o in sim.new_nodes[0].options)
    pool = nodepool(requirements=REQ, limits={"cpu": "3"})
    sim = _simulate(node_and_claim("a"), node_and_claim("b", "m5.large"), pod("x-1", "a", "1700m", "1Gi"),
                    pod("y-1", "b", "1500m"), pool=pool)
    assert not sim.all_scheduled and "limits" in sim.failure_text()


def test_pod_that_fits_nowhere_is_named_with_a_reason():
    sim = _simulate(node_and_claim("a", "m5.4xlarge"), node_and_claim("b"), pod("huge-1", "a", "60", "1Gi"),
                    pod("y-1", "b"))
    assert not sim.all_scheduled
    text = sim.failure_text()
    assert text.startswith("default/huge-1 => ") and "cpu 60" in text


def test_daemonset_and_mirror_pods_are_not_moved():
    mirror = pod("static-1", "a", owner="Node")
    ds = pod("ds-1", "a", owner="DaemonSet")
    sim = _simulate(node_and_claim("a"), node_and_claim("b"), mirror, ds, pod("x-1", "a"))
    assert _where(sim) == {"x-1": "b"}
