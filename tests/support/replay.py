"""Replay a recorded history against the current workflow code, as a worker restart would."""

from __future__ import annotations

from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from runtime.wiring import workflows
from workflows.fleet import FleetRolloutWorkflow  # the fleet worker's (runtime/fleet_worker.py)


async def replay_failure(history: WorkflowHistory) -> str | None:
    """Why replaying `history` failed (a nondeterminism error, say), or None when it replays."""
    replayer = Replayer(workflows=[*workflows(), FleetRolloutWorkflow], data_converter=pydantic_data_converter)
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    return None if result.replay_failure is None else str(result.replay_failure)
