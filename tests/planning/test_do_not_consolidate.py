"""nodeflow.dev/do-not-consolidate and nodeflow.dev/disruption-cost (docs/semantics.md §15.9): the first blocks only
consolidation of its node, the second weighs a pod in a policy's per-pod disruption cost."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from planning_factory import AT, OLD, node_and_claim, nodepool, pod, snapshot, ts

from api import labels as L
from api.events import EventReason
from api.policy_controls import DISRUPTION_COST_ANNOTATION, DO_NOT_CONSOLIDATE_ANNOTATION
from api.snapshot import Snapshot
from planning.cluster import Cluster
from planning.planner.plan import plan
from planning.policies.pod_annotations import MAX_WEIGHT, consolidation_block, disruption_units, disruption_weight

REQ = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
       {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]}]
M5 = [*REQ, {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"]}]
PINNED = {DO_NOT_CONSOLIDATE_ANNOTATION: "true"}


def policy(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": "p"},
            "spec": {"nodePools": ["default"], **spec}}


def _single_node_move(annotations: dict[str, str] | None = None) -> list[Any]:
    """Node `a` (m5.large, one small pod) is consolidated away into `b` when nothing holds it."""
    return [nodepool(requirements=M5), node_and_claim("a", "m5.large"), node_and_claim("b", "m5.2xlarge"),
            pod("x-1", "a", "1500m", "1Gi", annotations=annotations), pod("y-1", "b", "6", "20Gi")]


def _pods(*objs: Any) -> list[Any]:
    return Cluster.from_snapshot(Snapshot.from_objects(list(objs))).nodes[0].pods


# ---- do-not-consolidate --------------------------------------------------------------------------------------

def test_the_move_exists_without_the_annotation():
    (cmd,) = plan(snapshot(*_single_node_move()), AT).commands
    assert cmd.method == "SingleNodeConsolidation" and cmd.nodes == ["a"]


def test_do_not_consolidate_blocks_consolidation_with_a_reason_and_an_unconsolidatable_event():
    result = plan(snapshot(*_single_node_move(PINNED)), AT)
    assert result.commands == []
    (blocked,) = [b for b in result.blocked if b.node == "a"]
    assert blocked.reason == f'pod has "{DO_NOT_CONSOLIDATE_ANNOTATION}" annotation (Pod=default/x-1)'
    assert blocked.event_reason == EventReason.UNCONSOLIDATABLE
    events = {(e.kind, e.name, e.reason) for e in result.events}
    assert ("Node", "a", EventReason.UNCONSOLIDATABLE) in events
    assert ("NodeClaim", "a", EventReason.UNCONSOLIDATABLE) in events


def test_do_not_consolidate_blocks_emptiness_too():
    """A DaemonSet pod does not make a node non-empty, but its do-not-consolidate still holds the node."""
    objs = [nodepool(), node_and_claim("a"), pod("ds-1", "a", owner="DaemonSet", annotations=PINNED)]
    assert [c.method for c in plan(snapshot(*objs[:2]), AT).commands] == ["Emptiness"]
    result = plan(snapshot(*objs), AT)
    assert result.commands == [] and [b.node for b in result.blocked] == ["a"]


def test_a_drifted_node_with_do_not_consolidate_is_still_drifted():
    cond = [{"type": "Initialized", "status": "True", "lastTransitionTime": ts(OLD)},
            {"type": "Drifted", "status": "True", "lastTransitionTime": ts(OLD)}]
    objs = [nodepool(consolidate_after="Never", requirements=REQ), *node_and_claim("a", conditions=cond),
            pod("x-1", "a", annotations=PINNED)]
    (cmd,) = plan(snapshot(*objs), AT).commands
    assert (cmd.method, cmd.nodes) == ("Drift", ["a"])


def test_a_drift_block_of_the_same_node_wins_over_do_not_consolidate():
    """Reported after the methods ran: a drifted node held by its budget says so, not "do-not-consolidate"."""
    cond = [{"type": "Initialized", "status": "True", "lastTransitionTime": ts(OLD)},
            {"type": "Drifted", "status": "True", "lastTransitionTime": ts(OLD)}]
    objs = [nodepool(consolidate_after="Never", requirements=REQ, budgets=[{"nodes": "0", "reasons": ["Drifted"]}]),
            *node_and_claim("a", conditions=cond), pod("x-1", "a", annotations=PINNED)]
    result = plan(snapshot(*objs), AT)
    assert result.commands == []
    (blocked,) = result.blocked
    assert "Drifted" in blocked.reason and DO_NOT_CONSOLIDATE_ANNOTATION not in blocked.reason


def test_an_expired_node_with_do_not_consolidate_still_expires():
    np = nodepool(consolidate_after="Never", requirements=REQ, expire_after="720h")
    objs = [np, *node_and_claim("a", created=AT.replace(year=AT.year - 1)), node_and_claim("b"),
            pod("x-1", "a", annotations=PINNED)]
    assert [(c.method, c.nodes) for c in plan(snapshot(*objs), AT).commands] == [("Expiration", ["a"])]


def test_only_true_on_an_active_pod_counts():
    node = node_and_claim("a")
    assert consolidation_block(_nodes(node, pod("x-1", "a", annotations={DO_NOT_CONSOLIDATE_ANNOTATION: "yes"}))) \
        is None
    assert consolidation_block(_nodes(node, pod("x-1", "a", annotations=PINNED, phase="Succeeded"))) is None
    assert consolidation_block(_nodes(node, pod("x-2", "a", annotations=PINNED), pod("x-1", "a", annotations=PINNED))) \
        == f'pod has "{DO_NOT_CONSOLIDATE_ANNOTATION}" annotation (Pod=default/x-1)'


def _nodes(*objs: Any) -> Any:
    flat = [o for obj in objs for o in (obj if isinstance(obj, list) else [obj])]
    return Cluster.from_snapshot(Snapshot.from_objects([nodepool(), *flat])).nodes[0]


# ---- disruption-cost -----------------------------------------------------------------------------------------

def test_disruption_weight_parses_a_decimal_and_defaults_to_one():
    def weight(value: str | None) -> Decimal:
        ann = {} if value is None else {DISRUPTION_COST_ANNOTATION: value}
        return disruption_weight(_nodes(node_and_claim("a"), pod("x-1", "a", annotations=ann)).pods[0])

    assert weight(None) == 1 and weight("5") == 5 and weight("0.5") == Decimal("0.5") and weight("0") == 0
    assert weight("-3") == 1 and weight("lots") == 1 and weight("NaN") == 1 and weight("Infinity") == 1
    assert weight("1e9") == MAX_WEIGHT


def test_disruption_units_sum_the_weights():
    node = _nodes(node_and_claim("a"), pod("x-1", "a", annotations={DISRUPTION_COST_ANNOTATION: "5"}),
                  pod("x-2", "a"), pod("x-3", "a", annotations={DISRUPTION_COST_ANNOTATION: "0.5"}))
    assert disruption_units(node.pods) == Decimal("6.5")


def _weighted_move(weight: str | None) -> list[Any]:
    ann = {DISRUPTION_COST_ANNOTATION: weight} if weight is not None else None
    return _single_node_move(ann)


def test_a_heavy_pod_makes_the_move_not_worth_its_evictions():
    (cmd,) = plan(snapshot(*_weighted_move(None)), AT).commands
    saved = Decimal(str(cmd.savings_per_hour))
    per_pod = (saved / 3).quantize(Decimal("0.0001"))  # one pod at weight 1 costs a third of the savings
    rule = policy(consolidation={"perPodDisruptionCost": str(per_pod)})
    assert plan(snapshot(*_weighted_move(None), rule), AT).commands
    assert plan(snapshot(*_weighted_move("2"), rule), AT).commands
    result = plan(snapshot(*_weighted_move("5"), rule), AT)
    assert result.commands == []
    move = result.skipped[0]
    assert move.nodes == ["a"] and move.pods == 1
    assert f"(1 pod(s) weighing 5 x ${per_pod.normalize():f})" in move.reason


def test_a_weight_of_zero_makes_a_pod_free_to_move():
    rule = policy(consolidation={"perPodDisruptionCost": "100"})
    assert plan(snapshot(*_weighted_move(None), rule), AT).commands == []
    (cmd,) = plan(snapshot(*_weighted_move("0"), rule), AT).commands
    assert cmd.nodes == ["a"]


def test_without_a_policy_the_weight_changes_nothing():
    assert plan(snapshot(*_weighted_move("1000")), AT).commands
