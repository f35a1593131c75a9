"""Karpenter v1.15's split of the disruption `decision` dimension (kubernetes-sigs/karpenter#3322): the command
metrics (decisions_total, decisions_by_nodepool_total, queue_failures_total) take only the command decisions
no-op/replace/delete, the Balanced approval metrics (consolidation_moves_total, consolidation_score) only
approved/rejected; the label name stays `decision`. nodeflow also feeds the approval metrics from the planner's
Balanced scores (docs/semantics.md §5.10, §19.1)."""

from __future__ import annotations

import pytest

from activities.planning_runner import karpenter_approvals, karpenter_decision
from planning.disruption.commands import ScoredMove
from telemetry import karpenter_metrics as km
from telemetry.metrics import REGISTRY


def _value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_the_two_value_sets_are_disjoint() -> None:
    assert {d.value for d in km.CommandDecision} == {"no-op", "replace", "delete"}
    assert {d.value for d in km.ApprovalDecision} == {"approved", "rejected"}


def test_a_command_metric_refuses_an_approval_value() -> None:
    before = _value("karpenter_voluntary_disruption_decisions_total", decision="replace", reason="drifted",
                    consolidation_type="")
    karpenter_decision("Drift", "Drifted", "replace", "p")
    assert _value("karpenter_voluntary_disruption_decisions_total", decision="replace", reason="drifted",
                  consolidation_type="") == before + 1
    with pytest.raises(ValueError):
        karpenter_decision("Drift", "Drifted", "approved", "p")


def test_scored_moves_feed_the_approval_metrics() -> None:
    class Result:
        scored_moves = [ScoredMove(node_pool="bal", policy="Balanced", score=0.32, approved=False),
                        ScoredMove(node_pool="bal", policy="Balanced", score=1.17, approved=True)]

    rejected = {"decision": "rejected", "nodepool": "bal", "policy": "Balanced"}
    approved = dict(rejected, decision="approved")
    before = (_value("karpenter_consolidation_moves_total", **rejected),
              _value("karpenter_consolidation_moves_total", **approved))
    karpenter_approvals(Result())
    assert (_value("karpenter_consolidation_moves_total", **rejected),
            _value("karpenter_consolidation_moves_total", **approved)) == (before[0] + 1, before[1] + 1)
    assert _value("karpenter_consolidation_score_bucket", le="0.33", **rejected) >= 1
    assert _value("karpenter_consolidation_score_bucket", le="1.0", **approved) == 0
    assert _value("karpenter_consolidation_score_bucket", le="2.0", **approved) >= 1


def test_an_infinite_score_lands_in_the_top_bucket() -> None:
    class Result:
        scored_moves = [ScoredMove(node_pool="inf", policy="Balanced", score=float("inf"), approved=True)]

    karpenter_approvals(Result())
    labels = {"decision": "approved", "nodepool": "inf", "policy": "Balanced"}
    assert _value("karpenter_consolidation_score_bucket", le="+Inf", **labels) == 1
    assert _value("karpenter_consolidation_score_bucket", le="10.0", **labels) == 0
