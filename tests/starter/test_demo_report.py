"""The demo's measurements: cost, node states, leaked instances and stuck finalizers, on hand-built objects."""

from __future__ import annotations

from typing import Any

import pytest

from api import labels as L
from api.catalog import load_default_catalog
from devstack.audit import leaked_instances, stuck_finalizers
from starter.demo_report import (
    METHODS,
    cost_per_hour,
    describe_workflow,
    disruption_phase_shown,
    node_states,
    pending_pods,
    render_live,
    tally_workflows,
)


def _node(name: str, itype: str = "m5.large", capacity: str = "on-demand", zone: str = "us-east-1a",
          ready: bool = True, taints: list[dict[str, Any]] | None = None, deleting: bool = False,
          provider: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {L.INSTANCE_TYPE_LABEL: itype, L.CAPACITY_TYPE_LABEL: capacity,
                                                      L.ZONE_LABEL: zone}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "spec": {"taints": taints or [], "providerID": provider},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def _claim(name: str, provider: str | None = None, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"providerID": provider} if provider else {}}


def _instance(iid: str, state: str = "running", claim: str | None = None) -> dict[str, Any]:
    tags = [{"Key": "karpenter.sh/nodeclaim", "Value": claim}] if claim else []
    return {"InstanceId": iid, "State": {"Name": state}, "Tags": tags}


def test_cost_per_hour_uses_zone_and_capacity_type_prices() -> None:
    catalog = load_default_catalog()
    m5 = catalog.get("m5.large")
    assert m5 is not None
    od = m5.offering("us-east-1a", "on-demand")
    spot = m5.offering("us-east-1a", "spot")
    assert od is not None and spot is not None
    nodes = [_node("a"), _node("b", capacity="spot")]
    assert cost_per_hour(nodes, catalog) == pytest.approx(od.price + spot.price)


def test_cost_per_hour_ignores_unknown_types_and_counts_nothing_for_no_nodes() -> None:
    catalog = load_default_catalog()
    assert cost_per_hour([], catalog) == 0.0
    assert cost_per_hour([_node("x", itype="no-such.type")], catalog) == 0.0


def test_node_states_deleting_wins_over_disrupting_and_ready() -> None:
    taint = [{"key": L.DISRUPTED_TAINT_KEY, "effect": "NoSchedule"}]
    nodes = [_node("ready"), _node("ready2"), _node("nr", ready=False), _node("dis", taints=taint),
             _node("del", taints=taint, deleting=True),
             _node("other-taint", taints=[{"key": "x", "effect": "NoSchedule"}])]
    states = node_states(nodes)
    assert states == {"Ready": 3, "NotReady": 1, "Disrupting": 1, "Deleting": 1}


def test_leaked_instances_are_live_instances_no_node_or_claim_accounts_for() -> None:
    nodes = [_node("n1", provider="aws:///us-east-1a/i-0000000000000000a")]
    claims = [_claim("c2", provider="aws:///us-east-1b/i-0000000000000000b"), _claim("c3")]
    instances = [
        _instance("i-0000000000000000a"),  # has a Node
        _instance("i-0000000000000000b"),  # has a NodeClaim
        _instance("i-0000000000000000c", claim="c3"),  # launched for a claim that has no providerID yet
        _instance("i-0000000000000000d", state="terminated"),  # gone: costs nothing
        _instance("i-0000000000000000e", state="pending"),  # nobody owns it
        _instance("i-0000000000000000f", claim="gone-claim"),  # its claim was deleted
    ]
    assert leaked_instances(instances, nodes, claims) == ["i-0000000000000000e", "i-0000000000000000f"]


def test_stuck_finalizers_lists_deleting_nodes_and_claims() -> None:
    nodes = [_node("ok"), _node("stuck", deleting=True)]
    claims = [_claim("fine"), _claim("stuck-claim", deleting=True)]
    assert stuck_finalizers(nodes, claims) == ["node/stuck", "nodeclaim/stuck-claim"]
    assert stuck_finalizers([_node("ok")], [_claim("fine")]) == []


def test_render_live_shows_states_workflows_cost_and_ui() -> None:
    from collections import Counter

    text = render_live(42.0, Counter({"Ready": 28, "Deleting": 2}), Counter({"TerminationWorkflow": 2}),
                       5.5, 6.25, "http://127.0.0.1:8233")
    assert "Ready 28" in text and "Deleting 2" in text and "Disrupting 0" in text
    assert "Termination 2" in text
    assert "$5.500" in text and "$6.250" in text
    assert "http://127.0.0.1:8233" in text
    assert "saving $0.750/h" in text
    quiet = render_live(1.0, Counter(), Counter(), 0.0, 0.0, None)
    assert "in flight: none" in quiet and "saving" not in quiet and "latest" not in quiet


def test_render_live_lists_latest_workflows_and_the_note() -> None:
    from collections import Counter

    text = render_live(3.0, Counter({"Ready": 1}), Counter(), 1.0, 1.0, None, note="spot interruption sent",
                       recent=["Drift general-09: Terminating", "terminate batch-24 (Expired): Completed"])
    lines = text.splitlines()
    assert lines[3].endswith("latest:    Drift general-09: Terminating")
    assert lines[4].strip() == "terminate batch-24 (Expired): Completed"
    assert lines[-1].strip() == "spot interruption sent"


def test_describe_workflow_lines() -> None:
    assert describe_workflow("TerminationWorkflow", "batch-24", "Expired", "Draining") == \
        "terminate batch-24 (Expired): Draining"
    assert describe_workflow("DisruptionWorkflow", "ci-13", "Empty", "Succeeded", "Emptiness ci-13, ci-14") == \
        "Emptiness ci-13, ci-14: Succeeded"
    assert describe_workflow("DisruptionWorkflow", "ci-13", "Empty", "") == "disrupt ci-13 (Empty)"
    assert describe_workflow("SpotPrespinWorkflow", "spot-27", "", "Completed", "pre-spin for spot-27") == \
        "pre-spin for spot-27: Completed"
    assert describe_workflow("DisruptionWorkflow", "n", "", "Launching", "x" * 300) == "x" * 300 + ": Launching"
    assert describe_workflow("ProvisioningWorkflow", "", "Provisioning", "WaitingReady",
                             "provision 4 pending pod(s)", pool="spot") == \
        "provision 4 pending pod(s) in spot: WaitingReady"
    assert describe_workflow("ProvisioningWorkflow", "", "Provisioning", "Planning") == \
        "provision pending pods: Planning"  # before its first launch names a pool


def test_pending_pods_are_unbound_active_pods() -> None:
    def pod(name: str, node: str | None = None, phase: str = "Pending", deleting: bool = False) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, "namespace": "apps"}
        if deleting:
            meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        return {"metadata": meta, "spec": {"nodeName": node} if node else {}, "status": {"phase": phase}}

    pods = [pod("waiting"), pod("bound", node="n1", phase="Running"), pod("assigned", node="n1"),
            pod("going", deleting=True), pod("done", phase="Succeeded"), pod("failed", phase="Failed")]
    assert pending_pods(pods) == ["apps/waiting"]


def test_tally_counts_started_commands_by_method_with_their_outcomes() -> None:
    disruptions = [("Drift general-09", "Succeeded"), ("Drift general-10", "Succeeded"),
                   ("MultiNodeConsolidation general-02, memory-22", "Invalid"),
                   ("Emptiness ci-13, ci-14, ci-15", "Succeeded"), ("SingleNodeConsolidation general-05", "")]
    terminations = [("Expired", "COMPLETED"), ("Expired", "RUNNING"), ("SpotInterrupted", "COMPLETED"),
                    ("Drifted", "COMPLETED"), ("Empty", "COMPLETED"), ("Empty", "FAILED"), ("", "COMPLETED")]
    t = tally_workflows(disruptions, terminations)
    assert t.commands_by_method == {"Drift": 2, "MultiNodeConsolidation": 1, "Emptiness": 1,
                                    "SingleNodeConsolidation": 1, "Expiration": 2, "Interruption": 1}
    assert t.outcomes_by_method["MultiNodeConsolidation"] == {"Invalid": 1}
    assert t.outcomes_by_method["SingleNodeConsolidation"] == {"Running": 1}
    assert t.terminated_by_reason == {"Expired": 1, "SpotInterrupted": 1, "Drifted": 1, "Empty": 1, "unknown": 1}
    assert t.nodes_terminated == 5
    assert set(t.commands_by_method) <= set(METHODS)


def test_tally_of_nothing_is_empty() -> None:
    t = tally_workflows([], [])
    assert not t.commands_by_method and not t.outcomes_by_method and t.nodes_terminated == 0


def test_a_disruption_whose_terminations_were_cancelled_shows_cancelled() -> None:
    """`nodeflow cancel NODE` cancels the node's termination: the disruption that handed it over ends Succeeded."""
    assert disruption_phase_shown("Succeeded", ["Cancelled", "Cancelled"]) == "Cancelled"
    assert disruption_phase_shown("Succeeded", ["Terminated", "Cancelled"]) == \
        "Succeeded (1 of 2 terminations cancelled)"
    assert disruption_phase_shown("Succeeded", ["Terminated"]) == "Succeeded"
    assert disruption_phase_shown("Succeeded", []) == "Succeeded"
    assert disruption_phase_shown("RolledBack", ["Cancelled"]) == "RolledBack"
