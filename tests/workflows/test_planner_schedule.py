"""The planner Schedule on the dev server: idempotent create-or-update, SKIP overlap, pause kept, it runs."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

from support.disruption_fakes import Fakes
from temporalio.client import Client, ScheduleOverlapPolicy
from temporalio.worker import Worker

from client.planner_schedule import ensure_planner_schedule, planner_paused, set_planner_paused
from workflows.disruption import DisruptionWorkflow
from workflows.planner import PlannerWorkflow


async def test_schedule_create_update_pause_and_run(temporal_client: Client) -> None:
    sid = f"nodeflow-planner-{uuid.uuid4().hex[:8]}"
    tq = f"tq-{uuid.uuid4()}"
    handle = await ensure_planner_schedule(temporal_client, every=timedelta(seconds=30), task_queue=tq,
                                           schedule_id=sid)
    try:
        desc = await handle.describe()
        assert desc.schedule.spec.intervals[0].every == timedelta(seconds=30)
        assert desc.schedule.policy.overlap == ScheduleOverlapPolicy.SKIP
        assert desc.schedule.policy.catchup_window <= timedelta(seconds=30)
        assert desc.schedule.action.task_queue == tq

        assert await set_planner_paused(temporal_client, True, schedule_id=sid) is False
        # a second ensure (a worker restart) updates in place and keeps the operator's pause
        await ensure_planner_schedule(temporal_client, every=timedelta(seconds=1), task_queue=tq, schedule_id=sid)
        desc = await handle.describe()
        assert desc.schedule.spec.intervals[0].every == timedelta(seconds=1)
        assert await planner_paused(temporal_client, schedule_id=sid) is True

        fakes = Fakes()
        async with Worker(temporal_client, task_queue=tq, workflows=[PlannerWorkflow, DisruptionWorkflow],
                          activities=fakes.activities()):
            await asyncio.sleep(1.5)
            assert fakes.calls == []  # paused: no pass ran
            assert await set_planner_paused(temporal_client, False, schedule_id=sid) is True
            for _ in range(100):
                if fakes.calls.count("plan") >= 1:
                    break
                await asyncio.sleep(0.1)
            assert "plan" in fakes.calls
            desc = await handle.describe()
            assert desc.info.recent_actions[0].action.workflow_id.startswith("nodeflow-planner-pass")
            await set_planner_paused(temporal_client, True, schedule_id=sid)
    finally:
        await handle.delete()
