"""PlannerWorkflow on the time-skipping server: one child per command, in-flight ids skipped, expirations."""

from __future__ import annotations

import uuid

from support.disruption_fakes import Fakes, command
from support.disruption_stack import record_history
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from activities.planning_runner import MEMO_NODES, MEMO_PLACEMENTS
from contracts.disruption import (
    DisruptionCommand,
    DisruptionPhase,
    DisruptionSettings,
    NodeRef,
    PlannerInput,
    PlannerResult,
    PlanPassResult,
)
from workflows.disruption import DisruptionWorkflow
from workflows.planner import PlannerWorkflow


def _cmd(i: int) -> DisruptionCommand:
    c = command(n=1, replacements=1, reason="Drifted", method="Drift")
    c.nodes[0].name, c.nodes[0].uid = f"node-{i}-{uuid.uuid4().hex[:6]}", f"uid-{uuid.uuid4()}"
    return c


async def test_pass_starts_one_disruption_per_command_and_terminates_expired(ts_env: WorkflowEnvironment) -> None:
    a, b = _cmd(1), _cmd(2)
    expired = NodeRef(name="old-node", uid=f"uid-{uuid.uuid4()}")
    fakes = Fakes(plan=PlanPassResult(commands=[a, b], expirations=[expired], nodes=3))
    tq = f"tq-{uuid.uuid4()}"
    settings = DisruptionSettings(validation_delay_seconds=15, ready_poll_seconds=5)
    async with Worker(ts_env.client, task_queue=tq, workflows=[PlannerWorkflow, DisruptionWorkflow],
                      activities=fakes.activities()):
        # time skipping off for both passes: skipped ahead to the children's 15 s validation timers, a child could
        # finish before the second pass looks, and a finished disruption's id is free again
        with ts_env.auto_time_skipping_disabled():
            result = await ts_env.client.execute_workflow(PlannerWorkflow.run, PlannerInput(settings=settings),
                                                          id=f"planner-{uuid.uuid4()}", task_queue=tq)
            assert result.started == [a.workflow_id, b.workflow_id]
            assert result.terminations == [f"terminate-{expired.uid}"]
            # the pass's own terminations: the children's (Drifted, when they finish) may already be recorded too
            assert fakes.termination_reasons.count("Expired") == 1

            # the same commands again while the first disruptions are still running: nothing new starts
            again = await ts_env.client.execute_workflow(PlannerWorkflow.run, PlannerInput(settings=settings),
                                                         id=f"planner-{uuid.uuid4()}", task_queue=tq)
            assert again.started == [] and again.skipped == [a.workflow_id, b.workflow_id]

        # the children outlive the pass (ABANDON) and finish on their own
        for wid in result.started:
            child = ts_env.client.get_workflow_handle_for(DisruptionWorkflow.run, wid)
            outcome = await child.result()
            assert outcome.outcome == DisruptionPhase.SUCCEEDED
        desc = await ts_env.client.get_workflow_handle(a.workflow_id).describe()
        assert (await desc.memo())["nodes"] == [a.nodes[0].name]


async def test_idle_pass_starts_nothing(ts_env: WorkflowEnvironment) -> None:
    fakes = Fakes(plan=PlanPassResult(nodes=5, paused_node_pools=["gpu"]))
    tq = f"tq-{uuid.uuid4()}"
    async with Worker(ts_env.client, task_queue=tq, workflows=[PlannerWorkflow, DisruptionWorkflow],
                      activities=fakes.activities()):
        result = await ts_env.client.execute_workflow(PlannerWorkflow.run, PlannerInput(),
                                                      id=f"planner-{uuid.uuid4()}", task_queue=tq)
    assert result.started == [] and result.terminations == [] and result.paused_node_pools == ["gpu"]
    assert fakes.calls == ["plan"]


async def test_repairs_terminate_now_with_reason_unhealthy(ts_env: WorkflowEnvironment) -> None:
    sick = NodeRef(name="sick-node", uid=f"uid-{uuid.uuid4()}", node_pool="default")
    fakes = Fakes(plan=PlanPassResult(repairs=[sick], repairs_blocked=["gpu"], nodes=6))
    tq = f"tq-{uuid.uuid4()}"
    async with Worker(ts_env.client, task_queue=tq, workflows=[PlannerWorkflow, DisruptionWorkflow],
                      activities=fakes.activities()):
        handle = await ts_env.client.start_workflow(PlannerWorkflow.run, PlannerInput(),
                                                    id=f"planner-{uuid.uuid4()}", task_queue=tq)
        result = await handle.result()
        started = (await handle.describe()).start_time
    assert result.repairs == [f"terminate-{sick.uid}"] and result.repairs_blocked == ["gpu"]
    assert result.terminations == [] and fakes.termination_reasons == ["Unhealthy"]
    (deadline,) = fakes.termination_deadlines
    assert deadline is not None and abs((deadline - started).total_seconds()) < 60  # forceful: the pass's now


def _consolidation(i: int) -> DisruptionCommand:
    c = _cmd(i)
    c.method, c.reason = "SingleNodeConsolidation", "Underutilized"
    return c


async def _run_planner(ts_env: WorkflowEnvironment, fakes: Fakes, consolidation_replans: int,
                       history: str) -> PlannerResult:
    """One PlannerWorkflow run over `fakes`' passes, its history recorded as `history` (RECORD_HISTORIES=1)."""
    tq = f"tq-{uuid.uuid4()}"
    settings = DisruptionSettings(validation_delay_seconds=15, ready_poll_seconds=5)
    async with Worker(ts_env.client, task_queue=tq, workflows=[PlannerWorkflow, DisruptionWorkflow],
                      activities=fakes.activities()):
        handle = await ts_env.client.start_workflow(
            PlannerWorkflow.run, PlannerInput(settings=settings, consolidation_replans=consolidation_replans),
            id=f"planner-{uuid.uuid4()}", task_queue=tq)
        result = await handle.result()
        await record_history(handle, "PlannerWorkflow", history)
    return result


async def test_plans_again_at_once_after_drift_until_a_pass_starts_nothing_new(ts_env: WorkflowEnvironment) -> None:
    """Karpenter requeues at once after an action: drift commands start within one run, each pass excluding the
    nodes of the commands already started (by uid); with no consolidation re-plans left, a consolidation command
    ends the run (docs/semantics.md §2)."""
    a, b, c, d = _cmd(1), _cmd(2), _consolidation(3), _cmd(4)
    fakes = Fakes(plans=[PlanPassResult(commands=[a]), PlanPassResult(commands=[b]), PlanPassResult(commands=[c]),
                         PlanPassResult(commands=[d])])
    result = await _run_planner(ts_env, fakes, 0, "replan_after_command")
    assert result.started == [a.workflow_id, b.workflow_id, c.workflow_id] and result.replans == 2
    assert [i.exclude_uids for i in fakes.plan_inputs] == [
        [], [a.nodes[0].uid], sorted([a.nodes[0].uid, b.nodes[0].uid])]


async def test_consolidation_plans_again_up_to_its_own_limit(ts_env: WorkflowEnvironment) -> None:
    """After consolidation commands the run plans again at most `consolidation_replans` times; a drift command
    in between does not use them up (docs/semantics.md §2)."""
    c1, c2, a, c3, c4 = _consolidation(1), _consolidation(2), _cmd(3), _consolidation(4), _consolidation(5)
    c1.placements = {"node-x": ["default/p-1"], "": ["default/p-2"]}
    c2.placements = {"node-x": ["default/p-3"]}
    fakes = Fakes(plans=[PlanPassResult(commands=[c]) for c in (c1, c2, a, c3, c4)])
    result = await _run_planner(ts_env, fakes, 2, "replan_after_consolidation")
    assert result.started == [c.workflow_id for c in (c1, c2, a, c3)] and result.replans == 3
    assert fakes.plan_inputs[-1].exclude_uids == sorted(c.nodes[0].uid for c in (c1, c2, a))
    # where the started commands put their pods goes with every re-plan (visibility may not list them yet) ...
    assert [i.placements for i in fakes.plan_inputs] == [
        {}, c1.placements, {"node-x": ["default/p-1", "default/p-3"], "": ["default/p-2"]},
        {"node-x": ["default/p-1", "default/p-3"], "": ["default/p-2"]}]
    # ... and into each disruption's memo, for the passes of later runs and the validations
    memo = await (await ts_env.client.get_workflow_handle(c1.workflow_id).describe()).memo()
    assert memo[MEMO_PLACEMENTS] == c1.placements and memo[MEMO_NODES] == [c1.nodes[0].name]
    assert MEMO_PLACEMENTS not in await (await ts_env.client.get_workflow_handle(a.workflow_id).describe()).memo()


async def test_replan_stops_at_its_limit_and_when_nothing_new_starts(ts_env: WorkflowEnvironment) -> None:
    a, b = _cmd(1), _cmd(2)
    tq = f"tq-{uuid.uuid4()}"
    limited = Fakes(plans=[PlanPassResult(commands=[a]), PlanPassResult(commands=[b])])
    async with Worker(ts_env.client, task_queue=tq, workflows=[PlannerWorkflow, DisruptionWorkflow],
                      activities=limited.activities()):
        result = await ts_env.client.execute_workflow(PlannerWorkflow.run, PlannerInput(replan_limit=0),
                                                      id=f"planner-{uuid.uuid4()}", task_queue=tq)
    assert result.started == [a.workflow_id] and result.replans == 0 and limited.calls.count("plan") == 1

    tq = f"tq-{uuid.uuid4()}"
    same = Fakes(plan=PlanPassResult(commands=[b]))  # the next pass plans the same command: already started
    async with Worker(ts_env.client, task_queue=tq, workflows=[PlannerWorkflow, DisruptionWorkflow],
                      activities=same.activities()):
        result = await ts_env.client.execute_workflow(PlannerWorkflow.run, PlannerInput(),
                                                      id=f"planner-{uuid.uuid4()}", task_queue=tq)
    assert result.started == [b.workflow_id] and result.skipped == [b.workflow_id] and result.replans == 1
