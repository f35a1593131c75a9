"""FleetRolloutWorkflow continues as new when its history is long (docs/fleet.md §8), on a real Temporal dev server
with three simulated clusters and a Prometheus (tests/support/fleet_world.py).

One scenario: stage one's Prometheus gate fails during its bake (halt), is fixed and resumed (the bake starts
again); stage two's pool drift rollout is halted (halt), is fixed and resumed; stage three has no bake. With a
threshold of 10 events each run does a step or two, so the rollout continues as new while halted on the bake,
during the bake, and while halted on the cluster, and still ends Succeeded with every stage's status, the bake's
deadline as set, and each cluster applied once. With the default threshold it is one run, whose history is
recorded (RECORD_HISTORIES=1) for tests/test_replay.py.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from support.disruption_stack import record_history
from support.fleet_world import Prometheus, Run, cluster_workers, document, runs, sim_clusters, until
from temporalio.client import Client, WithStartWorkflowOperation
from temporalio.common import WorkflowIDConflictPolicy

from api.fleet import RECORD_ANNOTATION, load_fleet_rollout
from client.fleet import control_fleet, start_fleet_rollout
from contracts.fleet import (
    ClusterPhase,
    ClusterStatus,
    FleetCarry,
    FleetInput,
    FleetPhase,
    FleetSettings,
    FleetStatus,
    StageStatus,
)
from runtime.fleet_worker import build_fleet_worker
from workflows.fleet import FleetRolloutWorkflow

FAST = {"poll_seconds": 0.3, "unreachable_retry_seconds": 0.5, "gate_seconds": 0.5}
GATE_HALT = "stage s1: query 'sum(up) > 0' returned no data"
POOL_HALT = "general: drift rollout halted at wave 1/2: replacement never Ready"  # after "<cluster>: "


def _continued(st: FleetStatus) -> bool:
    """The current run began by continuing as new, and nothing happened since."""
    return st.log[-1].endswith("continued as new")


async def _scenario(client: Client, settings: FleetSettings, continues: bool) -> dict[str, Any]:
    """Run the rollout through both halts; (result, runs, bake deadline, records on the clusters)."""
    tag = uuid.uuid4().hex[:8]
    fleet_queue = f"fleet-{tag}"
    with sim_clusters(tag, 3) as clusters, Prometheus() as prom:
        clusters[1].halt_pool_rollout("replacement never Ready")  # stage two halts as soon as it is applied
        rollout = load_fleet_rollout(document(tag, clusters, ["3s", "1s", None], prom.url))
        async with cluster_workers(client, clusters), build_fleet_worker(client, fleet_queue):
            handle, new = await start_fleet_rollout(client, rollout, task_queue=fleet_queue, settings=settings)
            assert new
            first_run = handle.first_execution_run_id or handle.result_run_id
            assert first_run is not None
            st = await until(handle, lambda s: s.phase == FleetPhase.HALTED, "stage one's gate to halt")
            assert st.halted_reason == GATE_HALT and st.stages[0].phase == "Baking", (st.log, prom.queries)
            if continues:
                st = await until(handle, _continued, "a run started while halted on the bake")
                assert st.phase == FleetPhase.HALTED and st.halted_reason == GATE_HALT
            prom.holds = True
            assert "resumes at stage 1/3" in await control_fleet(client, rollout.rollout_id, "resume", "gate fixed")
            st = await until(handle, lambda s: s.phase == FleetPhase.BAKING, "stage one to bake again")
            bake_until = st.stages[0].bake_until
            st = await until(handle, lambda s: s.phase == FleetPhase.HALTED, "stage two to halt")
            assert st.halted_reason == f"{clusters[1].name}: {POOL_HALT}"
            if continues:
                st = await until(handle, _continued, "a run started while halted on c2")
                assert st.phase == FleetPhase.HALTED and st.halted_reason.endswith(POOL_HALT)  # stays halted
                assert st.stages[1].clusters[0].phase == ClusterPhase.FAILED and st.stages[2].phase == "Pending"
            await asyncio.to_thread(clusters[1].clear_pool_rollout)
            assert "resumes at stage 2/3" in await control_fleet(client, rollout.rollout_id, "resume", "fixed")
            result = await asyncio.wait_for(handle.result(), 60)
            if not continues:
                await record_history(handle, "FleetRolloutWorkflow", "gate_and_pool_halts")
        chain = await runs(client, rollout.rollout_id, first_run)
        records = [c.pool().get("metadata", {}).get("annotations", {}).get(RECORD_ANNOTATION) for c in clusters]
    _check_result(result, chain, bake_until, records)
    return {"result": result, "chain": chain, "bake_until": bake_until}


def _check_result(result: FleetStatus, chain: list[Run], bake_until: datetime | None, records: list[Any]) -> None:
    assert result.phase == FleetPhase.SUCCEEDED, result.log
    assert [s.phase for s in result.stages] == ["Done", "Done", "Done"]
    assert all(s.clusters[0].phase == ClusterPhase.DONE for s in result.stages)
    assert bake_until is not None and result.stages[0].bake_until == bake_until  # kept across runs
    assert result.stages[0].done_at is not None and result.stages[0].done_at >= bake_until
    assert sum(r.activities("fleet_apply") for r in chain) == 3  # an applied cluster is not applied again
    assert all(records), records
    assert [line.split(" ", 1)[1] for line in result.log if "resumed (halt)" in line] == [
        "resumed (halt): gate fixed", "resumed (halt): fixed"]


@pytest.mark.e2e
async def test_a_long_rollout_continues_as_new_while_halted_and_baking(temporal_client: Any) -> None:
    started = time.monotonic()
    out = await _scenario(temporal_client, FleetSettings(**FAST, continue_as_new_events=10), continues=True)
    result, chain, bake_until = out["result"], out["chain"], out["bake_until"]
    assert result.runs == len(chain) >= 3
    carried = [r.input.carry for r in chain[1:] if r.input.carry is not None]
    assert len(carried) == len(chain) - 1
    assert any(c.status.phase == FleetPhase.HALTED and c.status.stage == 1 and "bake:s1" in c.halted_at
               for c in carried)
    assert any(c.status.phase == FleetPhase.BAKING and c.status.stage == 1
               and c.status.stages[0].bake_until == bake_until for c in carried)
    c2 = result.stages[1].clusters[0].name
    assert any(c.status.phase == FleetPhase.HALTED and c.status.stage == 2 and c2 in c.halted_at
               and c.pool_rollouts.get(c2) for c in carried)
    lengths = [len(r.events) for r in chain]
    print(f"\nruns={len(chain)} history events per run={lengths} seconds={time.monotonic() - started:.1f}")
    assert max(lengths) <= 40, lengths


@pytest.mark.e2e
async def test_the_same_rollout_is_one_run_under_the_default_threshold(temporal_client: Any) -> None:
    started = time.monotonic()
    out = await _scenario(temporal_client, FleetSettings(**FAST), continues=False)
    print(f"\nevents={len(out['chain'][0].events)} seconds={time.monotonic() - started:.1f}")
    assert len(out["chain"]) == 1


@pytest.mark.e2e
async def test_a_stage_timeout_and_an_unreachable_worker_across_runs(temporal_client: Any) -> None:
    """One stage, two clusters at once, a 4 s timeout, onFailure Skip: c1 never gets done (a pod stays Pending),
    c2's worker answers only later. The rollout continues as new about every second, yet c1 is skipped at its
    deadline (carried, not restarted each run) and c2 is applied once its worker answers."""
    tag = uuid.uuid4().hex[:8]
    fleet_queue = f"fleet-{tag}"
    settings = FleetSettings(**FAST, continue_as_new_events=10)
    with sim_clusters(tag, 2) as clusters:
        clusters[0].pending_pod()
        doc = document(tag, clusters[:1], [None])
        doc["spec"].update(onFailure="Skip", workerTimeout="1s", maxClustersInFlight=2)
        doc["spec"]["stages"][0].update(timeout="4s", clusters=[
            {"name": c.name, "taskQueue": c.queue, "nodePools": ["general"]} for c in clusters])
        rollout = load_fleet_rollout(doc)
        async with cluster_workers(temporal_client, clusters[:1]), build_fleet_worker(temporal_client, fleet_queue):
            handle, _ = await start_fleet_rollout(temporal_client, rollout, task_queue=fleet_queue, settings=settings)
            first_run = handle.first_execution_run_id or handle.result_run_id
            assert first_run is not None
            st = await until(handle, lambda s: s.runs >= 3 and s.stages[0].clusters[1].phase == ClusterPhase.UNREACHABLE
                             and s.stages[0].clusters[0].applied_at is not None, "c2 unreachable over three runs")
            async with cluster_workers(temporal_client, clusters[1:]):
                result = await asyncio.wait_for(handle.result(), 30)
        chain = await runs(temporal_client, rollout.rollout_id, first_run)
    c1, c2 = result.stages[0].clusters
    assert result.phase == FleetPhase.SUCCEEDED and result.runs == len(chain) >= 3
    assert c1.phase == ClusterPhase.SKIPPED and c1.message.startswith("not finished within 0:00:04: 1 pods pending")
    assert c1.applied_at is not None and st.stages[0].clusters[0].applied_at == c1.applied_at
    assert c2.phase == ClusterPhase.DONE and c2.applied_at is not None
    applied = sum(1 for r in chain for e in r.events if e.HasField("activity_task_completed_event_attributes")
                  and _scheduled(r, e.activity_task_completed_event_attributes.scheduled_event_id) == "fleet_apply")
    assert applied == 2  # each cluster applied once, however many runs and unanswered attempts


def _scheduled(run: Run, event_id: int) -> str:
    event = next(e for e in run.events if e.event_id == event_id)
    return event.activity_task_scheduled_event_attributes.activity_type.name


@pytest.mark.e2e
async def test_a_pause_is_carried_across_runs(temporal_client: Any) -> None:
    """Paused during stage one's bake: the bake goes on (and the rollout continues as new), stage two does not
    start after it, in whichever run, until resumed."""
    tag = uuid.uuid4().hex[:8]
    fleet_queue = f"fleet-{tag}"
    with sim_clusters(tag, 2) as clusters:
        rollout = load_fleet_rollout(document(tag, clusters, ["3s", None]))
        async with cluster_workers(temporal_client, clusters), build_fleet_worker(temporal_client, fleet_queue):
            handle, _ = await start_fleet_rollout(temporal_client, rollout, task_queue=fleet_queue,
                                                  settings=FleetSettings(**FAST, continue_as_new_events=10))
            st = await until(handle, lambda s: s.phase == FleetPhase.BAKING, "stage one to bake")
            assert "paused" in await control_fleet(temporal_client, rollout.rollout_id, "pause", "change freeze")
            paused = await until(handle, lambda s: s.runs > st.runs and s.stages[0].phase == "Done",
                                 "the bake to end in a later run")
            await asyncio.sleep(1.0)
            still = await handle.query(FleetRolloutWorkflow.status)
            assert paused.phase == still.phase == FleetPhase.PAUSED and still.paused_reason == "change freeze"
            assert still.stages[1].phase == "Pending" and still.stages[1].clusters[0].applied_at is None
            await control_fleet(temporal_client, rollout.rollout_id, "resume", "freeze over")
            result = await asyncio.wait_for(handle.result(), 30)
    assert result.phase == FleetPhase.SUCCEEDED and result.stages[0].bake_until == st.stages[0].bake_until
    assert any("resumed (pause): freeze over" in line for line in result.log)


@pytest.mark.e2e
async def test_an_update_in_a_continued_runs_first_task_is_kept(temporal_client: Any) -> None:
    """An update that reaches a run continued as new in its first workflow task is applied before `run` starts;
    the carried state must already be there (`@workflow.init`), or restoring it afterwards drops the update. In CI a
    pause was lost that way. Update-with-start puts the update in the first task on purpose."""
    tag = uuid.uuid4().hex[:8]
    fleet_queue = f"fleet-{tag}"
    with sim_clusters(tag, 2) as clusters:
        rollout = load_fleet_rollout(document(tag, clusters, ["30s", None]))
        carried = FleetStatus(id=rollout.rollout_id, name=rollout.metadata.name, stage=1, phase=FleetPhase.BAKING,
                              stages=[StageStatus(name=s.name, clusters=[ClusterStatus(name=c.name, task_queue=c.queue)
                                                                         for c in s.clusters])
                                      for s in rollout.spec.stages])
        carried.stages[0].phase = "Baking"
        carried.stages[0].bake_until = datetime.now(UTC) + timedelta(seconds=30)
        carried.stages[0].clusters[0].phase = ClusterPhase.DONE
        inp = FleetInput(rollout=rollout, settings=FleetSettings(**FAST), carry=FleetCarry(status=carried))
        start = WithStartWorkflowOperation(FleetRolloutWorkflow.run, inp, id=rollout.rollout_id,
                                           task_queue=fleet_queue, id_conflict_policy=WorkflowIDConflictPolicy.FAIL)
        async with cluster_workers(temporal_client, clusters), build_fleet_worker(temporal_client, fleet_queue):
            said = await temporal_client.execute_update_with_start_workflow(
                FleetRolloutWorkflow.pause, "change freeze", start_workflow_operation=start)
            handle = await start.workflow_handle()
            st = await handle.query(FleetRolloutWorkflow.status)
            assert "paused" in said and st.phase == FleetPhase.PAUSED and st.paused_reason == "change freeze", st.log
            assert st.runs == 2 and st.stages[0].phase == "Baking"  # the carried state, with the update on top
            await handle.terminate("test over")
