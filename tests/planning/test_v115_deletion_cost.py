"""Pod deletion cost (v1.15 PodDeletionCostManagement, kubernetes-sigs/karpenter#2894): the node order is the pass's
(disrupting, expired, drifted, consolidation by savings ratio), ReplicaSet pods get i - 100000, someone else's cost is
left alone, nothing changed means no patch, and nodeflow's own cost does not feed back into its eviction cost."""

from __future__ import annotations

from datetime import timedelta

from planning_factory import AT, node_and_claim, nodepool, pod, snapshot

from api import labels as L
from planning.cluster import Cluster, parse_pod
from planning.disruption.candidates import eviction_cost
from planning.disruption.deletion_cost import (
    RANK_BASE,
    Tier,
    annotation_patches,
    deletion_costs,
    disruption_order,
)

DRIFTED = [{"type": "Initialized", "status": "True", "lastTransitionTime": "2026-11-22T17:00:00Z"},
           {"type": "Drifted", "status": "True", "reason": "NodePoolDrifted",
            "lastTransitionTime": "2026-11-22T19:00:00Z"}]


def _order(*objs):
    return [(r.name, r.tier) for r in disruption_order(Cluster.from_snapshot(snapshot(*objs)), AT)]


def test_the_order_is_the_pass_order_disrupting_expired_drifted_then_consolidation():
    disrupting = node_and_claim("a-going", taints=[{"key": L.DISRUPTED_TAINT_KEY, "effect": "NoSchedule"}])
    expired = node_and_claim("b-old", created=AT - timedelta(hours=800))
    drifted = node_and_claim("c-drifted", conditions=DRIFTED)
    cheap, dear = node_and_claim("d-small", "m5.large"), node_and_claim("e-big", "m5.4xlarge")
    pods = [pod(f"w-{n}", n) for n in ("a-going", "b-old", "c-drifted", "d-small", "e-big")]
    assert _order(nodepool(), disrupting, expired, drifted, cheap, dear, *pods) == [
        ("a-going", Tier.DISRUPTING), ("b-old", Tier.EXPIRED), ("c-drifted", Tier.DRIFTED),
        ("e-big", Tier.CONSOLIDATABLE), ("d-small", Tier.CONSOLIDATABLE)]  # savings ratio: the dearer node first


def test_blocked_and_unmanaged_nodes_are_not_ranked():
    pinned = node_and_claim("a", node_annotations={L.DO_NOT_DISRUPT_ANNOTATION: "true"})
    unmanaged = node_and_claim("b")[0]
    assert _order(nodepool(), pinned, unmanaged, node_and_claim("c"), pod("w-a", "a"), pod("w-b", "b")) == [
        ("c", Tier.CONSOLIDATABLE)]


def test_consolidation_candidates_under_consolidate_after_come_last():
    fresh = node_and_claim("a-fresh", "m5.4xlarge", last_pod_event=AT - timedelta(seconds=10))
    assert _order(nodepool(consolidate_after="5m"), fresh, node_and_claim("b-settled", "m5.large"),
                  pod("w-1", "a-fresh"), pod("w-2", "b-settled")) == [
        ("b-settled", Tier.CONSOLIDATABLE), ("a-fresh", Tier.CANDIDATE)]


def test_costs_count_up_from_the_base_for_active_replicaset_pods_only():
    cluster = Cluster.from_snapshot(snapshot(
        nodepool(), node_and_claim("a", "m5.4xlarge"), node_and_claim("b", "m5.large"),
        pod("rs-1", "a"), pod("rs-2", "b"), pod("sts-0", "a", owner="StatefulSet"),
        pod("done-1", "a", phase="Succeeded")))
    base = -RANK_BASE
    assert deletion_costs(cluster, disruption_order(cluster, AT)) == {"default/rs-1": base, "default/rs-2": base + 1}


def _pods(*raw):
    return [parse_pod(p) for p in raw]


def test_patches_set_change_and_remove_only_nodeflows_own_costs():
    ours = {L.POD_DELETION_COST_ANNOTATION: "-3", L.MANAGED_DELETION_COST_ANNOTATION: "-3"}
    theirs = {L.POD_DELETION_COST_ANNOTATION: "100"}
    overwritten = {L.POD_DELETION_COST_ANNOTATION: "7", L.MANAGED_DELETION_COST_ANNOTATION: "-3"}
    pods = _pods(pod("new-1", "a"), pod("moved-1", "a", annotations=ours), pod("same-1", "a", annotations=ours),
                 pod("gone-1", "b", annotations=ours), pod("user-1", "a", annotations=theirs),
                 pod("user-2", "a", annotations=overwritten))
    costs = {"default/new-1": -2, "default/moved-1": -1, "default/same-1": -3, "default/user-1": -2,
             "default/user-2": -2}
    patches, foreign = annotation_patches(pods, costs)
    assert [(p.name, p.annotations) for p in patches] == [
        ("new-1", {L.POD_DELETION_COST_ANNOTATION: "-2", L.MANAGED_DELETION_COST_ANNOTATION: "-2"}),
        ("moved-1", {L.POD_DELETION_COST_ANNOTATION: "-1", L.MANAGED_DELETION_COST_ANNOTATION: "-1"}),
        ("gone-1", {L.POD_DELETION_COST_ANNOTATION: None, L.MANAGED_DELETION_COST_ANNOTATION: None})]
    assert foreign == 2


def test_nothing_changed_means_no_patch():
    ours = {L.POD_DELETION_COST_ANNOTATION: "-1", L.MANAGED_DELETION_COST_ANNOTATION: "-1"}
    assert annotation_patches(_pods(pod("a-1", "a", annotations=ours)), {"default/a-1": -1}) == ([], 0)


def test_nodeflows_own_cost_does_not_change_its_eviction_cost():
    ours = parse_pod(pod("a-1", "a", annotations={L.POD_DELETION_COST_ANNOTATION: str(2**27),
                                                  L.MANAGED_DELETION_COST_ANNOTATION: str(2**27)}))
    theirs = parse_pod(pod("a-2", "a", annotations={L.POD_DELETION_COST_ANNOTATION: str(2**27)}))
    assert (eviction_cost(ours), eviction_cost(theirs)) == (1.0, 2.0)
