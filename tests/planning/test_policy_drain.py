"""drain.jobs Wait (docs/semantics.md §15.8): which pods run to completion, how long they are left alone, how the
policy reaches a termination, and what `nodeflow status` says while the drain waits."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from activities.candidates import termination_input
from api.disruption_policy import load_disruption_policy
from contracts.disruption import NodeRef
from contracts.policy_controls import DrainSpec, controls_of, drain_of
from contracts.termination import WAITING_FOR_COMPLETION, PodState, completion_summary
from planning.lifecycle.drain import completion_held, completion_hold_until, pod_start, runs_to_completion

T0 = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)


def _pod(kind: str | None = None, api: str = "batch/v1", annotations: dict[str, str] | None = None,
         start: str | None = "2026-11-27T08:46:00Z") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "default", "annotations": annotations or {},
                            "creationTimestamp": "2026-11-27T08:40:00Z"}
    if kind:
        meta["ownerReferences"] = [{"apiVersion": api, "kind": kind, "name": "o", "controller": True}]
    status: dict[str, Any] = {"phase": "Running"}
    if start:
        status["startTime"] = start
    return {"metadata": meta, "spec": {}, "status": status}


def _policy(drain: dict[str, Any] | None, **spec: Any) -> Any:
    return load_disruption_policy({"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy",
                                   "metadata": {"name": "batch"},
                                   "spec": {"nodePools": ["default"], **({"drain": drain} if drain else {}), **spec}})


# ---- which pods ---------------------------------------------------------------------------------------------

def test_a_jobs_pod_runs_to_completion():
    assert runs_to_completion(_pod("Job"))
    assert runs_to_completion(_pod("Job", api="batch/v1beta1"))  # a CronJob's pods are owned by its Job


def test_other_controllers_pods_do_not():
    assert not runs_to_completion(_pod("ReplicaSet", api="apps/v1"))
    assert not runs_to_completion(_pod("StatefulSet", api="apps/v1"))
    assert not runs_to_completion(_pod(None))
    assert not runs_to_completion(_pod("Job", api="example.com/v1"))  # someone else's kind named Job


def test_the_annotation_makes_any_pod_run_to_completion():
    assert runs_to_completion(_pod(None, annotations={"nodeflow.dev/wait-for-completion": "true"}))
    assert runs_to_completion(_pod("ReplicaSet", api="apps/v1",
                                   annotations={"nodeflow.dev/wait-for-completion": "true"}))
    assert not runs_to_completion(_pod(None, annotations={"nodeflow.dev/wait-for-completion": "false"}))


def test_held_only_while_the_workflow_says_so():
    assert completion_held(_pod("Job"), waiting=True)
    assert not completion_held(_pod("Job"), waiting=False)
    assert not completion_held(_pod("ReplicaSet", api="apps/v1"), waiting=True)


def test_pod_start_prefers_status_start_time():
    assert pod_start(_pod("Job")) == datetime(2026, 11, 27, 8, 46, tzinfo=UTC)
    assert pod_start(_pod("Job", start=None)) == datetime(2026, 11, 27, 8, 40, tzinfo=UTC)
    assert pod_start({"metadata": {}, "status": {"startTime": "garbage"}}) is None


# ---- how long -----------------------------------------------------------------------------------------------

def test_hold_ends_at_max_wait_or_the_deadline_whichever_is_first():
    assert completion_hold_until(T0, timedelta(hours=2), T0 + timedelta(hours=3)) == T0 + timedelta(hours=2)
    assert completion_hold_until(T0, timedelta(hours=2), T0 + timedelta(hours=1)) == T0 + timedelta(hours=1)
    assert completion_hold_until(T0, timedelta(hours=2), None) == T0 + timedelta(hours=2)
    assert completion_hold_until(T0, None, T0 + timedelta(minutes=30)) == T0 + timedelta(minutes=30)
    assert completion_hold_until(T0, None, None) is None  # unbounded: like do-not-disrupt pods


# ---- the policy to the termination -------------------------------------------------------------------------

def test_drain_of_wait_carries_max_wait_in_seconds():
    assert drain_of(_policy({"jobs": "Wait", "maxWait": "2h"})) == DrainSpec(max_wait_seconds=7200.0,
                                                                             policy="batch")
    assert drain_of(_policy({"jobs": "Wait"})) == DrainSpec(max_wait_seconds=None, policy="batch")


def test_evict_or_no_drain_carries_nothing():
    assert drain_of(_policy({"jobs": "Evict", "maxWait": "2h"})) is None
    assert drain_of(_policy(None)) is None
    assert controls_of(_policy(None)) is None  # unchanged input for pools without any workflow control


def test_controls_of_a_drain_only_policy():
    controls = controls_of(_policy({"jobs": "Wait", "maxWait": "30m"}))
    assert controls is not None and controls.drain == DrainSpec(max_wait_seconds=1800.0, policy="batch")
    assert controls.pre_disruption is None and controls.escalation is None


def test_an_old_payload_without_drain_still_decodes():
    from contracts.policy_controls import PolicyControls

    assert PolicyControls.model_validate({"policy": "p", "notify_url": "http://x"}).drain is None


def test_termination_input_gets_a_completion_wait():
    node = NodeRef(name="n1", uid="u1", node_claim="c1", node_pool="default")
    inp = termination_input(node, "Drifted", "disrupt-x", None, DrainSpec(max_wait_seconds=7200.0, policy="batch"))
    assert inp.completion_wait is not None and inp.completion_wait.max_wait == timedelta(hours=2)
    assert inp.completion_wait.policy == "batch"
    assert termination_input(node, "Drifted", "disrupt-x").completion_wait is None


# ---- what status says ---------------------------------------------------------------------------------------

def _state(name: str, status: str, started: datetime | None) -> PodState:
    return PodState(namespace="batch", name=name, status=status, started_at=started, runs_to_completion=True)


def test_completion_summary_counts_and_finds_the_longest_running():
    pods = [_state("a", WAITING_FOR_COMPLETION, T0 - timedelta(minutes=14)),
            _state("b", WAITING_FOR_COMPLETION, T0 - timedelta(minutes=3)),
            _state("c", "Evicting", T0 - timedelta(hours=5))]
    assert completion_summary(pods, T0) == "waiting for 2 Job pods, longest running 14m"
    until = T0 + timedelta(hours=1)
    assert completion_summary(pods[:1], T0, until) == \
        "waiting for 1 Job pod, longest running 14m, until 2026-11-27T10:00:00Z"


def test_completion_summary_is_none_when_nothing_waits():
    assert completion_summary([_state("c", "Evicting", T0)], T0) is None
    assert completion_summary([_state("a", WAITING_FOR_COMPLETION, None)], T0) == "waiting for 1 Job pod"


# ---- Event and metric ---------------------------------------------------------------------------------------

def test_the_awaiting_job_completion_event_names_the_pods_and_the_end():
    from api.events import REASONS, EventReason, awaiting_job_completion

    assert awaiting_job_completion(["batch/b", "batch/a"], T0) == \
        "Leaving 2 Job pod(s) to finish before draining, until 2026-11-27T09:00:00Z (batch/a, batch/b)"
    assert awaiting_job_completion(["batch/a"], None).endswith("until they finish (batch/a)")
    spec = REASONS[EventReason.AWAITING_JOB_COMPLETION]
    assert spec.type == "Normal" and not spec.by_message  # one per node per window, like the FailedDraining it replaces


def test_the_awaiting_completion_gauge_sums_the_nodes():
    from telemetry import metrics

    metrics.set_awaiting_completion("n1", 2)
    metrics.set_awaiting_completion("n2", 1)
    assert metrics.DRAIN_AWAITING_COMPLETION._value.get() == 3
    metrics.set_awaiting_completion("n1", 0)
    assert metrics.DRAIN_AWAITING_COMPLETION._value.get() == 1
    metrics.set_awaiting_completion("n2", 0)
    assert metrics.DRAIN_AWAITING_COMPLETION._value.get() == 0


# ---- nodeflow plan -----------------------------------------------------------------------------------------

def test_plan_says_what_a_pools_drain_leaves_to_finish():
    from planning_factory import AT, node_and_claim, nodepool, pod, snapshot

    from planning.planner.plan import plan

    def rows(drain: dict[str, Any] | None) -> list[dict[str, Any]]:
        policy = {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": "batch"},
                  "spec": {"nodePools": ["default"], **({"drain": drain} if drain else {}),
                           "consolidation": {"minSavingsPerHour": "0"}}}
        result = plan(snapshot(nodepool(), node_and_claim("a"), pod("x-1", "a"), policy), AT)
        return [p.to_public() for p in result.policy_pools]

    assert rows({"jobs": "Wait", "maxWait": "2h"})[0]["drain"] == "Job pods finish before eviction, up to 2h"
    assert rows({"jobs": "Wait"})[0]["drain"] == "Job pods finish before eviction, until the grace-period deadline"
    assert "drain" not in rows({"jobs": "Evict"})[0] and "drain" not in rows(None)[0]
