"""PlannerWorkflow: one planner pass (the `nodeflow-planner` Schedule starts one every 10 s, overlap SKIP).

Reads the cluster and plans in an activity, then starts one DisruptionWorkflow per command as an abandoned
child (`disrupt-<first node uid>`, so it outlives the pass) and hands expired nodes straight to termination, and
unhealthy ones too under --legacy-node-repair (deadline now; by default a repair is a `Repair` command like any
other, docs/semantics.md §13). Static NodePools below their replicas get a
ProvisioningWorkflow, above them a termination per node removed (docs/semantics.md §14).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

with workflow.unsafe.imports_passed_through():
    from activities.candidates import CandidateActivities
    from activities.planning_runner import MEMO_METHOD, MEMO_NODES, MEMO_PLACEMENTS, PlanningActivities
    from api.labels import REASON_UNHEALTHY
    from contracts import search_attributes as sa
    from contracts.disruption import (
        DisruptionCommand,
        DisruptionInput,
        DisruptionSettings,
        PlannerInput,
        PlannerResult,
        PlanPassInput,
        PlanPassResult,
        TerminationsInput,
    )
    from contracts.policy import RolloutInput
    from contracts.policy_controls import PolicyControls, RolloutStart
    from contracts.provisioning import ProvisioningInput, ProvisioningSettings
    from planning.disruption.method_names import CONSOLIDATION_METHODS, DRIFT_METHODS, MethodName
    from workflows import summaries
    from workflows.disruption import DisruptionWorkflow
    from workflows.provisioning import ProvisioningWorkflow
    from workflows.retries import READ_LIMIT, READ_RETRY
    from workflows.rollout import DriftRolloutWorkflow

REPAIR_PATCH = "node-repair"  # passes recorded before node repair never start repairs
QUEUE_SCOPED_ROLLOUT_PATCH = "queue-scoped-rollout-ids"
ROLLOUT_PATCH = "drift-rollouts"  # passes recorded before DisruptionPolicy drift waves never start rollouts
STATIC_PATCH = "static-capacity"  # passes recorded before static NodePools never scale them
REPLAN_PATCH = "replan-after-command"  # passes recorded before it plan once per run
REPLANNED_METHODS = frozenset({*DRIFT_METHODS, MethodName.EMPTINESS})  # see PlannerWorkflow._replan
CONSOLIDATION_REPLAN_PATCH = "replan-after-consolidation"  # runs recorded before it ended after a consolidation
STATIC_REASON = "Overprovisioned"  # a static NodePool above its replicas (Karpenter: "overprovisioned")
RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=10), maximum_attempts=5)


@workflow.defn
class PlannerWorkflow:
    @workflow.run
    async def run(self, inp: PlannerInput) -> PlannerResult:
        s = inp.settings
        plan = await self._pass(inp, [], "read cluster and plan")
        out = PlannerResult(blocked=len(plan.blocked), paused_node_pools=plan.paused_node_pools,
                            repairs_blocked=plan.repairs_blocked)
        task_queue = workflow.info().task_queue
        started = await self._start_commands(plan.commands, s, out, plan.policies)

        if plan.rollouts and workflow.patched(ROLLOUT_PATCH):
            await _rollouts(plan, s, out)
        if plan.expirations:
            out.terminations = await _terminate(TerminationsInput(nodes=plan.expirations, reason="Expired",
                                                                  task_queue=task_queue,
                                                                  requested_by=workflow.info().workflow_id))
        if plan.repairs and workflow.patched(REPAIR_PATCH):
            out.repairs = await _terminate(TerminationsInput(
                nodes=plan.repairs, reason=REASON_UNHEALTHY, task_queue=task_queue,
                requested_by=workflow.info().workflow_id, deadline=workflow.now()), "repair unhealthy nodes")
        if (plan.static_scale_ups or plan.static_removals) and workflow.patched(STATIC_PATCH):
            await self._static_capacity(plan, s, out)
        if started and workflow.patched(REPLAN_PATCH):
            await self._replan(inp, started, out)
        return out

    async def _start_commands(self, commands: list[DisruptionCommand], s: DisruptionSettings,
                              out: PlannerResult, policies: dict[str, PolicyControls]) -> list[DisruptionCommand]:
        """One DisruptionWorkflow per command, abandoned (it outlives the pass); returns the ones started now."""
        started: list[DisruptionCommand] = []
        for cmd in commands:
            try:
                await workflow.start_child_workflow(
                    DisruptionWorkflow.run, DisruptionInput(command=cmd, settings=s,
                                                            policy=policies.get(cmd.node_pool)),
                    id=cmd.workflow_id, task_queue=workflow.info().task_queue,
                    parent_close_policy=workflow.ParentClosePolicy.ABANDON,
                    memo=_memo(cmd),
                    **ui_start(summaries.disruption(cmd)),
                )
                out.started.append(cmd.workflow_id)
                started.append(cmd)
            except WorkflowAlreadyStartedError:
                out.skipped.append(cmd.workflow_id)
        return started

    async def _replan(self, inp: PlannerInput, started: list[DisruptionCommand], out: PlannerResult) -> None:
        """Plan again at once after a pass that started a command, as Karpenter's disruption loop requeues
        immediately after an action (docs/semantics.md §2), until a pass starts nothing new, up to `replan_limit`
        passes, of which at most `consolidation_replans` follow consolidation commands (the pods of in-flight
        nodes are reserved in every plan, so two commands never count on the same spare room). The nodes of the
        commands started so far are excluded by uid, since Temporal visibility may not list their workflows yet, and
        where their plans put their pods is passed on for the same reason."""
        exclude = {n.uid for c in started for n in c.nodes}
        placements = _merged_placements(started, {})
        consolidations_left = inp.consolidation_replans
        for _ in range(inp.replan_limit):
            if not any(c.method in REPLANNED_METHODS for c in started):
                if consolidations_left <= 0 or not any(c.method in CONSOLIDATION_METHODS for c in started) \
                        or not workflow.patched(CONSOLIDATION_REPLAN_PATCH):
                    return
                consolidations_left -= 1
            plan = await self._pass(inp, sorted(exclude), "plan again after a command", placements)
            if plan.skipped is not None:
                return
            out.blocked = len(plan.blocked)
            started = await self._start_commands(plan.commands, inp.settings, out, plan.policies)
            exclude |= {n.uid for c in started for n in c.nodes}
            placements = _merged_placements(started, placements)
            out.replans += 1

    async def _pass(self, inp: PlannerInput, exclude_uids: list[str], summary: str,
                    placements: dict[str, list[str]] | None = None) -> PlanPassResult:
        return await workflow.execute_activity_method(
            PlanningActivities.plan_pass, PlanPassInput(at=workflow.now(), catalog_path=inp.settings.catalog_path,
                                                        exclude_uids=exclude_uids, placements=placements or {}),
            start_to_close_timeout=timedelta(minutes=5), schedule_to_close_timeout=READ_LIMIT,
            heartbeat_timeout=timedelta(seconds=30), retry_policy=READ_RETRY, summary=summary)

    async def _static_capacity(self, plan: PlanPassResult, s: DisruptionSettings, out: PlannerResult) -> None:
        """Static NodePools (docs/semantics.md §14): below their replicas, one ProvisioningWorkflow per pool (its id is
        the pool's: while one runs, a later pass starts nothing); above, a TerminationWorkflow per node removed."""
        task_queue = workflow.info().task_queue
        for up in plan.static_scale_ups:
            try:
                await workflow.start_child_workflow(
                    ProvisioningWorkflow.run, ProvisioningInput(pods=[], static=up, settings=_provisioning(s)),
                    id=up.workflow_id, task_queue=task_queue, parent_close_policy=workflow.ParentClosePolicy.ABANDON,
                    **ui_start(summaries.static_scale_up(up)))
                out.static_provisioning.append(up.workflow_id)
            except WorkflowAlreadyStartedError:
                out.skipped.append(up.workflow_id)
        if plan.static_removals:
            out.static_terminations = await _terminate(TerminationsInput(
                nodes=plan.static_removals, reason=STATIC_REASON, task_queue=task_queue,
                requested_by=workflow.info().workflow_id), "static NodePool scale-down")


async def _rollouts(plan: PlanPassResult, s: DisruptionSettings, out: PlannerResult) -> None:
    """One DriftRolloutWorkflow per pool and drift generation (docs/semantics.md §15.2): while it runs (or was
    aborted or finished) a later pass starts nothing; only a failed one may start again."""
    for start in plan.rollouts:
        rollout_id = _rollout_workflow_id(start.workflow_id)
        try:
            await workflow.start_child_workflow(
                DriftRolloutWorkflow.run, RolloutInput(start=start, settings=s), id=rollout_id,
                task_queue=workflow.info().task_queue, parent_close_policy=workflow.ParentClosePolicy.ABANDON,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY, **_rollout_text(start))
            out.rollouts.append(rollout_id)
        except WorkflowAlreadyStartedError:
            pass  # running, finished or aborted: this generation's rollout is in hand


def ui_start(text: summaries.UiText) -> dict[str, Any]:
    """A child's start keywords: with its search attributes from the start (a row is filled before the child's
    first task runs); starts recorded before UI_ATTRIBUTES_PATCH keep their summary and details only."""
    return text.start_kwargs() if workflow.patched(summaries.UI_ATTRIBUTES_PATCH) else text.kwargs()


def _rollout_text(start: RolloutStart) -> dict[str, Any]:
    if workflow.patched(summaries.UI_ATTRIBUTES_PATCH):
        return summaries.rollout(start).start_kwargs()
    return {"static_summary": f"drift rollout of NodePool {start.node_pool} in waves {start.waves.waves}"[:200]}


def _rollout_workflow_id(base: str) -> str:
    """`rollout-<pool>-<generation>`, with the task queue in it on any queue but `nodeflow`: clusters of a fleet
    share one namespace and often a pool name and template (docs/fleet.md). The production queue's ids, and so
    every history recorded on it, are unchanged; on another queue the new id is behind a patch."""
    queue = workflow.info().task_queue
    if queue == sa.TASK_QUEUE or not workflow.patched(QUEUE_SCOPED_ROLLOUT_PATCH):
        return base
    return sa.queue_scoped(base, queue)


async def _terminate(inp: TerminationsInput, summary: str | None = None) -> list[str]:
    """Start (or join) the terminations of a pass's forceful removals: expired, repaired, static surplus."""
    return await workflow.execute_activity_method(
        CandidateActivities.start_terminations, inp, start_to_close_timeout=timedelta(seconds=30),
        retry_policy=RETRY, summary=summary)


def _provisioning(s: DisruptionSettings) -> ProvisioningSettings:
    """The launch and readiness timing of the pass's disruptions, for a static scale-up."""
    return ProvisioningSettings(ready_timeout_seconds=s.ready_timeout_seconds, ready_poll_seconds=s.ready_poll_seconds,
                                catalog_path=s.catalog_path)


def _memo(cmd: DisruptionCommand) -> dict[str, Any]:
    """What a pass reads of a running disruption from Temporal visibility: its nodes, its method, and where its
    plan put their pods (reserved there while it runs; planning/scheduling/simulation.py Scheduler)."""
    memo: dict[str, Any] = {MEMO_NODES: [n.name for n in cmd.nodes], MEMO_METHOD: cmd.method}
    if cmd.placements:
        memo[MEMO_PLACEMENTS] = cmd.placements
    return memo


def _merged_placements(started: list[DisruptionCommand], into: dict[str, list[str]]) -> dict[str, list[str]]:
    """`into` plus the placements of the commands just started (a new dict: activity inputs stay as sent)."""
    out = {node: list(pods) for node, pods in into.items()}
    for cmd in started:
        for node, pods in cmd.placements.items():
            out.setdefault(node, []).extend(pods)
    return out
