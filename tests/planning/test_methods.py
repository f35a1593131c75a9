"""The methods, their order in a pass, budgets per reason (docs/semantics.md §1.5), blocked nodes and events."""

from __future__ import annotations

from datetime import timedelta

from planning_factory import AT, OLD, node_and_claim, nodepool, pdb, pod, snapshot, ts

from api import labels as L
from planning.cluster import Cluster
from planning.disruption.drift import drift_reason
from planning.planner.plan import plan

REQ = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
       {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]}]
M5 = [*REQ, {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"]}]


def _methods(result):
    return [(c.method, sorted(c.nodes)) for c in result.commands]


# ---- emptiness ----------------------------------------------------------------------------------------

def test_emptiness_deletes_all_empty_nodes_in_one_command():
    np = nodepool()
    result = plan(snapshot(np, node_and_claim("a"), node_and_claim("b"), node_and_claim("c"),
                           pod("ds-1", "b", owner="DaemonSet"), pod("x-1", "c")), AT)
    assert _methods(result) == [("Emptiness", ["a", "b"])]
    assert result.commands[0].replacements == [] and result.commands[0].pods == []


def test_emptiness_budget_limits_and_blocks_the_rest():
    np = nodepool(budgets=[{"nodes": "1", "reasons": ["Empty"]}])
    result = plan(snapshot(np, node_and_claim("a"), node_and_claim("b"), node_and_claim("c")), AT)
    assert len(result.commands) == 1 and len(result.commands[0].nodes) == 1
    blocked = {b.node: b.reason for b in result.blocked}
    assert len(blocked) == 2 and all("allows no more Empty disruptions" in r for r in blocked.values())


def test_emptiness_waits_for_consolidate_after():
    np = nodepool(consolidate_after="10m")
    result = plan(snapshot(np, node_and_claim("a", last_pod_event=AT - timedelta(minutes=5))), AT)
    assert result.commands == []


def test_budget_zero_emits_nodepool_event():
    np = nodepool(budgets=[{"nodes": "0"}])
    result = plan(snapshot(np, node_and_claim("a")), AT)
    assert result.commands == []
    assert any(e.kind == "NodePool" and e.reason == "DisruptionBlocked" and
               e.message == "No allowed disruptions for disruption reason Empty due to blocking budget"
               for e in result.events)


# ---- drift -------------------------------------------------------------------------------------------

def _drift(pool_obj, claim_annotations=None, conditions=None, labels=None):
    objs = node_and_claim("a", claim_annotations=claim_annotations, conditions=conditions, extra_labels=labels)
    cluster = Cluster.from_snapshot(snapshot(pool_obj, objs))
    return drift_reason(cluster.by_name["a"], cluster.pools["default"])


def test_drift_by_template_hash():
    from api.nodepool import NodePool

    old = NodePool.model_validate(nodepool(labels={"v": "1"})).template_hash()
    assert _drift(nodepool(labels={"v": "2"}), {L.TEMPLATE_HASH_ANNOTATION: old}) == "NodePoolDrifted"
    assert _drift(nodepool(labels={"v": "1"}), {L.TEMPLATE_HASH_ANNOTATION: old}) is None
    # behavioural fields are not hashed: budgets / consolidation changes are not drift
    assert _drift(nodepool(labels={"v": "1"}, budgets=[{"nodes": "0"}], consolidate_after="1h"),
                  {L.TEMPLATE_HASH_ANNOTATION: old}) is None


def test_drift_by_karpenter_hash_needs_matching_versions():
    def pool(h, v):
        return nodepool(annotations={L.NODEPOOL_HASH_ANNOTATION: h, L.NODEPOOL_HASH_VERSION_ANNOTATION: v})

    claim = {L.NODEPOOL_HASH_ANNOTATION: "111", L.NODEPOOL_HASH_VERSION_ANNOTATION: "v3"}
    assert _drift(pool("222", "v3"), claim) == "NodePoolDrifted"
    assert _drift(pool("222", "v2"), claim) is None
    assert _drift(pool("111", "v3"), claim) is None


def test_drift_by_requirements_narrowing_but_not_widening():
    narrowed = nodepool(requirements=[{"key": L.ZONE_LABEL, "operator": "In", "values": ["us-east-1b"]}])
    widened = nodepool(requirements=[{"key": L.ZONE_LABEL, "operator": "In",
                                      "values": ["us-east-1a", "us-east-1b"]}])
    assert _drift(narrowed) == "RequirementsDrifted"
    assert _drift(widened) is None
    new_key = nodepool(requirements=[{"key": "team", "operator": "In", "values": ["x"]}])
    assert _drift(new_key) == "RequirementsDrifted"
    assert _drift(nodepool(requirements=[{"key": "team", "operator": "DoesNotExist"}])) is None


def test_drift_by_condition():
    cond = [{"type": "Initialized", "status": "True", "lastTransitionTime": ts(OLD)},
            {"type": "Drifted", "status": "True", "reason": "AMIDrift", "lastTransitionTime": ts(OLD)}]
    assert _drift(nodepool(), conditions=cond) == "AMIDrift"


def _drifted(name, **kw):
    cond = [{"type": "Initialized", "status": "True", "lastTransitionTime": ts(OLD)},
            {"type": "Drifted", "status": "True", "lastTransitionTime": ts(kw.pop("since", OLD))}]
    return node_and_claim(name, conditions=cond, **kw)


def test_drift_one_node_per_pass_empty_first_then_oldest_with_replacement():
    np = nodepool(consolidate_after="Never", requirements=REQ)
    objs = [_drifted("a", since=AT - timedelta(hours=1)), _drifted("b", since=AT - timedelta(hours=3)),
            node_and_claim("c", "m5.large"), pod("x-1", "a", "3", "12Gi"), pod("y-1", "b", "3", "12Gi"),
            pod("z-1", "c", "1500m", "6Gi")]
    result = plan(snapshot(np, *objs), AT)
    (cmd,) = result.commands
    assert cmd.method == "Drift" and cmd.nodes == ["b"] and len(cmd.replacements) == 1
    assert cmd.pods[0].to == "new-0"
    result = plan(snapshot(np, *objs, _drifted("e")), AT)
    assert result.commands[0].nodes == ["e"] and result.commands[0].replacements == []


def test_drift_respects_budget_and_do_not_disrupt():
    np = nodepool(consolidate_after="Never", budgets=[{"nodes": "0", "reasons": ["Drifted"]}])
    result = plan(snapshot(np, _drifted("a"), pod("x-1", "a")), AT)
    assert result.commands == [] and "Drifted" in result.blocked[0].reason
    np = nodepool(consolidate_after="Never")
    result = plan(snapshot(np, _drifted("a", node_annotations={L.DO_NOT_DISRUPT_ANNOTATION: "true"})), AT)
    assert result.commands == [] and result.blocked[0].node == "a"


def test_drift_with_termination_grace_period_ignores_pdb():
    np = nodepool(consolidate_after="Never", requirements=REQ)
    objs = [_drifted("a", tgp="1h"), node_and_claim("b"), pod("web-1", "a", labels={"app": "web"}),
            pdb("web", {"app": "web"}, 0)]
    (cmd,) = plan(snapshot(np, *objs), AT).commands
    assert cmd.method == "Drift" and cmd.pods[0].to == "b"


# ---- consolidation -----------------------------------------------------------------------------------

def test_multi_node_merges_underutilized_nodes():
    np = nodepool(requirements=REQ)
    objs = [node_and_claim(n, "m5.2xlarge") for n in ("a", "b", "c")]
    pods = [pod(f"x-{n}", n, "1", "2Gi") for n in ("a", "b", "c")]
    result = plan(snapshot(np, *objs, *pods), AT)
    (cmd,) = result.commands
    assert cmd.method == "MultiNodeConsolidation" and sorted(cmd.nodes) == ["a", "b", "c"]
    assert len(cmd.replacements) == 1 and cmd.replacements[0].price < 3 * 0.384
    assert {m.to for m in cmd.pods} == {"new-0"} and len(cmd.pods) == 3


def test_single_node_delete_when_pods_fit_elsewhere():
    np = nodepool(requirements=M5)
    result = plan(snapshot(np, node_and_claim("a", "m5.large"), node_and_claim("b", "m5.2xlarge"),
                           pod("x-1", "a", "1500m", "1Gi"), pod("y-1", "b", "6", "20Gi")), AT)
    (cmd,) = result.commands
    assert cmd.method == "SingleNodeConsolidation" and cmd.nodes == ["a"] and cmd.replacements == []
    assert cmd.pods[0].to == "b"


def test_a_pending_pod_that_fits_no_node_is_left_to_the_provisioner():
    """It takes room on existing nodes, but never opens the replacement: a node launched for it by consolidation
    would duplicate the provisioner's launch (here it also made the delete of "a" a replace, never cheaper)."""
    np = nodepool(requirements=M5)
    objs = [node_and_claim("a", "m5.large"), node_and_claim("b", "m5.2xlarge"),
            pod("x-1", "a", "1500m", "1Gi"), pod("y-1", "b", "6", "20Gi"), pod("pending-1", None, "8", "1Gi")]
    (cmd,) = plan(snapshot(np, *objs), AT).commands
    assert cmd.method == "SingleNodeConsolidation" and cmd.nodes == ["a"] and cmd.replacements == []
    assert [(m.pod, m.to) for m in cmd.pods] == [("default/x-1", "b")]


def test_a_pending_pod_that_fits_keeps_its_room():
    np = nodepool(requirements=M5)
    objs = [node_and_claim("a", "m5.large"), node_and_claim("b", "m5.2xlarge"),
            pod("x-1", "a", "1500m", "1Gi"), pod("y-1", "b", "6", "20Gi"), pod("pending-1", None, "1800m", "1Gi")]
    assert plan(snapshot(np, *objs), AT).commands == []  # b's room is the pending pod's: "a" cannot go


def test_pods_that_fit_nowhere_block_and_are_named():
    np = nodepool(requirements=M5)
    result = plan(snapshot(np, node_and_claim("a", "m5.large"), node_and_claim("b", "m5.large"),
                           pod("x-1", "a", "1", "1Gi", node_selector={"gpu": "yes"}),
                           pod("y-1", "b", "1900m", "1Gi")), AT)
    assert result.commands == []
    blocked = {b.node: b.reason for b in result.blocked}
    assert blocked["a"].startswith("Not all pods would schedule, default/x-1 => ")
    assert any(e.reason == "Unconsolidatable" and e.name == "a" and "default/x-1" in e.message
               for e in result.events)


def test_when_empty_policy_and_consolidation_disabled_emit_unconsolidatable():
    result = plan(snapshot(nodepool(policy="WhenEmpty"), node_and_claim("a"), pod("x-1", "a")), AT)
    assert result.commands == []
    assert any(e.message == 'NodePool "default" has consolidation policy WhenEmpty, but node is not empty'
               for e in result.events)
    result = plan(snapshot(nodepool(consolidate_after="Never"), node_and_claim("a"), pod("x-1", "a")), AT)
    assert any(e.message == 'NodePool "default" has consolidation disabled' for e in result.events)


def test_underutilized_budget_limits_multi_node_to_the_budget():
    np = nodepool(requirements=REQ, budgets=[{"nodes": "2", "reasons": ["Underutilized"]}])
    objs = [node_and_claim(n, "m5.2xlarge") for n in ("a", "b", "c", "d")]
    pods = [pod(f"x-{n}", n, "500m", "1Gi") for n in ("a", "b", "c", "d")]
    (cmd,) = plan(snapshot(np, *objs, *pods), AT).commands
    assert cmd.method == "MultiNodeConsolidation" and len(cmd.nodes) == 2


# ---- order, expiration, in-flight nodes -----------------------------------------------------------

def test_emptiness_wins_the_pass_before_drift():
    np = nodepool(requirements=REQ)
    result = plan(snapshot(np, node_and_claim("a"), _drifted("b"), pod("x-1", "b")), AT)
    assert _methods(result) == [("Emptiness", ["a"])]


def test_expiration_is_forceful_and_evaluated_with_other_methods():
    np = nodepool(expire_after="24h", budgets=[{"nodes": "0"}])
    old = node_and_claim("old", created=AT - timedelta(hours=25),
                         node_annotations={L.DO_NOT_DISRUPT_ANNOTATION: "true"})
    result = plan(snapshot(np, old, node_and_claim("b"), pod("x-1", "old"), pod("y-1", "b")), AT)
    (cmd,) = result.commands
    assert cmd.method == "Expiration" and cmd.reason == "Expired" and cmd.nodes == ["old"]
    assert cmd.replacements == [] and cmd.pods[0].to == "b"


def test_expiration_boundary_and_never():
    np = nodepool(expire_after="24h")
    at_boundary = node_and_claim("a", created=AT - timedelta(hours=24))
    assert _methods(plan(snapshot(np, at_boundary, pod("x-1", "a")), AT)) == [("Expiration", ["a"])]
    np = nodepool(expire_after="Never", consolidate_after="Never")
    assert plan(snapshot(np, node_and_claim("a", created=AT - timedelta(days=900)), pod("x-1", "a")), AT).commands == []


def test_excluded_nodes_are_neither_candidates_nor_destinations_and_use_budget():
    np = nodepool(budgets=[{"nodes": "1"}])
    result = plan(snapshot(np, node_and_claim("a"), node_and_claim("b")), AT, exclude_nodes={"a"})
    assert result.commands == []
    row = next(r for r in result.budgets if r["reason"] == "Empty")
    assert row["allowed"] == 0 and row["disrupting"] == 1
    np = nodepool(requirements=REQ)
    result = plan(snapshot(np, node_and_claim("a", "m5.large"), node_and_claim("b", "m5.2xlarge"),
                           pod("x-1", "a", "1500m", "1Gi"), pod("y-1", "b", "6", "20Gi")), AT, exclude_nodes={"b"})
    assert all("b" not in c.nodes and all(m.to != "b" for m in c.pods) for c in result.commands)


def test_internal_fields_carry_uids_claims_and_provider_ids():
    (cmd,) = plan(snapshot(nodepool(), node_and_claim("a")), AT).commands
    assert cmd.node_uids == ["uid-a"] and cmd.node_claims == ["a"] and cmd.provider_ids == ["aws:///us-east-1a/i-a"]
    public = plan(snapshot(nodepool(), node_and_claim("a")), AT).to_public()
    assert set(public) == {"at", "budgets", "commands", "blocked", "final"}
    assert set(public["commands"][0]) == {"method", "reason", "nodePool", "nodes", "replacements",
                                          "savingsPerHour", "pods"}


def test_blocking_reasons_become_disruption_blocked_events_on_node_and_claim():
    dnd = {L.DO_NOT_DISRUPT_ANNOTATION: "true"}
    result = plan(snapshot(nodepool(), node_and_claim("a"), pod("x-1", "a", annotations=dnd)), AT)
    texts = {(e.kind, e.name, e.reason, e.message) for e in result.events}
    message = 'Pod has "karpenter.sh/do-not-disrupt" annotation (Pod=default/x-1)'
    assert ("Node", "a", "DisruptionBlocked", message) in texts
    assert ("NodeClaim", "a", "DisruptionBlocked", message) in texts
    assert result.blocked[0].node_pool == "default"


def test_search_time_budgets_bound_consolidation():
    from planning.disruption.method import Limits

    np = nodepool(requirements=M5)
    objs = [node_and_claim("a", "m5.large"), node_and_claim("b", "m5.2xlarge"), pod("x-1", "a", "1500m", "1Gi"),
            pod("y-1", "b", "6", "20Gi")]
    assert plan(snapshot(np, *objs), AT).commands
    none = Limits(multi_node_seconds=0, single_node_seconds=0)
    assert plan(snapshot(np, *objs), AT, limits=none).commands == []
