"""A fleet rollout survives a Temporal restart (docs/fleet.md §4 and §8): a Temporal dev server on a SQLite
file is SIGKILLed while one rollout bakes and another is halted, and started again on the same file. Each simulated
cluster's worker (tests/support/fleet_world.py) stays up and reconnects; the fleet's worker is stopped before the
kill and a new one started after, so both rollouts are replayed from the restarted server's history. The baking
rollout finishes with its bake deadline as set before the kill; the halted one is still halted, and finishes once
resumed.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from support.fleet_world import cluster_workers, document, sim_clusters
from temporalio.client import Client, WorkflowQueryFailedError
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError

from api.fleet import load_fleet_rollout
from client.fleet import control_fleet, start_fleet_rollout
from contracts.fleet import FleetPhase, FleetSettings, FleetStatus
from devstack.processes import TemporalDevServer
from runtime.fleet_worker import build_fleet_worker
from workflows.fleet import FleetRolloutWorkflow

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180), pytest.mark.xdist_group("fleet")]  # with the fleet e2e
SETTINGS = FleetSettings(poll_seconds=0.5, unreachable_retry_seconds=1.0, gate_seconds=1.0)
BAKE_SECONDS = 8


async def _status(handle: Any, check: Any, what: str, timeout: float = 60) -> FleetStatus:
    """Query until `check` holds; a query while Temporal restarts fails, and is asked again."""
    end = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < end:
        try:
            last = await handle.query(FleetRolloutWorkflow.status, rpc_timeout=timedelta(seconds=5))
        except (RPCError, WorkflowQueryFailedError) as exc:
            last = exc
        else:
            if check(last):
                return last
        await asyncio.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}: {last}")


async def _connect(address: str) -> Client:
    """The server answers on its port before its frontend is healthy ("Frontend is not healthy yet", seen in CI)."""
    for _ in range(100):
        try:
            return await Client.connect(address, data_converter=pydantic_data_converter)
        except RuntimeError:
            await asyncio.sleep(0.3)
    return await Client.connect(address, data_converter=pydantic_data_converter)


@contextlib.asynccontextmanager
async def _temporal(tmp_path: Path) -> AsyncIterator[tuple[TemporalDevServer, Client]]:
    server = TemporalDevServer(db_path=tmp_path / "temporal.db", headless=True, log_path=tmp_path / "temporal.log")
    server.start()
    try:
        client = await _connect(server.address)
        yield server, client
    finally:
        server.stop()


async def test_a_fleet_rollout_survives_a_temporal_restart(tmp_path: Path) -> None:
    started = time.monotonic()
    tag = uuid.uuid4().hex[:8]
    async with _temporal(tmp_path) as (server, client):
        with sim_clusters(tag, 3) as clusters:
            clusters[2].halt_pool_rollout("replacement never Ready")
            baking_doc = load_fleet_rollout(document(tag, clusters[:2], [f"{BAKE_SECONDS}s", None]))
            halted_doc = load_fleet_rollout(document(f"{tag}h", clusters[2:], [None]))
            fleet_queue = f"fleet-{tag}"
            async with cluster_workers(client, clusters):
                async with build_fleet_worker(client, fleet_queue):
                    baking, _ = await start_fleet_rollout(client, baking_doc, task_queue=fleet_queue,
                                                          settings=SETTINGS)
                    halted, _ = await start_fleet_rollout(client, halted_doc, task_queue=fleet_queue,
                                                          settings=SETTINGS)
                    before = await _status(baking, lambda s: s.phase == FleetPhase.BAKING, "stage one to bake")
                    await _status(halted, lambda s: s.phase == FleetPhase.HALTED, "the other rollout to halt")
                bake_until = before.stages[0].bake_until
                assert bake_until is not None

                killed = time.monotonic()
                await asyncio.to_thread(server.kill)
                await asyncio.sleep(1.0)
                await asyncio.to_thread(server.start)
                back = time.monotonic() - killed
                assert datetime.now(UTC) < bake_until  # the kill and the restart fell within the bake

                # a new fleet worker (the old one's cache gone with it) replays both from the restarted server
                async with build_fleet_worker(client, fleet_queue):
                    still = await _status(halted, lambda s: True, "the halted rollout after the restart")
                    assert still.phase == FleetPhase.HALTED and "replacement never Ready" in still.halted_reason
                    assert still.stages[0].clusters[0].done_at is None
                    result = await asyncio.wait_for(baking.result(), 60)
                    await asyncio.to_thread(clusters[2].clear_pool_rollout)
                    await control_fleet(client, halted_doc.rollout_id, "resume", "fixed")
                    other = await asyncio.wait_for(halted.result(), 60)

    assert result.phase == FleetPhase.SUCCEEDED, result.log
    assert result.stages[0].bake_until == bake_until  # the deadline set before the kill
    assert result.stages[0].done_at is not None and result.stages[0].done_at >= bake_until
    assert result.stages[1].clusters[0].applied_at is not None and result.stages[1].clusters[0].applied_at >= bake_until
    assert other.phase == FleetPhase.SUCCEEDED and any("resumed (halt): fixed" in line for line in other.log)
    print(f"\nTemporal back in {back:.1f}s; test {time.monotonic() - started:.1f}s")
