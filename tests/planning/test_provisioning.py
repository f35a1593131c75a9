"""planning/provisioning/provisioner.py: which NodeClaims to launch for pending pods (pure, from snapshots)."""

from __future__ import annotations

from typing import Any

from planning_factory import node_and_claim, nodepool, pod, snapshot

from api import labels as L
from api.catalog import load_default_catalog
from planning.provisioning.provisioner import Exclusion, decide

ON_DEMAND_AMD64 = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
                   {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]}]


def _price(itype: str, capacity_type: str) -> float:
    it = load_default_catalog().get(itype)
    assert it is not None
    return min(o.price for o in it.offerings if o.capacity_type == capacity_type)


def _launching_claim(name: str, types: list[str], pool: str = "default") -> dict[str, Any]:
    """A NodeClaim as the launch activity creates it: no Node yet, its types in a requirement."""
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": name, "uid": f"uid-{name}", "labels": {L.NODEPOOL_LABEL: pool}},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                     "requirements": [{"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": types},
                                      {"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]}]},
            "status": {}}


def test_scale_up_packs_pods_onto_the_fewest_cheapest_nodes() -> None:
    pods = [pod(f"web-{i}", None, cpu="1", memory="1Gi") for i in range(10)]
    decision = decide(snapshot(nodepool(requirements=ON_DEMAND_AMD64), *pods))
    (launch,) = decision.launches  # 10 cpu fit one 16-cpu node: one NodeClaim, not several small ones
    assert sorted(launch.pods) == sorted(f"default/web-{i}" for i in range(10))
    types = launch.replacement.instance_types
    assert launch.replacement.capacity_type == "on-demand" and len(types) > 1
    prices = [_price(t, "on-demand") for t in types]
    assert prices == sorted(prices)  # cheapest first, as Karpenter passes them to the launch
    assert types[0] == "c6a.4xlarge"  # the cheapest amd64 type with room for 10 cpu
    assert all(load_default_catalog().get(t).cpu_cores >= 10 for t in types)
    assert decision.unservable == [] and decision.nominated == {}


def test_pods_that_fit_existing_nodes_launch_nothing() -> None:
    decision = decide(snapshot(nodepool(), node_and_claim("a", "m5.xlarge"), pod("web-0", None, cpu="1")))
    assert decision.launches == [] and decision.scheduled == {"default/web-0": "a"}


def test_spot_is_preferred_when_the_pool_allows_it() -> None:
    reqs = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["spot", "on-demand"]}]
    (launch,) = decide(snapshot(nodepool(requirements=reqs), pod("web-0", None, cpu="1"))).launches
    assert launch.replacement.capacity_type == "spot"


def test_pools_are_tried_by_weight_before_price() -> None:
    cheap = nodepool("cheap", requirements=ON_DEMAND_AMD64)
    heavy = nodepool("heavy", weight=50, requirements=[
        *ON_DEMAND_AMD64, {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"]}])
    (launch,) = decide(snapshot(cheap, heavy, pod("web-0", None, cpu="1"))).launches
    assert launch.node_pool == "heavy" and launch.replacement.instance_types[0] == "m5.large"


def test_a_tainted_pool_serves_only_tolerating_pods() -> None:
    gpu = nodepool("gpu", weight=10, taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}])
    tolerating = pod("train-0", None, tolerations=[{"key": "gpu", "operator": "Exists"}])
    decision = decide(snapshot(gpu, nodepool("default"), tolerating, pod("web-0", None)))
    assert {lt.node_pool: lt.pods for lt in decision.launches} == {"gpu": ["default/train-0"],
                                                                    "default": ["default/web-0"]}


def test_limits_stop_a_launch_and_name_the_pool() -> None:
    pool = nodepool(limits={"cpu": "4"})
    decision = decide(snapshot(pool, node_and_claim("a", "m5.xlarge", pool="default"),
                               pod("busy", "a", cpu="3500m"), pod("web-0", None, cpu="1")))
    assert decision.launches == []
    (un,) = decision.unservable
    (excl,) = un.exclusions
    assert (un.pod, excl.node_pool, excl.reason) == ("default/web-0", "default", Exclusion.LIMITS)
    assert decision.pools_at_limit == {"default": "limits cpu=4 reached"}


def test_limits_count_new_nodes_too() -> None:
    pool = nodepool(limits={"cpu": "4"}, requirements=[
        *ON_DEMAND_AMD64, {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large"]}])
    decision = decide(snapshot(pool, *[pod(f"web-{i}", None, cpu="1500m") for i in range(3)]))
    assert len(decision.launches) == 2  # 2 x m5.large = 4 cpu; the third pod would exceed the limit
    assert [u.exclusions[0].reason for u in decision.unservable] == [Exclusion.LIMITS]


def test_pods_fitting_a_launching_nodeclaim_launch_nothing() -> None:
    claim = _launching_claim("default-abc", ["m5.xlarge", "m5.2xlarge"])
    decision = decide(snapshot(nodepool(), claim, pod("web-0", None, cpu="1"), pod("web-1", None, cpu="1")))
    assert decision.launches == []
    assert decision.nominated == {"default/web-0": "<launching:default-abc>",
                                  "default/web-1": "<launching:default-abc>"}


def test_a_launching_nodeclaim_takes_only_what_fits_and_the_rest_launches() -> None:
    claim = _launching_claim("default-abc", ["m5.xlarge"])  # 4 cpu
    pods = [pod(f"web-{i}", None, cpu="1500m") for i in range(4)]
    decision = decide(snapshot(nodepool(), claim, *pods))
    assert len(decision.nominated) == 2 and sum(len(lt.pods) for lt in decision.launches) == 2


def test_a_registered_but_not_ready_node_counts_as_launching() -> None:
    objs = node_and_claim("booting", "m5.xlarge", ready=False,
                          taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}])
    objs[0]["metadata"]["labels"].pop(L.INITIALIZED_LABEL)
    decision = decide(snapshot(nodepool(), objs, pod("web-0", None, cpu="1")))
    assert decision.launches == [] and decision.nominated == {"default/web-0": "booting"}


def test_only_the_batch_launches_but_other_pending_pods_take_room_first() -> None:
    claim = _launching_claim("default-abc", ["m5.large"])  # 2 cpu
    other, ours = pod("other-0", None, cpu="1500m"), pod("ours-0", None, cpu="1500m")
    decision = decide(snapshot(nodepool(), claim, other, ours), pods=["default/ours-0"])
    (launch,) = decision.launches  # the launching claim is the other pod's; ours needs a node of its own
    assert launch.pods == ["default/ours-0"] and decision.nominated == {}


def test_an_unsatisfiable_node_selector_is_reported_with_the_requirement() -> None:
    decision = decide(snapshot(nodepool(), pod("web-0", None, node_selector={L.ZONE_LABEL: "mars-1a"})))
    assert decision.launches == []
    (un,) = decision.unservable
    (excl,) = un.exclusions
    assert (un.pod, un.uid, excl.node_pool, excl.reason) == ("default/web-0", "uid-default-web-0", "default",
                                                             Exclusion.REQUIREMENT)
    assert f"nodeSelector {L.ZONE_LABEL}=mars-1a" in excl.detail and "nodepool default" in un.message()


def test_each_pool_gives_its_own_reason() -> None:
    gpu = nodepool("gpu", weight=10, taints=[{"key": "gpu", "effect": "NoSchedule"}])
    decision = decide(snapshot(gpu, nodepool("default"), pod("huge", None, cpu="500")))
    (un,) = decision.unservable
    assert [(e.node_pool, e.reason) for e in un.exclusions] == [("gpu", Exclusion.TAINT),
                                                                ("default", Exclusion.RESOURCES)]


def test_an_affinity_expression_is_named() -> None:
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": L.ARCH_LABEL, "operator": "In", "values": ["s390x"]}]}]}}}
    (un,) = decide(snapshot(nodepool(), pod("web-0", None, affinity=affinity))).unservable
    assert un.exclusions[0].reason == Exclusion.REQUIREMENT and "s390x" in un.exclusions[0].detail


def test_no_nodepool_at_all() -> None:
    (un,) = decide(snapshot(pod("web-0", None))).unservable
    assert un.exclusions[0].reason == Exclusion.NO_NODEPOOL


def test_daemonset_and_terminal_pods_are_not_provisioned_for() -> None:
    objs = [pod("ds-0", None, owner="DaemonSet"), pod("done-0", None, phase="Succeeded")]
    decision = decide(snapshot(nodepool(), *objs))
    assert decision.launches == [] and decision.unservable == []


def _zone_spread_pods(n: int, cpu: str) -> list[dict[str, Any]]:
    spread = [{"maxSkew": 1, "topologyKey": L.ZONE_LABEL, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]
    return [pod(f"web-{i}", None, cpu=cpu, memory="1Gi", labels={"app": "web"}, spread=spread) for i in range(n)]


def _zone_of(launch: Any) -> str:
    reqs = {r.key: r.values for r in launch.replacement.requirements} if launch.replacement.requirements else {}
    zones = reqs.get(L.ZONE_LABEL) or ([launch.replacement.zone] if launch.replacement.zone else [])
    assert len(zones) == 1, zones  # each new node is bound to one zone
    return zones[0]


def test_a_scale_up_spreads_new_nodes_over_the_zones_of_a_zone_spread() -> None:
    """With no node yet, pods spread over zones must not all land in the cheapest zone: once a node exists in
    another zone, kube-scheduler counts it as a domain, and every later pod would have to move there (the wide
    scenario of Karpenter's suite migrated its whole cluster one consolidation at a time)."""
    decision = decide(snapshot(nodepool(requirements=ON_DEMAND_AMD64), *_zone_spread_pods(30, "3")))
    per_zone: dict[str, int] = {}
    for launch in decision.launches:
        zone = _zone_of(launch)
        per_zone[zone] = per_zone.get(zone, 0) + len(launch.pods)
    assert len(per_zone) == 3 and max(per_zone.values()) - min(per_zone.values()) <= 1, per_zone


def test_small_zone_spread_pods_get_one_node_per_zone() -> None:
    """Nine small pods would fit one node, but a node is in one zone: maxSkew 1 over three zones needs three."""
    decision = decide(snapshot(nodepool(requirements=ON_DEMAND_AMD64), *_zone_spread_pods(9, "100m")))
    assert sorted(len(launch.pods) for launch in decision.launches) == [3, 3, 3]
    assert len({_zone_of(launch) for launch in decision.launches}) == 3
