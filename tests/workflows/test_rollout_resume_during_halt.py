"""A resume that reaches a DriftRolloutWorkflow while it is still writing its halt (the Event, then the NodePool's
note) is kept, not cleared once the note is written.

A fleet rollout resumes a pool's drift rollout as soon as it reads the Halted note, and the rollout's worker may
not yet have taken the note activity's completion: the signal lands between the two. Before the fix the rollout
then cleared it and waited for a resume that had already come. Here the note activity itself sends the resume
and only then returns, on a real Temporal dev server, with the rollout's own code and stand-ins for what it calls
(a DisruptionWorkflow whose replacement never became Ready, the plan, the Event and the note).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker

from contracts.disruption import (
    DisruptionCommand,
    DisruptionInput,
    DisruptionPhase,
    DisruptionResult,
    DisruptionSettings,
    EventsInput,
    NodeRef,
)
from contracts.policy import RolloutInput, RolloutNoteInput, RolloutPhase, RolloutPlan, RolloutPlanInput
from contracts.policy_controls import RolloutStart, WavesSpec
from workflows.rollout import DriftRolloutWorkflow

NODE = NodeRef(name="old-1", uid="uid-old-1", node_claim="old-1", node_pool="general")


@workflow.defn(name="DisruptionWorkflow", sandboxed=False)
class NeverReadyReplacement:
    """The wave's disruption: its replacement never became Ready, so it rolled back."""

    @workflow.run
    async def run(self, inp: DisruptionInput) -> DisruptionResult:
        return DisruptionResult(outcome=DisruptionPhase.ROLLED_BACK, rollback_cause="NotReady")


class Cluster:
    """The rollout's activities: one drifted node until the resume, none after (the retry replaced it)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.resumed = False
        self.notes: list[str | None] = []

    @activity.defn(name="rollout_plan")
    async def plan(self, inp: RolloutPlanInput) -> RolloutPlan:
        if self.resumed:
            return RolloutPlan(drifted=0)
        cmd = DisruptionCommand(method="Drift", reason="Drifted", node_pool="general", nodes=[NODE])
        return RolloutPlan(drifted=1, commands=[cmd] if inp.limit else [])

    @activity.defn(name="rollout_workloads_ready")
    async def workloads_ready(self, inp: Any) -> list[str]:
        return []

    @activity.defn(name="disruption_record_events")
    async def record_events(self, inp: EventsInput) -> int:
        return len(inp.events)

    @activity.defn(name="rollout_annotate")
    async def annotate(self, inp: RolloutNoteInput) -> None:
        """As a fleet does: it reads the Halted note and resumes at once, before this activity's completion is
        taken by the rollout."""
        self.notes.append(inp.value)
        if inp.value and '"phase":"Halted"' in inp.value and not self.resumed:
            self.resumed = True
            info = activity.info()
            await self.client.get_workflow_handle(info.workflow_id).signal(DriftRolloutWorkflow.resume_signal,
                                                                            "fleet rollout resumed")


async def test_a_resume_during_the_halts_note_is_kept(temporal_client: Client) -> None:
    queue = f"rollout-{uuid.uuid4().hex[:8]}"
    cluster = Cluster(temporal_client)
    start = RolloutStart(node_pool="general", generation="g1", waves=WavesSpec(max_failed_replacements=1))
    acts = [cluster.plan, cluster.workloads_ready, cluster.record_events, cluster.annotate]
    async with Worker(temporal_client, task_queue=queue, workflows=[DriftRolloutWorkflow, NeverReadyReplacement],
                      activities=acts):
        handle = await temporal_client.start_workflow(
            DriftRolloutWorkflow.run, RolloutInput(start=start, settings=DisruptionSettings(ready_poll_seconds=0.1)),
            id=f"rollout-{queue}", task_queue=queue)
        result = await asyncio.wait_for(handle.result(), 20)  # before the fix: halted for good
        status = await handle.query(DriftRolloutWorkflow.status)
    assert result.phase == RolloutPhase.SUCCEEDED, result
    assert cluster.resumed and status.halts == 1
    halted = [n for n in cluster.notes if n and '"phase":"Halted"' in n]
    assert len(halted) == 1 and '"halt":1' in halted[0], cluster.notes
