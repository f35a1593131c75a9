"""Static NodePools (planning/provisioning/static_capacity.py, planning/disruption/static_drift.py): under, at and over
replicas, the node limit, budgets, a scale-down in flight, one drift at a time, and static pools left out of every
other method."""

from __future__ import annotations

from typing import Any

from planning_factory import AT, node_and_claim, nodepool, pod, snapshot

from api import labels as L
from api.events import STATIC_DRIFT_AT_LIMIT
from planning.disruption.commands import StaticPool, TerminateFirst
from planning.planner.plan import plan
from planning.provisioning.provisioner import decide

STALE = {L.TEMPLATE_HASH_ANNOTATION: "stale-template"}


def static_pool(replicas: int, name: str = "static", **kw: Any) -> dict[str, Any]:
    pool = nodepool(name, **kw)
    pool["spec"]["replicas"] = replicas
    return pool


def nodes(pool: dict[str, Any], *names: str, **kw: Any) -> list[dict[str, Any]]:
    """Current (not drifted) nodes of `pool`."""
    out: list[dict[str, Any]] = []
    for n in names:
        out += node_and_claim(n, pool=pool["metadata"]["name"], pool_obj=pool, **kw)
    return out


def launching_claim(name: str, pool: str = "static") -> dict[str, Any]:
    """A NodeClaim whose Node has not registered yet."""
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": name, "uid": f"uid-claim-{name}", "labels": {L.NODEPOOL_LABEL: pool}},
            "spec": {"requirements": [{"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large"]}],
                     "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}},
            "status": {"providerID": f"aws:///us-east-1a/i-{name}"}}


def decision(*objs: Any, exclude: frozenset[str] = frozenset()) -> tuple[StaticPool, Any]:
    result = plan(snapshot(*objs), AT, exclude_nodes=exclude)
    (pool,) = result.static_node_pools
    return pool, result


def test_under_replicas_launches_the_difference_from_the_template() -> None:
    pool = static_pool(3)
    d, result = decision(pool, nodes(pool, "s-0"))
    assert (d.replicas, d.running, d.launch, d.remove, d.held) == (3, 1, 2, [], None)
    assert d.replacement is not None and d.replacement.capacity_type == "on-demand"
    assert d.replacement.node_pool == "static" and "m5.large" in d.replacement.instance_types
    assert result.commands == []


def test_at_replicas_does_nothing() -> None:
    pool = static_pool(2)
    d, _ = decision(pool, nodes(pool, "s-0", "s-1"))
    assert (d.running, d.launch, d.remove, d.held) == (2, 0, [], None)


def test_over_replicas_removes_empty_nodes_first_then_fewest_pods_and_do_not_disrupt_last() -> None:
    pool = static_pool(1)
    objs = [pool, nodes(pool, "a-empty", "b-one", "c-dnd", "d-three"),
            pod("daemon-x", "a-empty", owner="DaemonSet"),
            pod("one-0", "b-one"),
            pod("dnd-0", "c-dnd", annotations={L.DO_NOT_DISRUPT_ANNOTATION: "true"}),
            *[pod(f"three-{i}", "d-three") for i in range(3)]]
    d, _ = decision(*objs)
    assert [(r.node, r.why) for r in d.remove] == [("a-empty", "empty"), ("b-one", "fewest pods to move"),
                                                   ("d-three", "fewest pods to move")]
    assert d.remove[0].node_uid == "uid-a-empty" and d.remove[0].node_claim == "a-empty"
    # scaled to zero: the do-not-disrupt node goes too, last (its termination waits for the pod)
    d0, _ = decision(static_pool(0), *objs[1:])
    assert [r.node for r in d0.remove][-1] == "c-dnd" and d0.remove[-1].why == "do-not-disrupt"


def test_the_node_limit_holds_a_pool_below_its_replicas_with_an_event() -> None:
    pool = static_pool(5, limits={"nodes": "3"})
    d, result = decision(pool, nodes(pool, "s-0"))
    assert (d.launch, d.limit_nodes) == (2, 3)
    assert d.held == "limits.nodes=3 reached: 1 node(s) of 5 replicas, no more are launched"
    assert [(e.kind, e.name, e.reason, e.type) for e in result.events if e.reason == "NodePoolLimitsReached"] == [
        ("NodePool", "static", "NodePoolLimitsReached", "Warning")]
    at_limit, _ = decision(pool, nodes(pool, "s-0", "s-1", "s-2"))
    assert at_limit.launch == 0 and at_limit.held is not None


def test_launching_deleting_and_in_flight_nodeclaims_count_toward_replicas() -> None:
    pool = static_pool(3)
    deleting = nodes(pool, "s-gone")
    deleting[1]["metadata"]["deletionTimestamp"] = "2026-11-22T19:59:00Z"
    d, _ = decision(pool, nodes(pool, "s-0", "s-busy"), launching_claim("s-new"), deleting,
                    exclude=frozenset({"s-busy"}))
    assert (d.running, d.launching, d.pending_disruption, d.deleting) == (2, 1, 1, 1)
    assert d.launch == 0  # five NodeClaims for three replicas: nothing to launch
    assert d.remove == []  # only running ones are measured against replicas for a scale-down (2 < 3)


def test_a_scale_down_never_picks_nodes_in_flight_or_claims_without_a_node() -> None:
    pool = static_pool(1)
    d, _ = decision(pool, nodes(pool, "s-0", "s-1", "s-busy"), launching_claim("s-new"),
                    exclude=frozenset({"s-busy"}))
    assert d.running == 3 and sorted(r.node for r in d.remove) == ["s-0", "s-1"]


def test_a_paused_pool_scales_up_but_not_down() -> None:
    pool = static_pool(1, annotations={L.PAUSED_ANNOTATION: "true"})
    d, _ = decision(pool, nodes(pool, "s-0", "s-1"))
    assert d.remove == [] and d.held is not None and "paused" in d.held
    up, _ = decision(static_pool(3, annotations={L.PAUSED_ANNOTATION: "true"}), nodes(pool, "s-0"))
    assert up.launch == 2


def test_static_nodes_are_left_out_of_emptiness_consolidation_and_drift() -> None:
    pool = static_pool(2, budgets=[{"nodes": "0"}])
    objs = [pool, nodes(pool, "s-empty"), node_and_claim("s-drifted", pool="static", claim_annotations=STALE)]
    result = plan(snapshot(*objs), AT)
    assert result.commands == []
    assert {b.node for b in result.blocked} == {"s-drifted"}  # only StaticDrift looked at it (budget 0)


def test_pending_pods_never_get_a_node_from_a_static_pool() -> None:
    pool = static_pool(1)
    d = decide(snapshot(pool, nodes(pool, "s-0"), pod("web-0", None, cpu="7")))
    assert d.launches == []
    (unservable,) = d.unservable
    assert "only static NodePools exist (static)" in unservable.message()


# ---- StaticDrift ----------------------------------------------------------------------------------------

def drifted(pool: dict[str, Any], *names: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n in names:
        out += node_and_claim(n, pool=pool["metadata"]["name"], claim_annotations=STALE)
    return out


def test_static_drift_replaces_one_node_at_a_time_under_budget_one() -> None:
    pool = static_pool(3, budgets=[{"nodes": "1"}])
    result = plan(snapshot(pool, drifted(pool, "d-0", "d-1", "d-2")), AT)
    (cmd,) = result.commands
    assert (cmd.method, cmd.reason, cmd.nodes) == ("StaticDrift", "Drifted", ["d-0"])
    (rep,) = cmd.replacements
    assert rep.node_pool == "static" and rep.capacity_type == "on-demand" and cmd.pods == []
    # the next pass: d-0 in flight and its replacement launching: 4 NodeClaims for 3 replicas, nothing more
    second = plan(snapshot(pool, drifted(pool, "d-0", "d-1", "d-2"), launching_claim("static-repl")), AT,
                  exclude_nodes={"d-0"})
    assert second.commands == []
    assert {b.node: b.reason for b in second.blocked}["d-1"].startswith("disruption budget of nodepool static")


def test_static_drift_waits_while_the_pool_is_above_its_replicas() -> None:
    pool = static_pool(2, budgets=[{"nodes": "5"}])
    result = plan(snapshot(pool, drifted(pool, "d-0", "d-1"), nodes(pool, "s-0")), AT)
    assert [c.method for c in result.commands] == []
    assert {b.node for b in result.blocked} == {"d-0", "d-1"}
    assert "drift waits until it is down to them" in result.blocked[0].reason
    (d,) = result.static_node_pools
    assert len(d.remove) == 1  # the scale-down goes first


def test_static_drift_with_budget_zero_is_blocked() -> None:
    pool = static_pool(2, budgets=[{"nodes": "0"}])
    result = plan(snapshot(pool, drifted(pool, "d-0", "d-1")), AT)
    assert result.commands == []
    assert all("allows no more Drifted" in b.reason for b in result.blocked)


def test_static_drift_takes_min_of_budget_and_candidates_within_the_node_limit() -> None:
    pool = static_pool(3, budgets=[{"nodes": "2"}])
    result = plan(snapshot(pool, drifted(pool, "d-0", "d-1", "d-2")), AT)
    assert [c.nodes for c in result.commands] == [["d-0"], ["d-1"]]
    limited = static_pool(3, budgets=[{"nodes": "2"}], limits={"nodes": "4"})
    result = plan(snapshot(limited, drifted(limited, "d-0", "d-1", "d-2")), AT)
    assert [c.nodes for c in result.commands] == [["d-0"]]  # room for one replacement beside the three


def test_v115_static_drift_at_replicas_equal_to_the_node_limit_is_terminate_first() -> None:
    """v1.15 (kubernetes-sigs/karpenter#3312, aws#8873): limits.nodes == replicas leaves no room for a replacement,
    so drift deletes first, one node under budget 1, and says why on the command, the plan and an Event."""
    pool = static_pool(2, budgets=[{"nodes": "1"}], limits={"nodes": "2"})
    result = plan(snapshot(pool, drifted(pool, "d-0", "d-1")), AT)
    (cmd,) = result.commands
    assert (cmd.method, cmd.nodes, cmd.replacements, cmd.decision) == ("StaticDrift", ["d-0"], [], "delete")
    assert cmd.terminate_first is TerminateFirst.AT_REPLICAS
    later = plan(snapshot(pool, drifted(pool, "d-0", "d-1")), AT, exclude_nodes=frozenset({"d-0"}))
    assert later.commands == []  # d-0 in flight spends the budget of 1: one node at a time
    (entry,) = result.static_public()
    assert entry["drift"] == [{"node": "d-0", "instanceTypes": [], "capacityType": None,
                               "terminateFirst": "terminate-first: pool at its replicas (limits.nodes 2)"}]
    assert ("NodePool", "static", "DisruptionTerminating", "terminate-first: pool at its replicas (limits.nodes 2)") \
        in [(e.kind, e.name, e.reason, e.message) for e in result.events]


def test_v115_terminate_first_takes_the_whole_drifted_budget() -> None:
    pool = static_pool(3, budgets=[{"nodes": "2"}], limits={"nodes": "3"})
    result = plan(snapshot(pool, drifted(pool, "d-0", "d-1", "d-2")), AT)
    assert [(c.nodes, c.replacements) for c in result.commands] == [(["d-0"], []), (["d-1"], [])]


def test_v115_a_static_pool_with_headroom_still_replaces_first() -> None:
    pool = static_pool(2, budgets=[{"nodes": "1"}], limits={"nodes": "3"})
    (cmd,) = plan(snapshot(pool, drifted(pool, "d-0", "d-1")), AT).commands
    assert cmd.replacements and cmd.terminate_first is None and cmd.decision == "replace"


def test_v115_terminate_first_waits_while_the_pool_refills() -> None:
    """A terminate-first node being deleted, or its re-creation launching, holds the next drift: the pool is below
    its replicas, and deleting a second node would take it further down."""
    pool = static_pool(2, budgets=[{"nodes": "2"}], limits={"nodes": "2"})
    result = plan(snapshot(pool, drifted(pool, "d-0"), launching_claim("refill")), AT)
    assert result.commands == [] and [b.reason for b in result.blocked] == [STATIC_DRIFT_AT_LIMIT]


def test_v115_a_pool_held_below_replicas_by_its_limit_is_terminate_first_too() -> None:
    pool = static_pool(3, budgets=[{"nodes": "1"}], limits={"nodes": "2"})
    (cmd,) = plan(snapshot(pool, drifted(pool, "d-0", "d-1")), AT).commands
    assert cmd.replacements == [] and cmd.terminate_first is TerminateFirst.AT_NODE_LIMIT


def test_v115_repair_of_a_static_pool_at_its_limit_is_delete_only() -> None:
    """Node repair (kubernetes-sigs/karpenter#3342) is terminate-first by construction: forceful, no replacement
    first (docs/semantics.md §13); the pool at its limit launches nothing until the node is gone."""
    pool = static_pool(2, limits={"nodes": "2"})
    sick = node_and_claim("sick", pool="static", pool_obj=pool)
    sick[0]["status"]["conditions"] = [{"type": "Ready", "status": "False",
                                        "lastTransitionTime": "2020-01-01T00:00:00Z"}]
    result = plan(snapshot(pool, sick, nodes(pool, "ok")), AT)
    assert [r.node for r in result.repairs] == ["sick"] and result.commands == []
    (d,) = result.static_node_pools
    assert (d.pending_disruption, d.launch) == (1, 0)


def test_static_drift_runs_before_drift_and_wins_the_pass() -> None:
    pool = static_pool(1, budgets=[{"nodes": "1"}])
    dynamic = nodepool("dyn", budgets=[{"nodes": "1"}], consolidate_after="Never")
    objs = [pool, dynamic, drifted(pool, "d-0"), node_and_claim("dyn-0", pool="dyn", claim_annotations=STALE),
            pod("web-0", "dyn-0")]
    assert [c.method for c in plan(snapshot(*objs), AT).commands] == ["StaticDrift"]


def test_plan_json_reports_static_pools_in_their_own_field() -> None:
    pool = static_pool(3, budgets=[{"nodes": "1"}])
    result = plan(snapshot(pool, drifted(pool, "d-0", "d-1")), AT)
    public = result.to_public()
    assert public["commands"] == [] and "staticNodePools" not in public  # the CLI adds it (contracts §3.1)
    (entry,) = result.static_public()
    assert entry["nodePool"] == "static" and entry["replicas"] == 3 and entry["launch"] == 1
    assert entry["nodes"] == {"running": 2, "launching": 0, "pendingDisruption": 0, "deleting": 0}
    assert entry["instanceTypes"] and entry["capacityType"] == "on-demand"
    assert [d["node"] for d in entry["drift"]] == ["d-0"] and entry["remove"] == [] and entry["held"] is None


def test_the_scale_up_takes_room_under_the_node_limit_before_static_drift() -> None:
    pool = static_pool(3, budgets=[{"nodes": "1"}], limits={"nodes": "3"})
    result = plan(snapshot(pool, nodes(pool, "s-0"), drifted(pool, "d-0")), AT)
    (d,) = result.static_node_pools
    assert d.launch == 1 and result.commands == []  # 2 nodes + 1 launch = the limit: no room for a replacement
    assert [b.reason for b in result.blocked] == [STATIC_DRIFT_AT_LIMIT]


def test_an_expired_static_node_goes_forcefully_and_is_refilled_once_gone() -> None:
    """Expiration treats a static node like any other (no budget, no replacement first); the node is pending
    disruption meanwhile, so the pool launches nothing until it is gone, then one NodeClaim."""
    pool = static_pool(2, budgets=[{"nodes": "0"}], expire_after="1h")
    fresh = nodes(pool, "s-young", created=AT)
    result = plan(snapshot(pool, nodes(pool, "s-old"), fresh), AT)
    assert [(c.method, c.nodes) for c in result.commands] == [("Expiration", ["s-old"])]
    (d,) = result.static_node_pools
    assert (d.running, d.pending_disruption, d.launch, d.remove) == (1, 1, 0, [])
    (after,) = plan(snapshot(pool, fresh), AT).static_node_pools
    assert after.launch == 1
