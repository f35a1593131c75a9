"""Spot fallback and return (docs/semantics.md §15.5): the recorded fallback, the SpotReturn method and the cap."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from planning_factory import AT, node_and_claim, nodepool, pod, snapshot, ts

from api import labels as L
from api.catalog import load_default_catalog
from api.policy_controls import SPOT_FALLBACK_ANNOTATION
from planning.disruption.commands import Replacement, Requirement
from planning.planner.plan import plan
from planning.pricing.unavailable_offerings import without_offerings
from planning.provisioning.provisioner import Exclusion, Launch, ProvisioningDecision, decide
from planning.provisioning.spot_fallback import (
    admits_spot,
    cap_fallbacks,
    capacity_counts,
    fallback_since,
    fallback_value,
    fell_back,
    pod_admits_spot,
    within_cap,
)

BOTH = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["spot", "on-demand"]},
        {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]},
        {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"]}]
ON_DEMAND_ONLY = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]}]


def policy(**spot: Any) -> dict[str, Any]:
    return {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": "spot"},
            "spec": {"nodePools": ["default"], "spot": spot}}


def fallback(name: str, since: timedelta, **kw: Any) -> list[dict[str, Any]]:
    return node_and_claim(name, "m5.xlarge", claim_annotations={SPOT_FALLBACK_ANNOTATION: ts(AT - since)}, **kw)


def cluster(*extra: Any, budgets: list[dict[str, Any]] | None = None, since: timedelta = timedelta(hours=1)
            ) -> list[Any]:
    return [nodepool(consolidate_after="Never", requirements=BOTH, budgets=budgets), *fallback("od", since),
            pod("web-1", "od", cpu="1500m"), *extra]


def no_spot() -> Any:
    catalog = load_default_catalog()
    keys = {(it.name, o.zone, o.capacity_type) for it in catalog.instance_types for o in it.offerings
            if o.capacity_type == L.CAPACITY_SPOT}
    return without_offerings(catalog, keys)


# ---- the return ----------------------------------------------------------------------------------------------

def test_a_fallback_node_past_return_after_is_replaced_with_spot():
    result = plan(snapshot(*cluster(), policy(returnAfter="30m")), AT)
    (cmd,) = result.commands
    assert (cmd.method, cmd.reason, cmd.nodes) == ("SpotReturn", "SpotFallback", ["od"])
    (rep,) = cmd.replacements
    assert rep.capacity_type == "spot" and rep.price < 0.192  # m5.xlarge on-demand
    assert cmd.savings_per_hour > 0 and [m.pod for m in cmd.pods] == ["default/web-1"]


def test_before_return_after_nothing_happens():
    result = plan(snapshot(*cluster(since=timedelta(minutes=10)), policy(returnAfter="30m")), AT)
    assert result.commands == [] and result.blocked == []


def test_without_a_policy_or_a_record_nothing_returns():
    assert plan(snapshot(*cluster()), AT).commands == []
    objs = [nodepool(consolidate_after="Never", requirements=BOTH), *node_and_claim("od", "m5.xlarge"),
            pod("web-1", "od", cpu="1500m"), policy(returnAfter="30m")]
    assert plan(snapshot(*objs), AT).commands == []


def test_a_spot_node_with_a_stale_record_is_left_alone():
    objs = [nodepool(consolidate_after="Never", requirements=BOTH),
            *fallback("sp", timedelta(hours=1), capacity_type="spot"), pod("web-1", "sp", cpu="1500m"),
            policy(returnAfter="30m")]
    assert plan(snapshot(*objs), AT).commands == []


def test_a_pool_that_no_longer_admits_spot_keeps_the_node_quietly():
    objs = [nodepool(consolidate_after="Never", requirements=ON_DEMAND_ONLY), *fallback("od", timedelta(hours=1)),
            pod("web-1", "od", cpu="1500m"), policy(returnAfter="30m")]
    result = plan(snapshot(*objs), AT)
    assert result.commands == [] and result.blocked == []


def test_while_spot_is_unavailable_the_node_is_blocked_and_says_why():
    result = plan(snapshot(*cluster(), policy(returnAfter="30m")), AT, catalog=no_spot())
    assert result.commands == []
    (blocked,) = result.blocked
    assert blocked.node == "od" and "no spot offering is available" in blocked.reason
    assert any(e.kind == "Node" and e.name == "od" and "spot return waits" in e.message.lower()
               for e in result.events)


def test_the_return_spends_the_underutilized_budget():
    objs = cluster(budgets=[{"nodes": "0", "reasons": ["Underutilized"]}])
    result = plan(snapshot(*objs, policy(returnAfter="30m")), AT)
    assert result.commands == []
    assert "allows no more Underutilized disruptions" in {b.node: b.reason for b in result.blocked}["od"]
    objs = cluster(budgets=[{"nodes": "0", "reasons": ["Drifted", "Empty"]}])
    assert [c.method for c in plan(snapshot(*objs, policy(returnAfter="30m")), AT).commands] == ["SpotReturn"]


def test_longest_fallen_back_goes_first_one_per_pass():
    objs = [*cluster(), *fallback("od2", timedelta(hours=3)), pod("api-1", "od2", cpu="1500m"),
            policy(returnAfter="30m")]
    (cmd,) = plan(snapshot(*objs), AT).commands
    assert cmd.nodes == ["od2"]


def test_until_stable_returns_every_fallback_node():
    objs = [*cluster(), *fallback("od2", timedelta(hours=3)), pod("api-1", "od2", cpu="1500m"),
            policy(returnAfter="30m")]
    result = plan(snapshot(*objs), AT, until_stable=True)
    assert [(c.method, c.nodes) for c in result.commands][:2] == [("SpotReturn", ["od2"]), ("SpotReturn", ["od"])]


def test_a_do_not_disrupt_pod_keeps_its_node():
    objs = cluster(pod("pinned-1", "od", annotations={"karpenter.sh/do-not-disrupt": "true"}))
    assert plan(snapshot(*objs, policy(returnAfter="30m")), AT).commands == []


# ---- recording the fallback -------------------------------------------------------------------------------------

def test_admits_spot_reads_the_capacity_type_requirement():
    assert admits_spot(BOTH) and admits_spot([]) and not admits_spot(ON_DEMAND_ONLY)
    assert admits_spot([{"key": L.CAPACITY_TYPE_LABEL, "operator": "NotIn", "values": ["on-demand"]}])


def test_fell_back_only_when_every_spot_offering_of_the_types_was_refused():
    full = load_default_catalog()
    refused = without_offerings(full, {("m5.xlarge", o.zone, "spot") for o in full.get("m5.xlarge").offerings})
    assert fell_back(BOTH, "on-demand", ["m5.xlarge"], None, full, refused)
    assert not fell_back(BOTH, "on-demand", ["m5.xlarge", "m5.2xlarge"], None, full, refused)  # 2xlarge spot is left
    assert not fell_back(ON_DEMAND_ONLY, "on-demand", ["m5.xlarge"], None, full, refused)
    assert not fell_back(BOTH, "spot", ["m5.xlarge"], None, full, refused)
    assert not fell_back(BOTH, "on-demand", ["m5.xlarge"], None, full, full)  # nothing refused: a pod's choice
    one_zone = without_offerings(full, {("m5.xlarge", "us-east-1a", "spot")})
    assert fell_back(BOTH, "on-demand", ["m5.xlarge"], {"us-east-1a"}, full, one_zone)
    assert not fell_back(BOTH, "on-demand", ["m5.xlarge"], None, full, one_zone)


def test_the_annotation_round_trips():
    assert fallback_since({SPOT_FALLBACK_ANNOTATION: fallback_value(AT)}) == AT
    assert fallback_since({}) is None and fallback_since({SPOT_FALLBACK_ANNOTATION: "soon"}) is None


# ---- the cap ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("on_demand", "total", "ok"), [(0, 0, False), (0, 3, True), (1, 3, False), (0, 2, False),
                                                        (1, 7, True), (2, 7, False)])
def test_within_cap_counts_the_new_node(on_demand: int, total: int, ok: bool):
    assert within_cap(Decimal("0.25"), on_demand, total) is ok


def test_pod_admits_spot_reads_selector_and_required_affinity():
    assert pod_admits_spot(pod("a-1", None))
    assert not pod_admits_spot(pod("a-1", None, node_selector={L.CAPACITY_TYPE_LABEL: "on-demand"}))
    term = {"matchExpressions": [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]}]}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
    assert not pod_admits_spot(pod("a-1", None, affinity=affinity))


def _pending_cluster(spot_nodes: int, on_demand_nodes: int, *extra: Any) -> Any:
    objs: list[Any] = [nodepool(consolidate_after="Never", requirements=BOTH)]
    for i in range(spot_nodes):
        objs += node_and_claim(f"s{i}", "m5.xlarge", capacity_type="spot")
        objs.append(pod(f"fill{i}-1", f"s{i}", cpu="3500m"))
    for i in range(on_demand_nodes):
        objs += node_and_claim(f"o{i}", "m5.xlarge")
        objs.append(pod(f"fillo{i}-1", f"o{i}", cpu="3500m"))
    objs += [pod("new-1", None, cpu="1500m"), policy(maxOnDemandFraction="25%"), *extra]
    return snapshot(*objs)


def _spot_refused(full: Any) -> Any:
    keys = {(it.name, o.zone, "spot") for it in full.instance_types if it.name.startswith("m5.") for o in it.offerings}
    return without_offerings(full, keys)


def test_at_the_cap_a_fallback_launch_is_refused_and_the_pod_says_why():
    full = load_default_catalog()
    applied = _spot_refused(full)
    snap = _pending_cluster(2, 1)  # 1 of 3 on-demand: a fourth, on-demand, would be 2 of 4 > 25%
    decision = decide(snap, applied, at=AT)
    assert [lt.replacement.capacity_type for lt in decision.launches] == ["on-demand"]
    capped = cap_fallbacks(decision, snap, full, applied, AT)
    assert decision.launches == [] and [c.pods for c in capped] == [["default/new-1"]]
    (u,) = decision.unservable
    assert u.pod == "default/new-1" and u.uid == "uid-default-new-1"
    (ex,) = u.exclusions
    assert ex.reason is Exclusion.SPOT_FALLBACK_CAP and "maxOnDemandFraction 25%" in ex.detail
    assert "2 of 4 nodes of nodepool default on-demand" in u.message()


def test_under_the_cap_the_fallback_launches():
    full = load_default_catalog()
    applied = _spot_refused(full)
    snap = _pending_cluster(3, 0)  # 1 of 4 on-demand after the launch: 25%
    decision = decide(snap, applied, at=AT)
    assert cap_fallbacks(decision, snap, full, applied, AT) == []
    assert [lt.replacement.capacity_type for lt in decision.launches] == ["on-demand"]


def test_the_cap_spares_launches_that_are_not_fallbacks():
    full = load_default_catalog()
    snap = _pending_cluster(2, 1)
    decision = decide(snap, full, at=AT)  # spot is offered: the launch is spot
    assert cap_fallbacks(decision, snap, full, full, AT) == [] and len(decision.launches) == 1
    applied = _spot_refused(full)
    must = pod("od-1", None, cpu="1500m", node_selector={L.CAPACITY_TYPE_LABEL: "on-demand"})
    snap = _pending_cluster(2, 1, must)
    decision = ProvisioningDecision(launches=[Launch(_on_demand(), ["default/od-1"])])
    assert cap_fallbacks(decision, snap, full, applied, AT) == [] and len(decision.launches) == 1


def test_launches_of_one_batch_count_toward_the_cap():
    full = load_default_catalog()
    applied = _spot_refused(full)
    snap = _pending_cluster(6, 0)
    decision = ProvisioningDecision(launches=[Launch(_on_demand(), ["default/a-1"]),
                                              Launch(_on_demand(), ["default/b-1"])])
    capped = cap_fallbacks(decision, snap, full, applied, AT)  # 1 of 7 ok; 2 of 8 ok; both fit 25%
    assert capped == [] and len(decision.launches) == 2
    decision.launches.append(Launch(_on_demand(), ["default/c-1"]))
    snap = _pending_cluster(7, 0)  # 1 of 8, 2 of 9, then 3 of 10 is above 25%
    assert [c.pods for c in cap_fallbacks(decision, snap, full, applied, AT)] == [["default/c-1"]]


def test_capacity_counts_skips_deleting_claims():
    objs = [*node_and_claim("a", "m5.large"), *node_and_claim("b", "m5.large", capacity_type="spot")]
    objs[3]["metadata"]["deletionTimestamp"] = ts(AT)
    assert capacity_counts([o for o in objs if o["kind"] == "NodeClaim"]) == {"default": [1, 1]}


def _on_demand() -> Replacement:
    return Replacement(instance_types=["m5.xlarge"], capacity_type="on-demand", price=0.192, node_pool="default",
                       requirements=[Requirement(key=L.INSTANCE_TYPE_LABEL, operator="In", values=["m5.xlarge"])])


# ---- validation -------------------------------------------------------------------------------------------------

def test_validation_rechecks_the_return_on_its_own_node():
    from planning.disruption.validation import Decision, Mismatch
    from planning.planner.recheck import recheck_spot_return

    snap = snapshot(*cluster(), policy(returnAfter="30m"))
    (cmd,) = plan(snap, AT).commands
    ours = Decision.of(cmd.method, cmd.nodes, cmd.replacements)
    assert recheck_spot_return(snap, AT, cmd.nodes, ours) is None
    drifted = node_and_claim("old", "m5.large", claim_annotations={L.TEMPLATE_HASH_ANNOTATION: "stale"})
    busier = snapshot(*cluster(*drifted, pod("hog-1", "old", cpu="1800m")), policy(returnAfter="30m"))
    assert plan(busier, AT).commands[0].method == "Drift"  # the next pass would start something else
    assert recheck_spot_return(busier, AT, cmd.nodes, ours) is None  # the return still holds
    assert recheck_spot_return(snap, AT, cmd.nodes, ours, catalog=no_spot()) is Mismatch.NEW_SCHEDULING_RESULTS
    assert recheck_spot_return(snap, AT - timedelta(minutes=45), cmd.nodes, ours) is Mismatch.CANDIDATES_CHANGED
    spent = snapshot(*cluster(budgets=[{"nodes": "0", "reasons": ["Underutilized"]}]), policy(returnAfter="30m"))
    assert recheck_spot_return(spent, AT, cmd.nodes, ours) is Mismatch.BUDGET


def test_the_cap_reads_the_zones_of_the_node_class_subnets():
    """Spot refused in the class's zones a and b is a fallback even though the catalog still offers spot in c."""
    node_class = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"},
                  "spec": {"role": "NodeRole", "amiSelectorTerms": [{"alias": "al2023@latest"}],
                           "subnetSelectorTerms": [{"tags": {"k": "v"}}],
                           "securityGroupSelectorTerms": [{"tags": {"k": "v"}}]},
                  "status": {"amis": [{"id": "ami-1", "name": "al2023", "requirements": [
                      {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]}]}],
                      "subnets": [{"id": "subnet-a", "zone": "us-east-1a"}, {"id": "subnet-b", "zone": "us-east-1b"}],
                      "securityGroups": [{"id": "sg-a"}],
                      "conditions": [{"type": "Ready", "status": "True", "reason": "Ready",
                                      "lastTransitionTime": "2026-11-22T19:00:00Z"}]}}
    full = load_default_catalog()
    applied = without_offerings(full, {(it.name, z, "spot") for it in full.instance_types if it.name.startswith("m5.")
                                       for z in ("us-east-1a", "us-east-1b")})
    snap = snapshot(nodepool(consolidate_after="Never", requirements=BOTH), node_class,
                    pod("new-1", None, cpu="1500m"), policy(maxOnDemandFraction="0%"))
    decision = decide(snap, applied, at=AT)
    (launch,) = decision.launches
    assert launch.replacement.capacity_type == "on-demand" and launch.replacement.zone is None
    assert [c.pods for c in cap_fallbacks(decision, snap, full, applied, AT)] == [["default/new-1"]]
