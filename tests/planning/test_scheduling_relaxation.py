"""Karpenter's preference relaxation in the simulation (preferences.go; cases after Karpenter's scheduling suite,
pkg/controllers/provisioning/scheduling/suite_test.go "Preferential Fallback")."""

from __future__ import annotations

from typing import Any

from planning_factory import node_and_claim, nodepool, pod, snapshot

from api import labels as L
from planning.cluster import Cluster
from planning.provisioning.provisioner import decide
from planning.scheduling.preferences import ladder, strict_spec
from planning.scheduling.sim_state import NewNode
from planning.scheduling.simulation import Scheduler, SimResult

REQ = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
       {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]}]


def _zone_in(*zones: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": L.ZONE_LABEL, "operator": "In", "values": list(zones)}]}


def _simulate(*objs: Any, remove: tuple[str, ...] = ("a",), max_new: int = 1,
              pools: tuple[dict[str, Any], ...] = ()) -> SimResult:
    cluster = Cluster.from_snapshot(snapshot(*(pools or (nodepool(requirements=REQ),)), *objs))
    nodes = [cluster.by_name[n] for n in remove]
    return Scheduler(cluster).simulate(nodes, [p for n in nodes for p in n.pods if p.reschedulable], max_new=max_new)


def _zones(nn: NewNode) -> set[str]:
    return {o.zone for opt in nn.options for o in opt.offerings}


def test_required_node_affinity_terms_are_tried_one_at_a_time():
    # suite_test.go "should relax multiple terms": the first satisfiable term wins, not any of them
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        _zone_in("invalid"), _zone_in("us-east-1b"), _zone_in("us-east-1c")]}}}
    sim = _simulate(node_and_claim("a"), pod("x-1", "a", affinity=affinity))
    assert sim.all_scheduled and _zones(sim.new_nodes[0]) == {"us-east-1b"}


def test_preferred_node_affinity_heaviest_satisfiable_first():
    # suite_test.go "should relax to use lighter weights"
    affinity = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [_zone_in("us-east-1b", "us-east-1c")]},
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "preference": _zone_in("us-east-1a")},
            {"weight": 50, "preference": _zone_in("us-east-1c")},
            {"weight": 1, "preference": _zone_in("us-east-1b")}]}}
    sim = _simulate(node_and_claim("a"), pod("x-1", "a", affinity=affinity))
    assert sim.all_scheduled and _zones(sim.new_nodes[0]) == {"us-east-1c"}


def test_unsatisfiable_preferences_are_all_relaxed():
    # suite_test.go "should relax all terms"
    affinity = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": _zone_in("invalid")}, {"weight": 1, "preference": _zone_in("invalid-2")}]}}
    sim = _simulate(node_and_claim("a"), pod("x-1", "a", affinity=affinity))
    assert sim.all_scheduled and _zones(sim.new_nodes[0]) == {"us-east-1a", "us-east-1b", "us-east-1c"}


def test_preferred_pod_anti_affinity_is_required_until_relaxed():
    # Karpenter treats preferred anti-affinity as required first: b has room but holds a web pod, so a new node
    # keeps the preference; only when no new node is possible does the pod share b
    anti = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "podAffinityTerm": {
        "labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": L.HOSTNAME_LABEL}}]}}
    objs = (node_and_claim("a"), node_and_claim("b"), pod("web-1", "a", labels={"app": "web"}, affinity=anti),
            pod("web-2", "b", labels={"app": "web"}, affinity=anti))
    assert {p.name: to for p, to in _simulate(*objs).placements} == {"web-1": "new-0"}
    no_launch = nodepool(requirements=[*REQ, {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["none"]}])
    assert {p.name: to for p, to in _simulate(*objs, pools=(no_launch,)).placements} == {"web-1": "b"}


def test_prefer_no_schedule_taint_is_tolerated_last():
    # suite_test.go "should tolerate PreferNoSchedule taint only after trying to relax Affinity terms": the
    # heavier pool's PreferNoSchedule taint counts until everything else is relaxed, so the other pool is used
    tainted = nodepool("tainted", requirements=REQ, weight=100,
                       taints=[{"key": "soft", "value": "x", "effect": "PreferNoSchedule"}])
    sim = _simulate(node_and_claim("a"), pod("x-1", "a"), pools=(tainted, nodepool("plain", requirements=REQ)))
    assert sim.all_scheduled and sim.new_nodes[0].pool.name == "plain"
    sim = _simulate(node_and_claim("a", pool="tainted"), pod("x-1", "a"), pools=(tainted,))
    assert sim.all_scheduled and sim.new_nodes[0].pool.name == "tainted"


def test_schedule_anyway_spread_is_required_until_relaxed():
    soft = [{"maxSkew": 1, "topologyKey": L.ZONE_LABEL, "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": {"app": "web"}}}]
    objs = (node_and_claim("a"), node_and_claim("b"), node_and_claim("c", zone="us-east-1b"),
            *(pod(f"web-{i}", n, labels={"app": "web"}, spread=soft) for i, n in ((1, "a"), (2, "b"), (3, "c"))))
    # without web-1 the zones hold 1/1/0: the strict spread sends it to zone c, on a new node, not onto b (zone a)
    sim = _simulate(*objs)
    assert {p.name: to for p, to in sim.placements} == {"web-1": "new-0"}
    assert _zones(sim.new_nodes[0]) == {"us-east-1c"}


def test_ladder_follows_preferences_go_order():
    spec = {"containers": [], "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [_zone_in("a"), _zone_in("b")]},
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": _zone_in("b")}]},
        "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "podAffinityTerm": {"topologyKey": "k", "labelSelector": {}}}]}},
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "k", "whenUnsatisfiable": "ScheduleAnyway"}]}
    rungs = ladder(spec, prefer_no_schedule=True)
    # strict, then: drop required term a, drop the pod affinity preference, drop the node preference, drop the
    # ScheduleAnyway spread, tolerate PreferNoSchedule
    assert len(rungs) == 6 and [pns for _, pns in rungs] == [True] * 5 + [False]
    first = rungs[0][0]["affinity"]
    assert first["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {"matchExpressions": [*_zone_in("a")["matchExpressions"], *_zone_in("b")["matchExpressions"]]}]
    assert first["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"] == "k"
    assert rungs[0][0]["topologySpreadConstraints"][0]["whenUnsatisfiable"] == "DoNotSchedule"
    assert rungs[1][0]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["b"]
    assert "requiredDuringSchedulingIgnoredDuringExecution" not in rungs[2][0]["affinity"]["podAffinity"]
    assert rungs[4][0]["topologySpreadConstraints"] == []
    assert strict_spec({"containers": []})["topologySpreadConstraints"] == []


def test_provisioning_launches_in_the_preferred_zone():
    # Karpenter's provisioner: a pending pod's preferred zone is required on its first try, so the NodeClaim
    # launches there though another zone is cheaper or first
    affinity = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "preference": _zone_in("us-east-1c")}]}}
    decision = decide(snapshot(nodepool(requirements=REQ), pod("web-1", None, affinity=affinity)))
    (launch,) = decision.launches
    zone_reqs = [r for r in launch.replacement.requirements or () if r.key == L.ZONE_LABEL]
    assert launch.replacement.zone == "us-east-1c" or any(r.values == ["us-east-1c"] for r in zone_reqs)
