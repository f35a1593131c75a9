"""Candidate filters of docs/semantics.md §3, their messages, costs, consolidateAfter and the v1.14 sort."""

from __future__ import annotations

from datetime import timedelta

import pytest
from planning_factory import AT, OLD, node_and_claim, nodepool, pdb, pod, snapshot, ts

from api import labels as L
from planning.cluster import Cluster, parse_pod
from planning.disruption.candidates import (
    DEFAULT_CANCEL_HOLD,
    EVENTUAL,
    GRACEFUL,
    NodeRefusal,
    build_candidates,
    cancel_hold,
    consolidatable,
    do_not_disrupt_active,
    eviction_cost,
    sort_for_consolidation,
)


def _reasons(snap, disruption_class=GRACEFUL, exclude=()):
    cs = build_candidates(Cluster.from_snapshot(snap), AT, set(exclude), disruption_class)
    return {c.name for c in cs.candidates}, {r.node.name: r.message for r in cs.rejected}


def test_plain_node_is_candidate():
    ok, rejected = _reasons(snapshot(nodepool(), node_and_claim("a")))
    assert ok == {"a"} and rejected == {}


def test_node_level_filters_in_order():
    np = nodepool()
    a = node_and_claim("a")
    a[0]["metadata"]["annotations"] = {L.DO_NOT_DISRUPT_ANNOTATION: "true"}
    b = node_and_claim("b")
    b[0]["metadata"]["labels"].pop(L.INITIALIZED_LABEL)
    b[1]["status"]["conditions"] = []
    c = node_and_claim("c")
    c[1]["metadata"]["deletionTimestamp"] = ts(AT)
    d = node_and_claim("d", pool="gone")
    e = node_and_claim("e")[0]  # no NodeClaim
    f = node_and_claim("f")
    f[0]["metadata"]["annotations"] = {L.DO_NOT_DISRUPT_ANNOTATION: "false"}
    ok, rejected = _reasons(snapshot(np, a, b, c, d, e, f, node_and_claim("g")), exclude={"g"})
    assert ok == {"f"}
    assert rejected["a"] == 'disruption is blocked through the "karpenter.sh/do-not-disrupt" annotation'
    assert rejected["b"] == "node isn't initialized"
    assert rejected["c"] == "node is deleting or marked for deletion"
    assert rejected["d"] == "nodepool not found (NodePool=gone)"
    assert rejected["e"] == "node isn't managed by karpenter"
    assert rejected["g"] == "candidate is already being disrupted"


def test_missing_nodepool_label():
    n = node_and_claim("a")
    n[0]["metadata"]["labels"].pop(L.NODEPOOL_LABEL)
    _, rejected = _reasons(snapshot(nodepool(), n))
    assert rejected["a"] == "node doesn't have required label (label=karpenter.sh/nodepool)"


def test_paused_pool_blocks():
    np = nodepool(annotations={L.PAUSED_ANNOTATION: "true"})
    _, rejected = _reasons(snapshot(np, node_and_claim("a")))
    assert "paused" in rejected["a"]


def test_pod_do_not_disrupt_true_blocks_but_terminal_pod_does_not():
    dnd = {L.DO_NOT_DISRUPT_ANNOTATION: "true"}
    ok, rejected = _reasons(snapshot(
        nodepool(), node_and_claim("a"), node_and_claim("b"),
        pod("x-1", "a", annotations=dnd), pod("y-1", "b", annotations=dnd, phase="Succeeded")))
    assert rejected["a"] == 'pod has "karpenter.sh/do-not-disrupt" annotation (Pod=default/x-1)'
    assert ok == {"b"}


@pytest.mark.parametrize(("value", "started", "active"), [
    ("true", OLD, True),
    ("5m", AT - timedelta(minutes=2), True),
    ("5m", AT - timedelta(minutes=5), False),
    ("5m", None, True),
    ("0s", AT, False),
    ("-1m", AT, False),
    ("invalid-format", AT, False),
    ("false", AT, False),
])
def test_do_not_disrupt_duration_form(value, started, active):
    p = parse_pod(pod("x-1", "a", annotations={L.DO_NOT_DISRUPT_ANNOTATION: value}, start=started))
    assert do_not_disrupt_active(p, AT) is active


def test_pdb_with_no_disruptions_allowed_blocks():
    _, rejected = _reasons(snapshot(nodepool(), node_and_claim("a"), pod("web-1", "a", labels={"app": "web"}),
                                    pdb("web", {"app": "web"}, 0)))
    assert rejected["a"] == "pdb default/web prevents pod evictions"


def test_pdb_allowing_disruption_and_other_namespace_do_not_block():
    ok, _ = _reasons(snapshot(nodepool(), node_and_claim("a"), pod("web-1", "a", labels={"app": "web"}),
                              pdb("web", {"app": "web"}, 1), pdb("other", {"app": "web"}, 0, ns="other")))
    assert ok == {"a"}


def test_multiple_pdbs_block():
    _, rejected = _reasons(snapshot(nodepool(), node_and_claim("a"), pod("web-1", "a", labels={"app": "web"}),
                                    pdb("one", {"app": "web"}, 1), pdb("two", {"app": "web"}, 1)))
    assert rejected["a"] == ("eviction does not support multiple PDBs "
                             "(PodDisruptionBudget(s)=[default/one default/two])")


def test_unhealthy_pod_with_always_allow_policy_does_not_block():
    p = pod("web-1", "a", labels={"app": "web"})
    p["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    budget = pdb("web", {"app": "web"}, 0)
    budget["spec"]["unhealthyPodEvictionPolicy"] = "AlwaysAllow"
    ok, _ = _reasons(snapshot(nodepool(), node_and_claim("a"), p, budget))
    assert ok == {"a"}


def test_pod_tolerating_disrupted_taint_is_not_evicted_so_pdb_ignores_it():
    p = pod("web-1", "a", labels={"app": "web"}, tolerations=[{"key": L.DISRUPTED_TAINT_KEY, "operator": "Exists"}])
    ok, _ = _reasons(snapshot(nodepool(), node_and_claim("a"), p, pdb("web", {"app": "web"}, 0)))
    assert ok == {"a"}


def test_eventual_class_with_termination_grace_period_ignores_pod_blocks():
    snap = snapshot(nodepool(), node_and_claim("a", tgp="1h"), node_and_claim("b"),
                    pod("web-1", "a", labels={"app": "web"}), pod("web-2", "b", labels={"app": "web"}),
                    pdb("web", {"app": "web"}, 0))
    assert _reasons(snap, EVENTUAL)[0] == {"a"}
    assert _reasons(snap, GRACEFUL)[0] == set()


@pytest.mark.parametrize(("annotations", "priority", "cost"), [
    ({}, None, 1.0),
    ({L.POD_DELETION_COST_ANNOTATION: str(2**27)}, None, 2.0),
    ({}, 2**25, 2.0),
    ({}, 10**9, 10.0),
    ({L.POD_DELETION_COST_ANNOTATION: "nonsense"}, None, 1.0),
    ({L.POD_DELETION_COST_ANNOTATION: str(-(2**31))}, None, -10.0),
])
def test_eviction_cost(annotations, priority, cost):
    assert eviction_cost(parse_pod(pod("x-1", "a", annotations=annotations, priority=priority))) == cost


def test_sort_highest_savings_ratio_first_expiry_no_longer_counts():
    """v1.14 (kubernetes-sigs/karpenter#2962): price / (1 + positive eviction costs), descending; ties by name.
    v1.9.1 put "old" first."""
    np = nodepool(expire_after="100h")
    snap = snapshot(np, node_and_claim("busy", created=AT - timedelta(hours=10)),
                    node_and_claim("light", created=AT - timedelta(hours=10)),
                    node_and_claim("old", created=AT - timedelta(hours=90)),
                    pod("a-1", "busy"), pod("a-2", "busy"), pod("a-3", "busy"), pod("b-1", "light"),
                    pod("c-1", "old"), pod("c-2", "old"), pod("c-3", "old"))
    cands = build_candidates(Cluster.from_snapshot(snap), AT, set(), GRACEFUL).candidates
    assert [c.name for c in sort_for_consolidation(cands)] == ["light", "busy", "old"]


def _one(snap):
    return build_candidates(Cluster.from_snapshot(snap), AT, set(), GRACEFUL).candidates[0]


def test_consolidate_after_from_last_pod_event_time():
    np = nodepool(consolidate_after="10m")
    assert not consolidatable(_one(snapshot(np, node_and_claim("a", last_pod_event=AT - timedelta(minutes=9)))), AT)
    assert consolidatable(_one(snapshot(np, node_and_claim("a", last_pod_event=AT - timedelta(minutes=10)))), AT)


def test_consolidate_after_from_initialized_transition_and_never():
    recent = [{"type": "Initialized", "status": "True", "lastTransitionTime": ts(AT - timedelta(minutes=1))}]
    assert not consolidatable(_one(snapshot(nodepool(consolidate_after="10m"),
                                            node_and_claim("a", conditions=recent))), AT)
    assert consolidatable(_one(snapshot(nodepool(consolidate_after="30s"), node_and_claim("a", conditions=recent))), AT)
    assert not consolidatable(_one(snapshot(nodepool(consolidate_after="Never"), node_and_claim("a"))), AT)


def test_pdb_without_status_is_computed_from_its_pods():
    def budget(spec):
        b = pdb("web", {"app": "web"}, 0)
        b.pop("status")
        b["spec"] = {"selector": {"matchLabels": {"app": "web"}}, **spec}
        return b

    objs = [nodepool(), node_and_claim("a"), node_and_claim("b"), pod("web-1", "a", labels={"app": "web"}),
            pod("web-2", "b", labels={"app": "web"})]
    assert _reasons(snapshot(*objs, budget({"maxUnavailable": 1})))[0] == {"a", "b"}
    assert _reasons(snapshot(*objs, budget({"minAvailable": 1})))[0] == {"a", "b"}
    assert _reasons(snapshot(*objs, budget({"minAvailable": "100%"})))[0] == set()
    assert _reasons(snapshot(*objs, budget({"maxUnavailable": "0%"})))[0] == set()


def _held(name: str, cancelled=None, until=None):
    n = node_and_claim(name)
    ann = {}
    if cancelled is not None:
        ann[L.DISRUPTION_CANCELLED_AT_ANNOTATION] = ts(cancelled)
    if until is not None:
        ann[L.DISRUPTION_HELD_UNTIL_ANNOTATION] = until if isinstance(until, str) else ts(until)
    n[0]["metadata"]["annotations"] = ann
    return n


def test_cancel_hold_is_a_typed_blocking_refusal_until_held_until():
    cancelled, until = AT - timedelta(minutes=5), AT + timedelta(minutes=10)
    snap = snapshot(nodepool(), _held("held", cancelled, until), _held("over", AT - timedelta(hours=1),
                                                                       AT - timedelta(seconds=1)))
    for disruption_class in (GRACEFUL, EVENTUAL):
        cs = build_candidates(Cluster.from_snapshot(snap), AT, set(), disruption_class)
        assert {c.name for c in cs.candidates} == {"over"}
        (r,) = cs.rejected
        assert r.node.name == "held" and r.blocking and r.refusal is NodeRefusal.CANCEL_HOLD
        assert r.message == (f"disruption cancelled by operator at {ts(cancelled)}, held until {ts(until)} "
                             "(nodeflow resume held)")
    assert cancel_hold(Cluster.from_snapshot(snap).by_name["held"], until) is None  # ends at held-until


@pytest.mark.parametrize("cancelled_ago, held", [(timedelta(minutes=29), True), (timedelta(minutes=31), False)])
def test_cancel_hold_without_held_until_lasts_the_default(cancelled_ago, held):
    snap = snapshot(nodepool(), _held("a", cancelled=AT - cancelled_ago, until="not a time"))
    ok, rejected = _reasons(snap)
    assert (ok == set()) is held and timedelta(minutes=30) == DEFAULT_CANCEL_HOLD
    if held:
        assert rejected["a"].startswith("disruption cancelled by operator at ")


def test_other_refusals_are_untyped_and_come_first():
    n = _held("a", AT, AT + timedelta(minutes=30))
    n[0]["metadata"]["annotations"][L.DO_NOT_DISRUPT_ANNOTATION] = "true"
    cs = build_candidates(Cluster.from_snapshot(snapshot(nodepool(), n)), AT, set(), GRACEFUL)
    assert cs.rejected[0].refusal is None and "do-not-disrupt" in cs.rejected[0].message
