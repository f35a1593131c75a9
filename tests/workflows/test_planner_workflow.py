"""PlannerWorkflow on the time-skipping server: one child per command, in-flight ids skipped, expirations."""

from __future__ import annotations

import uuid

from support.disruption_fakes import Fakes, command
from support.disruption_stack import record_history
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from workflows.disruption import DisruptionWorkflow
from workflows.disruption_models import (
    DisruptionPhase,
    DisruptionSettings,
    NodeRef,
    PlannerInput,
    PlanPassResult,
)
from workflows.planner import PlannerWorkflow


def _cmd(i: int):
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


async def test_plans_again_at_once_after_drift_until_a_pass_starts_nothing_new(ts_env: WorkflowEnvironment) -> None:
    """Karpenter requeues at once after an action: drift commands start within one run, each pass excluding the
    nodes of the commands already started (by uid); a consolidation command ends the run (docs/semantics.md §2)."""
    a, b, d = _cmd(1), _cmd(2), _cmd(4)
    c = _cmd(3)
    c.method, c.reason = "SingleNodeConsolidation", "Underutilized"
    fakes = Fakes(plans=[PlanPassResult(commands=[a]), PlanPassResult(commands=[b]), PlanPassResult(commands=[c]),
                         PlanPassResult(commands=[d])])
    tq = f"tq-{uuid.uuid4()}"
    settings = DisruptionSettings(validation_delay_seconds=15, ready_poll_seconds=5)
    async with Worker(ts_env.client, task_queue=tq, workflows=[PlannerWorkflow, DisruptionWorkflow],
                      activities=fakes.activities()):
        handle = await ts_env.client.start_workflow(PlannerWorkflow.run, PlannerInput(settings=settings),
                                                    id=f"planner-{uuid.uuid4()}", task_queue=tq)
        result = await handle.result()
        await record_history(handle, "PlannerWorkflow", "replan_after_command")
    assert result.started == [a.workflow_id, b.workflow_id, c.workflow_id] and result.replans == 2
    assert [i.exclude_uids for i in fakes.plan_inputs] == [
        [], [a.nodes[0].uid], sorted([a.nodes[0].uid, b.nodes[0].uid])]


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
