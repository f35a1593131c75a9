"""The Temporal UI's rows (workflows/summaries.py): what each start's static summary and details say."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from api.fleet import FleetRollout
from contracts import search_attributes as sa
from contracts.disruption import (
    DisruptionCommand,
    DisruptionPhase,
    DisruptionProgress,
    LaunchedReplacement,
    NodeRef,
    Replacement,
    StaticScaleUp,
)
from contracts.interruption import PrespinInput
from contracts.policy_controls import RolloutStart, WavesSpec
from contracts.provisioning import PodRef
from contracts.termination import TerminationInput
from workflows import summaries


def _node(i: int) -> NodeRef:
    return NodeRef(name=f"general-{i:02d}", uid=f"uid-{i}", node_claim=f"general-{i:02d}-claim",
                   provider_id=f"aws:///us-east-1a/i-{i:04d}", node_pool="general")


def test_termination_names_node_reason_and_pool() -> None:
    text = summaries.termination(TerminationInput(node_name="general-01", node_uid="u1", node_pool="general",
                                                  node_claim_name="general-01-claim", reason="Drifted",
                                                  requested_by="disrupt-u1"))
    assert text.summary == "drain general-01 (Drifted, pool general)"
    assert "- **NodeClaim**: `general-01-claim`" in text.details
    assert "- **requested by**: `disrupt-u1`" in text.details
    assert "deadline" not in text.details  # none given: the workflow reads the NodeClaim's terminationGracePeriod


def test_termination_without_pool_and_with_a_deadline() -> None:
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    text = summaries.termination(TerminationInput(node_name="spot-03", node_uid="u3", reason="SpotInterrupted",
                                                  deadline=at, grace_period=timedelta(hours=2)))
    assert text.summary == "drain spot-03 (SpotInterrupted)"
    assert "2026-01-02T03:04:05+00:00" in text.details and "`2h`" in text.details
    assert "NodePool" not in text.details  # unknown facts are left out, not shown as None


def test_disruption_replace_names_decision_reason_pool_and_candidates() -> None:
    types = ["m5.large", "m5a.large", "m6i.large", "c5.xlarge"]
    cmd = DisruptionCommand(method="SingleNodeConsolidation", reason="Underutilized", node_pool="general",
                            nodes=[_node(3)], pods=7, savings_per_hour=0.0481,
                            replacements=[Replacement(instance_types=types, price=0.096, zone="us-east-1a")])
    text = summaries.disruption(cmd)
    assert text.summary == "disrupt general-03 → replace (Underutilized, pool general)"
    assert text.details.startswith("### SingleNodeConsolidation: replace 1 node(s)")
    assert "| `general-03` | `uid-3` | `general-03-claim` | `aws:///us-east-1a/i-0003` |" in text.details
    assert "| m5.large, m5a.large, m6i.large, +1 | on-demand | us-east-1a | $0.0960/h |" in text.details
    assert "- **pods to move**: `7`" in text.details and "$0.0481/h" in text.details


def test_disruption_of_many_nodes_shows_three_names_then_a_count() -> None:
    cmd = DisruptionCommand(method="Emptiness", reason="Empty", node_pool="general", nodes=[_node(i) for i in range(5)])
    text = summaries.disruption(cmd)
    assert text.summary == "disrupt general-00, general-01, general-02, +2 → delete (Empty, pool general)"
    assert "Replacements" not in text.details
    assert text.details.count("\n| `general-0") == 5


def test_pod_batch_counts_pods_and_lists_them() -> None:
    pods = [PodRef(key=f"crawler/crawler-{i}", uid=f"p{i}") for i in range(60)]
    text = summaries.pod_batch(pods)
    assert text.summary == ("provision for 60 pending pods "
                            "(crawler/crawler-0, crawler/crawler-1, crawler/crawler-2, +57)")
    assert "| `crawler/crawler-49` | `p49` |" in text.details and "crawler-50`" not in text.details
    assert text.details.endswith("… and 10 more")
    assert summaries.pod_batch(pods[:1]).summary == "provision for 1 pending pod (crawler/crawler-0)"


def test_static_scale_up_and_prespin() -> None:
    r = Replacement(instance_types=["m5.large"], capacity_type="spot", price=0.03)
    up = summaries.static_scale_up(StaticScaleUp(node_pool="fixed", count=3, replacement=r))
    assert up.summary == "provision 3 nodes (StaticCapacity, pool fixed)"
    assert "| m5.large | spot | any | $0.0300/h |" in up.details
    pre = summaries.prespin(PrespinInput(node_name="spot-03", node_uid="u", node_pool="spot", replacement=r))
    assert pre.summary == "pre-spin a replacement for spot-03 (SpotInterrupted, pool spot)"


def test_schedule_passes_say_how_often_and_how_to_hide_them() -> None:
    text = summaries.planner_pass(timedelta(seconds=10), "nodeflow")
    assert text.summary == "planner pass (every 10s)"
    assert 'WorkflowType NOT IN ("PlannerWorkflow", "NodeClassWorkflow")' in text.details
    assert summaries.nodeclass_pass(timedelta(minutes=1)).summary == "resolve EC2NodeClasses (every 1m)"


def test_a_summary_stays_one_short_line() -> None:
    text = summaries.termination(TerminationInput(node_name="n" * 300 + "\nx", node_uid="u"))
    assert len(text.summary) == summaries.SUMMARY_LIMIT and "\n" not in text.summary
    assert text.summary.endswith("…")
    assert text.kwargs() == {"static_summary": text.summary, "static_details": text.details}


def test_a_local_stacks_one_off_resolution_says_so() -> None:
    assert summaries.nodeclass_now().summary == "resolve EC2NodeClasses now (stack start-up)"


def _pairs(text: summaries.UiText) -> dict[str, str]:
    return {pair.key.name: pair.value for pair in text.attributes}


def test_every_start_carries_node_pool_reason_and_first_phase() -> None:
    """The columns a row shows before the workflow's first task runs (docs/operations.md, Temporal UI)."""
    r = Replacement(instance_types=["m5.large"], capacity_type="spot", price=0.03)
    cmd = DisruptionCommand(method="Emptiness", reason="Empty", node_pool="general", nodes=[_node(4), _node(5)])
    assert _pairs(summaries.disruption(cmd)) == {"NodeflowNode": "general-04", "NodeflowNodePool": "general",
                                                 "NodeflowReason": "Empty", "NodeflowPhase": "Pending"}
    term = summaries.termination(TerminationInput(node_name="spot-03", node_uid="u3", reason="SpotInterrupted"))
    assert _pairs(term) == {"NodeflowNode": "spot-03", "NodeflowReason": "SpotInterrupted",
                            "NodeflowPhase": "Pending"}  # no pool known: unset, not ""
    up = summaries.static_scale_up(StaticScaleUp(node_pool="fixed", count=3, replacement=r))
    assert _pairs(up) == {"NodeflowNodePool": "fixed", "NodeflowReason": "StaticCapacity", "NodeflowPhase": "Planning"}
    pre = summaries.prespin(PrespinInput(node_name="spot-03", node_uid="u", node_pool="spot", replacement=r))
    assert _pairs(pre)["NodeflowNode"] == "spot-03" and _pairs(pre)["NodeflowPhase"] == "Launching"
    assert _pairs(summaries.pod_batch([PodRef(key="a/b", uid="p")])) == {"NodeflowReason": "Provisioning",
                                                                        "NodeflowPhase": "Planning"}
    kwargs = summaries.disruption(cmd).start_kwargs()
    assert kwargs["search_attributes"].get(sa.NODE_POOL) == "general" and kwargs["static_summary"]
    assert "search_attributes" not in summaries.planner_pass(timedelta(seconds=10), "q").start_kwargs()


def test_a_rollouts_disruption_names_its_wave() -> None:
    cmd = DisruptionCommand(method="Drift", reason="Drifted", node_pool="general", nodes=[_node(1)],
                            replacements=[Replacement(instance_types=["m5.large"], price=0.096)])
    text = summaries.disruption(cmd, by="rollout wave 2")
    assert text.summary == "disrupt general-01 → replace (Drifted, pool general), rollout wave 2"


def test_drift_rollout_names_pool_waves_and_reason() -> None:
    start = RolloutStart(node_pool="general", generation="abc", waves=WavesSpec(waves=["10%", 3], bake_seconds=600))
    text = summaries.rollout(start)
    assert text.summary == "drift rollout of NodePool general in waves 10%, 3 (Drifted)"
    assert "- **bake between waves**: `10m`" in text.details
    assert _pairs(text) == {"NodeflowNodePool": "general", "NodeflowReason": "Drifted", "NodeflowPhase": "Starting"}


def test_fleet_rollout_names_its_pools_and_stages() -> None:
    def doc(pools: list[str]) -> FleetRollout:
        return FleetRollout.model_validate({
            "apiVersion": "nodeflow.dev/v1alpha1", "kind": "FleetRollout", "metadata": {"name": "al2023-nov"},
            "spec": {"change": {"nodeClass": {"name": "default", "amiSelectorTerms": [{"alias": "al2023@v1"}]}},
                     "stages": [{"name": "dev", "clusters": [{"name": "dev-1", "nodePools": pools}]},
                                {"name": "prod", "clusters": [{"name": "prod-1", "nodePools": ["general"]}]}]}})
    text = summaries.fleet(doc(["general"]))
    assert text.summary == "fleet rollout al2023-nov (pools general): dev -> prod"
    assert "| prod | prod-1 |" in text.details
    assert _pairs(text) == {"NodeflowNodePool": "general", "NodeflowReason": "FleetRollout", "NodeflowPhase": "Running"}
    assert "NodeflowNodePool" not in _pairs(summaries.fleet(doc(["batch"])))  # two pools: no one value is true


def test_a_disruptions_current_details_say_what_it_waits_for() -> None:
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    launched = [LaunchedReplacement(node_claim=f"general-r{i}", uid=f"r{i}") for i in range(2)]
    p = DisruptionProgress(phase=DisruptionPhase.WAITING_READY, method="Drift", reason="Drifted", node_pool="general",
                           nodes=["general-01", "general-02"], replacements=launched, ready=["general-r0"],
                           ready_deadline=at)
    assert summaries.disruption_now(p) == ("WaitingReady general-01, general-02 (Drifted, pool general) · 1 of 2 "
                                           "replacements Ready, waiting for general-r1 · ready by "
                                           "2026-01-02T03:04:05+00:00")
    done = p.model_copy(update={"phase": DisruptionPhase.ROLLING_BACK, "ready": [], "cancel_requested": True,
                                "error": "launch failed: no capacity"})
    assert summaries.disruption_now(done).endswith("waiting for general-r0, general-r1 · cancel requested · "
                                                   "launch failed: no capacity")
    assert summaries.disruption_now(p.model_copy(update={"replacements": [], "phase": DisruptionPhase.VALIDATING})) \
        == "Validating general-01, general-02 (Drifted, pool general)"


def test_a_disruption_carried_out_as_a_delete_says_so_in_its_details() -> None:
    from api import events

    p = DisruptionProgress(phase=DisruptionPhase.TERMINATING, method="SingleNodeConsolidation", reason="Underutilized",
                           node_pool="general", nodes=["general-01"], note=events.WITHOUT_REPLACEMENT)
    assert summaries.disruption_now(p) == ("Terminating general-01 (Underutilized, pool general) · without the planned "
                                           "replacement: at validation their pods fit on the other nodes")
