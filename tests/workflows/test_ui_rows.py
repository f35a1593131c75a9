"""The Temporal UI's rows, read back as the UI reads them (describe()): a started workflow's summary and its
NodeflowNode / NodeflowNodePool / NodeflowReason / NodeflowPhase, before any worker ran its first task.

No worker runs the started workflows (a task queue nobody polls, or a type the worker does not have), so what
the server holds is exactly what the start set: a backlog or a worker down must not leave blank rows.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

from support.disruption_fakes import Fakes, command
from support.disruption_stack import record_history
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client, WorkflowExecutionDescription
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from client.termination import start_termination
from contracts import search_attributes as sa
from contracts.disruption import DisruptionInput, DisruptionSettings, PlannerInput, PlanPassResult
from contracts.termination import TerminationInput
from workflows.disruption import DisruptionWorkflow
from workflows.planner import PlannerWorkflow


def _row(desc: WorkflowExecutionDescription) -> dict[str, str | None]:
    attrs = desc.typed_search_attributes
    return {key.name: attrs.get(key) for key in sa.ALL}


async def test_a_started_termination_names_node_pool_reason_and_phase(temporal_client: Client) -> None:
    uid = f"uid-{uuid.uuid4()}"
    inp = TerminationInput(node_name="general-01", node_uid=uid, node_pool="general", reason="Drifted")
    handle = await start_termination(temporal_client, inp, task_queue=f"nobody-{uuid.uuid4()}")
    try:
        desc = await handle.describe()
        assert handle.id == f"terminate-{uid}"  # the id stays the node's uid; the row names the node
        assert _row(desc) == {"NodeflowNode": "general-01", "NodeflowNodePool": "general",
                              "NodeflowReason": "Drifted", "NodeflowPhase": "Pending"}
        assert await desc.static_summary() == "drain general-01 (Drifted, pool general)"
    finally:
        await handle.terminate("test over")


async def test_a_disruption_the_planner_starts_names_node_pool_reason_and_phase(temporal_client: Client) -> None:
    """The planner's child, before its own first task (which upserts them again) ever runs."""
    cmd = command(n=2, replacements=0, reason="Underutilized", method="MultiNodeConsolidation", pool="general")
    for node in cmd.nodes:
        node.name, node.uid = f"general-{node.name}", f"uid-{uuid.uuid4()}"
    fakes = Fakes(plan=PlanPassResult(commands=[cmd], nodes=2))
    tq = f"tq-{uuid.uuid4()}"
    # PlannerWorkflow only: the DisruptionWorkflow child waits on the queue for a worker that has it
    async with Worker(temporal_client, task_queue=tq, workflows=[PlannerWorkflow], activities=fakes.activities()):
        handle = await temporal_client.start_workflow(
            PlannerWorkflow.run, PlannerInput(settings=DisruptionSettings(), replan_limit=0),
            id=f"planner-{uuid.uuid4()}", task_queue=tq, execution_timeout=timedelta(seconds=60))
        result = await handle.result()
        await record_history(handle, "PlannerWorkflow", "ui_start_attributes")  # replayed by tests/test_replay.py
    assert result.started == [cmd.workflow_id]
    child = temporal_client.get_workflow_handle(cmd.workflow_id)
    try:
        desc = await child.describe()
        assert child.id == f"disrupt-{cmd.nodes[0].uid}"
        assert _row(desc) == {"NodeflowNode": "general-node-0", "NodeflowNodePool": "general",
                              "NodeflowReason": "Underutilized", "NodeflowPhase": "Pending"}
        assert await desc.static_summary() == ("disrupt general-node-0, general-node-1 → delete "
                                               "(Underutilized, pool general)")
    finally:
        await child.terminate("test over")


async def test_a_waiting_disruption_says_what_it_waits_for(ts_env: WorkflowEnvironment) -> None:
    """Its current details (the UI's User Metadata tab) name phase, nodes, reason, pool and the replacement it
    waits for, read back by the query the UI uses."""
    fakes = Fakes(ready_after_polls=None)
    cmd = command(n=1, replacements=1, reason="Drifted", method="Drift", pool="general")
    tq = f"tq-{uuid.uuid4()}"
    settings = DisruptionSettings(validation_delay_seconds=0.01, ready_poll_seconds=3600, ready_timeout_seconds=7200)
    async with Worker(ts_env.client, task_queue=tq, workflows=[DisruptionWorkflow], activities=fakes.activities()):
        handle = await ts_env.client.start_workflow(DisruptionWorkflow.run, DisruptionInput(command=cmd,
                                                                                          settings=settings),
                                                    id=f"disrupt-{uuid.uuid4()}", task_queue=tq)
        with ts_env.auto_time_skipping_disabled():
            details = ""
            for _ in range(200):
                meta = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
                details = meta.current_details
                if details.startswith("WaitingReady"):
                    break
                await asyncio.sleep(0.05)
            await handle.terminate("test over")
    claim = f"repl-{handle.id}/{handle.result_run_id}/0"  # the fakes name a launch by its idempotency key
    assert details.startswith("WaitingReady node-0 (Drifted, pool general) · 0 of 1 replacement Ready, "
                              f"waiting for {claim} · ready by "), details
