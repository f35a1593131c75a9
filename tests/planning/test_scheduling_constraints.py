"""The simulation's constraints beyond hostname anti-affinity and zone/hostname spread: pod affinity and
anti-affinity on zone, host ports, volume topology, init containers and overhead, minDomains, other spread keys
(cases after Karpenter's scheduling suite: topology_test.go, suite_test.go, volumetopology; docs/semantics.md
§3.5)."""

from __future__ import annotations

from typing import Any

from planning_factory import node_and_claim, nodepool, pod, snapshot

from api import labels as L
from planning.cluster import Cluster, parse_pod
from planning.scheduling.sim_state import NewNode
from planning.scheduling.simulation import Scheduler, SimResult

REQ = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
       {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]}]
WEB = {"matchLabels": {"app": "web"}}


def _simulate(*objs: Any, remove: tuple[str, ...] = ("a",), max_new: int = 1) -> SimResult:
    cluster = Cluster.from_snapshot(snapshot(nodepool(requirements=REQ), *objs))
    nodes = [cluster.by_name[n] for n in remove]
    return Scheduler(cluster).simulate(nodes, [p for n in nodes for p in n.pods if p.reschedulable], max_new=max_new)


def _where(sim: SimResult) -> dict[str, str]:
    return {p.name: to for p, to in sim.placements}


def _zones(nn: NewNode) -> set[str]:
    return {o.zone for opt in nn.options for o in opt.offerings}


def _full(name: str, zone: str = "us-east-1a") -> list[Any]:
    """A node with no room left (m5.large, a 1.9-cpu filler)."""
    return [*node_and_claim(name, "m5.large", zone=zone), pod(f"filler-{name}", name, "1900m", "1Gi")]


def test_required_pod_affinity_on_zone_binds_the_new_node_to_the_peer_zone():
    # topology_test.go "should respect pod affinity (zone)": the pod must land in the zone of its db peer
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": L.ZONE_LABEL}]}}
    sim = _simulate(node_and_claim("a"), *_full("b", "us-east-1b"),
                    pod("db-1", "b", "10m", "10Mi", labels={"app": "db"}), pod("x-1", "a", affinity=affinity))
    assert _where(sim) == {"x-1": "new-0"} and _zones(sim.new_nodes[0]) == {"us-east-1b"}


def test_required_pod_affinity_skips_existing_nodes_in_other_zones():
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": L.ZONE_LABEL}]}}
    sim = _simulate(node_and_claim("a"), node_and_claim("b"), node_and_claim("c", zone="us-east-1b"),
                    pod("db-1", "c", "10m", "10Mi", labels={"app": "db"}), pod("x-1", "a", affinity=affinity))
    assert _where(sim) == {"x-1": "c"}  # b is emptier but in zone a


def test_required_anti_affinity_on_zone_avoids_every_zone_holding_a_peer():
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": WEB, "topologyKey": L.ZONE_LABEL}]}}
    sim = _simulate(node_and_claim("a", zone="us-east-1c"), node_and_claim("b"), node_and_claim("c", zone="us-east-1b"),
                    pod("web-2", "b", "10m", "10Mi", labels={"app": "web"}),
                    pod("web-3", "c", "10m", "10Mi", labels={"app": "web"}),
                    pod("web-1", "a", labels={"app": "web"}, affinity=anti))
    assert _where(sim) == {"web-1": "new-0"} and _zones(sim.new_nodes[0]) == {"us-east-1c"}


def test_existing_pods_zone_anti_affinity_repels_a_matching_pod():
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": WEB, "topologyKey": L.ZONE_LABEL}]}}
    sim = _simulate(node_and_claim("a", zone="us-east-1c"), node_and_claim("b"),
                    pod("guard-1", "b", "10m", "10Mi", affinity=anti), pod("web-1", "a", labels={"app": "web"}))
    assert _where(sim) == {"web-1": "new-0"} and "us-east-1a" not in _zones(sim.new_nodes[0])


def _with_host_port(p: dict[str, Any], port: int = 8080) -> dict[str, Any]:
    p["spec"]["containers"][0]["ports"] = [{"containerPort": port, "hostPort": port, "protocol": "TCP"}]
    return p


def test_host_port_held_on_a_node_keeps_a_second_user_off_it():
    # hostportusage.go: b has room but its pod holds 8080
    sim = _simulate(node_and_claim("a"), node_and_claim("b"), _with_host_port(pod("holder-1", "b", "10m", "10Mi")),
                    _with_host_port(pod("x-1", "a")))
    assert _where(sim) == {"x-1": "new-0"}
    holder = _with_host_port(pod("holder-1", "b", "10m", "10Mi"), 9090)
    sim = _simulate(node_and_claim("a"), node_and_claim("b"), holder, _with_host_port(pod("x-1", "a")))
    assert _where(sim) == {"x-1": "b"}


def test_two_pods_with_one_host_port_need_two_new_nodes():
    def objs() -> list[Any]:
        return [node_and_claim("a"), _with_host_port(pod("x-1", "a", "100m")), _with_host_port(pod("y-1", "a", "100m"))]
    assert _simulate(*objs()).too_many_new
    assert len(_simulate(*objs(), max_new=2).new_nodes) == 2


def _claimed(p: dict[str, Any], claim: str = "data") -> dict[str, Any]:
    p["spec"]["volumes"] = [{"name": "d", "persistentVolumeClaim": {"claimName": claim}}]
    return p


def _volume(zone: str) -> list[dict[str, Any]]:
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "vol-1"},
          "spec": {"capacity": {"storage": "10Gi"}, "storageClassName": "gp3", "nodeAffinity": {"required": {
              "nodeSelectorTerms": [{"matchExpressions": [
                  {"key": L.ZONE_LABEL, "operator": "In", "values": [zone]}]}]}}},
          "status": {"phase": "Bound"}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default"},
           "spec": {"volumeName": "vol-1", "storageClassName": "gp3"}, "status": {"phase": "Bound"}}
    return [pv, pvc]


def test_a_bound_zonal_volume_pins_the_pod_to_its_zone():
    # volumetopology.go: the PV's node affinity becomes the pod's requirement, on existing and new nodes
    sim = _simulate(node_and_claim("a", zone="us-east-1c"), node_and_claim("b"), *_volume("us-east-1c"),
                    _claimed(pod("x-1", "a")))
    assert _where(sim) == {"x-1": "new-0"} and _zones(sim.new_nodes[0]) == {"us-east-1c"}
    sim = _simulate(node_and_claim("a", zone="us-east-1c"), node_and_claim("b"), node_and_claim("c", zone="us-east-1c"),
                    *_volume("us-east-1c"), _claimed(pod("x-1", "a")))
    assert _where(sim) == {"x-1": "c"}


def test_a_missing_claim_lets_the_pod_run_nowhere():
    sim = _simulate(node_and_claim("a"), node_and_claim("b"), *_volume("us-east-1a"), _claimed(pod("x-1", "a"), "gone"))
    assert not sim.all_scheduled and sim.failures[0][0].name == "x-1"
    assert 'persistentvolumeclaim "gone" not found' in sim.failure_message()


def test_init_containers_sidecars_and_overhead_count():
    raw = pod("x-1", None, "1", "1Gi")
    raw["spec"]["initContainers"] = [
        {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
        {"name": "init", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}]
    raw["spec"]["overhead"] = {"cpu": "250m", "memory": "128Mi"}
    p = parse_pod(raw)
    # max(1 + 0.5, 2 + 0.5) + 0.25 cpu; max(1Gi + 1Gi, 1Gi + 1Gi) + 128Mi memory
    assert p.cpu == 2.75 and p.mem == 2 * 2**30 + 128 * 2**20


def test_zone_spread_min_domains_counts_missing_zones_as_empty():
    # topology_test.go minDomains: with fewer zones than minDomains the global minimum is 0
    def objs(min_domains: int | None) -> list[Any]:
        spread = [{"maxSkew": 1, "topologyKey": L.ZONE_LABEL, "whenUnsatisfiable": "DoNotSchedule",
                   "labelSelector": WEB, **({"minDomains": min_domains} if min_domains else {})}]
        return [node_and_claim("a"), node_and_claim("b"), node_and_claim("c", zone="us-east-1b"),
                node_and_claim("d", zone="us-east-1c"),
                *(pod(f"web-{i}", n, labels={"app": "web"}, spread=spread) for i, n in ((1, "a"), (2, "b"), (3, "c"),
                                                                                      (4, "d")))]
    assert _where(_simulate(*objs(None))) == {"web-1": "b"}
    sim = _simulate(*objs(4))
    assert not sim.all_scheduled


def test_spread_on_a_custom_key_the_nodes_carry():
    rack = "example.com/rack"
    spread = [{"maxSkew": 1, "topologyKey": rack, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": WEB}]
    sim = _simulate(node_and_claim("a", extra_labels={rack: "r1"}), node_and_claim("b", extra_labels={rack: "r1"}),
                    node_and_claim("c", extra_labels={rack: "r2"}), node_and_claim("e", extra_labels={rack: "r2"}),
                    pod("web-1", "a", labels={"app": "web"}, spread=spread),
                    pod("web-2", "b", labels={"app": "web"}, spread=spread),
                    pod("web-3", "c", labels={"app": "web"}, spread=spread),
                    pod("web-4", "e", labels={"app": "web"}, spread=spread),
                    pod("web-5", "e", labels={"app": "web"}, spread=spread), pod("filler-1", "b", "2"))
    # without web-1: r1 holds 1, r2 holds 3; b (r1, fuller than c) is the only place within skew 1
    assert _where(sim) == {"web-1": "b"}


def _daemon(name: str, node: str, cpu: str, **kw: Any) -> dict[str, Any]:
    return pod(name, node, cpu, "100Mi", owner="DaemonSet", **kw)


def test_daemonset_overhead_of_a_pool_without_nodes_comes_from_compatible_daemonsets():
    # Karpenter getDaemonOverhead: every DaemonSet whose pod would run on the pool's nodes, not only those seen there
    gpu = nodepool("gpu", requirements=REQ, taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}],
                   labels={"accel": "gpu"})
    objs = snapshot(nodepool(requirements=REQ), gpu, node_and_claim("a"),
                    _daemon("logs-a", "a", "200m", tolerations=[{"operator": "Exists"}]),
                    _daemon("proxy-a", "a", "100m"),
                    _daemon("nvidia-a", "a", "300m", node_selector={"accel": "gpu"},
                            tolerations=[{"operator": "Exists"}]))
    cluster = Cluster.from_snapshot(objs)
    cpu, _, count = cluster.daemon_overhead("gpu")
    # logs tolerates everything; proxy does not tolerate the gpu taint; nvidia selects accel=gpu, which the pool sets
    assert count == 2 and abs(cpu - 0.5) < 1e-9
    # on the default pool: the ones running there, nvidia included (seen on its node), and nothing else
    assert cluster.daemon_overhead("default")[2] == 3


def test_spread_over_capacity_type_puts_new_nodes_in_both_domains():
    # topology_test.go "should balance pods across capacity types": the pool offers spot and on-demand, so the
    # second pod may not join the first's new node (1/0 would become 2/0)
    spread = [{"maxSkew": 1, "topologyKey": L.CAPACITY_TYPE_LABEL, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": WEB}]
    pool = nodepool(requirements=[{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["spot", "on-demand"]},
                                  {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]}])
    cluster = Cluster.from_snapshot(snapshot(pool, node_and_claim("a"),
                                             *(pod(f"web-{i}", "a", "100m", labels={"app": "web"}, spread=spread)
                                               for i in (1, 2))))
    a = cluster.by_name["a"]
    sim = Scheduler(cluster).simulate([a], list(a.pods), max_new=2)
    assert sim.all_scheduled and len(sim.new_nodes) == 2
    assert {ct for nn in sim.new_nodes for opt in nn.options for ct in {o.capacity_type for o in opt.offerings}} == {
        "spot", "on-demand"}
    assert all(len({o.capacity_type for opt in nn.options for o in opt.offerings}) == 1 for nn in sim.new_nodes)


def test_a_placed_pending_pods_hostname_anti_affinity_repels_later_pods():
    # kube's symmetric anti-affinity for pods placed in the same simulation: the pending guard (placed first, the
    # larger) keeps web-1 off b though no pod bound in the cluster has anti-affinity
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": WEB, "topologyKey": L.HOSTNAME_LABEL}]}}
    cluster = Cluster.from_snapshot(snapshot(nodepool(requirements=REQ), node_and_claim("a"), node_and_claim("b"),
                                             pod("guard-1", None, "2", affinity=anti),
                                             pod("web-1", "a", labels={"app": "web"})))
    a = cluster.by_name["a"]
    sim = Scheduler(cluster).simulate([a], list(a.pods), max_new=1, pending=cluster.pending)
    assert _where(sim) == {"guard-1": "b", "web-1": "new-0"}
