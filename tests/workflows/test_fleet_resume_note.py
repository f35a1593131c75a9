"""After `resume`, a fleet must not halt again on the halt it just resumed.

The fleet reads a pool drift rollout's state from the note on its NodePool, which the rollout rewrites only once
its cluster's worker has handled the resume signal; a busy worker takes seconds, and the fleet observes again at
once. In CI the fleet read the old Halted note there and halted a second time, waiting for a resume nobody would
give. Here the note is rewritten by hand, late (tests/support/fleet_world.py plays the clusters), on a real
Temporal dev server: the same note counts as "resuming" (for `resume_grace_seconds`), a new halt halts at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from support.fleet_world import SimCluster, cluster_workers, document, sim_clusters, until

from api.fleet import load_fleet_rollout
from client.fleet import control_fleet, start_fleet_rollout
from contracts.fleet import ClusterPhase, FleetPhase, FleetSettings
from runtime.fleet_worker import build_fleet_worker

pytestmark = pytest.mark.e2e
FAST = {"poll_seconds": 0.2, "unreachable_retry_seconds": 0.5, "gate_seconds": 0.5}
HALT = "replacement never Ready"


@contextlib.asynccontextmanager
async def _halted_fleet(client: Any, settings: FleetSettings) -> AsyncIterator[tuple[Any, SimCluster, str]]:
    """One cluster whose pool drift rollout is halted; the fleet has halted on it."""
    tag = uuid.uuid4().hex[:8]
    with sim_clusters(tag, 1) as (cluster,):
        cluster.halt_pool_rollout(HALT)
        rollout = load_fleet_rollout(document(tag, [cluster], [None]))
        async with cluster_workers(client, [cluster]), build_fleet_worker(client, f"fleet-{tag}"):
            handle, _ = await start_fleet_rollout(client, rollout, task_queue=f"fleet-{tag}", settings=settings)
            st = await until(handle, lambda s: s.phase == FleetPhase.HALTED, "the fleet to halt on the pool")
            assert st.halted_reason.endswith(f"general: drift rollout halted at wave 1/2: {HALT}")
            yield handle, cluster, rollout.rollout_id


async def test_the_halt_just_resumed_is_resuming_until_the_note_is_rewritten(temporal_client: Any) -> None:
    async with _halted_fleet(temporal_client, FleetSettings(**FAST)) as (handle, cluster, rid):
        await control_fleet(temporal_client, rid, "resume", "fixed")
        await asyncio.sleep(2.0)  # ten observations of the old note: the fleet before this fix halted on the first
        st = await until(handle, lambda s: True, "status")
        assert st.phase == FleetPhase.RUNNING, st.log
        assert st.stages[0].clusters[0].message == "general: drift rollout resuming at wave 1/2"
        await asyncio.to_thread(cluster.clear_pool_rollout)  # the rollout's worker rewrites the note (it ended)
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.phase == FleetPhase.SUCCEEDED and result.stages[0].clusters[0].phase == ClusterPhase.DONE
    assert sum("halted:" in line for line in result.log) == 1, result.log


async def test_a_new_halt_after_the_resume_halts_the_fleet_again(temporal_client: Any) -> None:
    async with _halted_fleet(temporal_client, FleetSettings(**FAST)) as (handle, cluster, rid):
        await control_fleet(temporal_client, rid, "resume", "fixed")
        await until(handle, lambda s: s.phase == FleetPhase.RUNNING, "the fleet to run")
        await asyncio.to_thread(cluster.halt_pool_rollout, HALT, 2)  # the same words, a second halt
        st = await until(handle, lambda s: s.phase == FleetPhase.HALTED, "the fleet to halt again", timeout=10)
        assert sum("halted:" in line for line in st.log) == 2, st.log
        await control_fleet(temporal_client, rid, "abort", "done")


async def test_a_note_never_rewritten_halts_again_after_the_grace(temporal_client: Any) -> None:
    """A rollout that never takes the signal (it ended with its note left, or the signal found no workflow) must not
    leave the fleet waiting forever: past `resume_grace_seconds` the same note is a halt again."""
    settings = FleetSettings(**FAST, resume_grace_seconds=1.5)
    async with _halted_fleet(temporal_client, settings) as (handle, _cluster, rid):
        await control_fleet(temporal_client, rid, "resume", "fixed")
        st = await until(handle, lambda s: sum("halted:" in line for line in s.log) == 2, "a second halt",
                         timeout=15)
        assert st.phase == FleetPhase.HALTED
        resumed = next(line for line in st.log if "resumed (halt)" in line)
        halted = [line for line in st.log if "halted:" in line][-1]
        assert halted[:20] >= resumed[:20]  # after the resume, at whole seconds
        await control_fleet(temporal_client, rid, "abort", "done")
