"""client/pollers.py: a status read skips the query of a workflow no worker polls for, and says so at once."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime, timedelta

from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from activities.planning_runner import MEMO_NODES
from client.disruption_status import QUERY_TIMEOUT, list_disruptions
from client.pollers import RECENT, unpolled


@workflow.defn(name="PollersProbe")
class _Probe:
    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: False)


async def test_a_queue_counts_as_polled_while_its_worker_polls_and_not_after(temporal_client: Client) -> None:
    live, dead = f"pollers-live-{uuid.uuid4().hex[:6]}", f"pollers-dead-{uuid.uuid4().hex[:6]}"
    runner = UnsandboxedWorkflowRunner()  # the probe needs no sandbox; this module imports the client's helpers
    async with Worker(temporal_client, task_queue=live, workflows=[_Probe], workflow_runner=runner):
        handle = await temporal_client.start_workflow(_Probe.run, id=f"probe-{live}", task_queue=live)
        await asyncio.sleep(0.5)  # the worker's first poll is on record
        assert await unpolled(temporal_client, [live, dead, None]) == {dead}
        later = datetime.now(UTC) + RECENT + timedelta(seconds=5)  # its last poll began longer ago than RECENT
        assert await unpolled(temporal_client, [live], now=later) == {live}
        await handle.terminate("test over")


async def test_status_names_the_idle_queue_without_waiting_out_the_query(temporal_client: Client) -> None:
    tag = uuid.uuid4().hex[:8]
    queue, node = f"pollers-none-{tag}", f"idle-{tag}"
    handle = await temporal_client.start_workflow("DisruptionWorkflow", id=f"disrupt-{tag}", task_queue=queue,
                                                  memo={MEMO_NODES: [node]})
    try:
        rows: list = []
        for _ in range(50):  # the visibility store lags the start by a moment
            started = time.monotonic()
            rows = await list_disruptions(temporal_client, node)
            if rows:
                break
            await asyncio.sleep(0.1)
        assert len(rows) == 1 and rows[0].workflow_id == handle.id
        assert f"no worker polls task queue {queue!r}" in (rows[0].query_error or "")
        assert time.monotonic() - started < QUERY_TIMEOUT / 2
    finally:
        await handle.terminate("test over")
