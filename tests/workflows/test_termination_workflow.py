"""TerminationWorkflow against a real Temporal server with test-only activities under the real names.

Time-skipping (`ts_env`) covers the durable deadline; the dev server covers updates (force/cancel),
whose results the time-skipping server cannot wait for.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pytest
from e2e.termination_helpers import record_history
from temporalio import activity
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.worker import Worker

from contracts.termination import (
    CancelRequest,
    DeletePodsInput,
    DeletePodsResult,
    DrainInput,
    DrainResult,
    FinalizeInput,
    FinalizeResult,
    ForceRequest,
    InstanceInput,
    InstanceResult,
    PodState,
    PrepareInput,
    PrepareResult,
    TerminationInput,
    TerminationMarkersInput,
    TerminationPhase,
    UntaintInput,
    VolumesInput,
    VolumesResult,
    blocking_of,
)
from workflows.termination import TerminationWorkflow, workflow_id

QUICK_DRAIN = timedelta(milliseconds=500)


@dataclass
class FakeCluster:
    """What the fake activities see and record."""

    pods: list[PodState] = field(default_factory=list)
    block_drain: bool = True  # drain returns "not drained" (a PDB blocks) until pods are deleted
    hang_drain: bool = False  # drain heartbeats until cancelled (like a real PDB wait)
    deleting: bool = False
    calls: list[str] = field(default_factory=list)
    deletes: list[DeletePodsInput] = field(default_factory=list)
    drain_deletes: list[datetime] = field(default_factory=list)  # server time of each drain round that deleted
    marks: list[str | None] = field(default_factory=list)  # Drained status written on the NodeClaim
    untaints: list[UntaintInput] = field(default_factory=list)
    # the worker's MinDrainTime (None: Karpenter's 5 s); tests on the dev server, whose timers take wall-clock time,
    # shorten it where their point is force/cancel, not that wait (the ts_env tests keep the 5 s)
    min_drain: timedelta | None = None

    def activities(self) -> list:
        cluster = self

        @activity.defn(name="termination.prepare")
        async def prepare(inp: PrepareInput) -> PrepareResult:
            cluster.calls.append("prepare")
            return PrepareResult(node_exists=True, node_claim_name="claim-1", node_claim_exists=True,
                                 provider_id="aws:///us-east-1a/i-0abc", node_pool="default",
                                 pods=list(cluster.pods), deleting_since=None, min_drain_time=cluster.min_drain)

        @activity.defn(name="termination.drain")
        async def drain(inp: DrainInput) -> DrainResult:
            cluster.calls.append("drain")
            if inp.deadline_deletes and inp.deadline is not None:  # the deadline path inside the drain (v1.15)
                at = activity.info().current_attempt_scheduled_time  # the server's (skipped) time
                due = [p for p in cluster.pods if at >= inp.deadline - timedelta(seconds=p.grace_seconds)]
                if due:
                    cluster.drain_deletes.append(at)
                    cluster.pods = [p for p in cluster.pods if p not in due]
                    return DrainResult(drained=not cluster.pods, deleted=len(due), pods=list(cluster.pods))
            if cluster.hang_drain and cluster.pods:
                while True:
                    activity.heartbeat()
                    await asyncio.sleep(0.2)
            if cluster.block_drain and cluster.pods:
                blocked = [p.model_copy(update={"status": "Blocked", "blocking_pdb": "default/web"})
                           for p in cluster.pods]
                return DrainResult(drained=False, pods=blocked)
            evicted = len(cluster.pods)
            cluster.pods = []
            return DrainResult(drained=True, evicted=evicted)

        @activity.defn(name="termination.delete_pods")
        async def delete_pods(inp: DeletePodsInput) -> DeletePodsResult:
            cluster.calls.append("delete_pods")
            cluster.deletes.append(inp)
            gone = [p.key for p in cluster.pods]
            cluster.pods = []
            return DeletePodsResult(deleted=gone)

        @activity.defn(name="termination.wait_volumes")
        async def wait_volumes(inp: VolumesInput) -> VolumesResult:
            cluster.calls.append("wait_volumes")
            return VolumesResult(detached=True)

        @activity.defn(name="termination.terminate_instance")
        async def terminate_instance(inp: InstanceInput) -> InstanceResult:
            cluster.calls.append("terminate_instance")
            return InstanceResult(instance_id="i-0abc", state="terminated", terminate_called=True)

        @activity.defn(name="termination.finalize")
        async def finalize(inp: FinalizeInput) -> FinalizeResult:
            cluster.calls.append("finalize")
            return FinalizeResult(node_finalizer_removed=True, node_claim_finalizer_removed=True)

        @activity.defn(name="termination.untaint")
        async def untaint(inp: UntaintInput) -> None:
            cluster.calls.append("untaint")
            cluster.untaints.append(inp)

        @activity.defn(name="termination.mark_nodeclaim")
        async def mark_nodeclaim(inp: TerminationMarkersInput) -> bool:
            cluster.marks.append(inp.drained.value if inp.drained else None)
            return True

        return [prepare, drain, delete_pods, wait_volumes, terminate_instance, finalize, untaint, mark_nodeclaim]


def _input(**kw) -> TerminationInput:
    uid = str(uuid.uuid4())
    return TerminationInput(node_name=f"node-{uid[:6]}", node_uid=uid, node_claim_name="claim-1",
                            node_pool="default", provider_id="aws:///us-east-1a/i-0abc", **kw)


async def _start(client: Client, tq: str, inp: TerminationInput):
    return await client.start_workflow(TerminationWorkflow.run, inp, id=workflow_id(inp.node_uid), task_queue=tq)


async def test_deadline_deletes_pod_at_deadline_minus_its_grace(ts_env) -> None:
    """Node grace 300 s, pod grace 60 s, PDB blocking: the pod is deleted at 240 s, not before, by the drain
    itself (Karpenter v1.15, kubernetes-sigs/karpenter#3063): no termination.delete_pods."""
    cluster = FakeCluster(pods=[PodState(namespace="default", name="web-0", grace_seconds=60)])
    tq = f"tq-{uuid.uuid4()}"
    inp = _input(grace_period=timedelta(seconds=300))
    async with Worker(ts_env.client, task_queue=tq, workflows=[TerminationWorkflow],
                      activities=cluster.activities()):
        handle = await _start(ts_env.client, tq, inp)
        result = await handle.result()
        progress = await handle.query(TerminationWorkflow.progress)
        await record_history(handle, "deadline_in_drain")
    assert result.phase == TerminationPhase.TERMINATED and result.pods_deleted == 1
    assert cluster.deletes == [] and "delete_pods" not in cluster.calls
    assert len(cluster.drain_deletes) == 1
    started = progress.deadline - timedelta(seconds=300)
    waited = cluster.drain_deletes[0] - started
    assert timedelta(seconds=240) <= waited < timedelta(seconds=242), waited
    assert cluster.calls[-2:] == ["terminate_instance", "finalize"]


async def test_plain_drain_order_and_history_size(ts_env) -> None:
    cluster = FakeCluster(pods=[PodState(namespace="default", name="a")], block_drain=False)
    tq = f"tq-{uuid.uuid4()}"
    async with Worker(ts_env.client, task_queue=tq, workflows=[TerminationWorkflow],
                      activities=cluster.activities()):
        handle = await _start(ts_env.client, tq, _input())
        result = await handle.result()
        history = await handle.fetch_history()
    assert result.phase == TerminationPhase.TERMINATED and result.pods_evicted == 1 and result.instance_terminated
    # MinDrainTime (5 s, Karpenter v1.10) is the drain activity's to keep (`drained_not_before`): one drain, no timer
    assert cluster.calls == ["prepare", "drain", "wait_volumes", "terminate_instance", "finalize"]
    assert cluster.marks == ["Unknown", "True"]  # Drained: Draining at drain start, True at its end
    assert not [e for e in history.events if e.HasField("timer_started_event_attributes")]
    # 22 (one patch marker; docs/benchmarks.md) + the volume wait's activity and task (6) + the markers' local activity
    # this fake prepare leaves to the workflow (1); 47 with a patch marker each and the timer's second drain
    assert len(history.events) <= 29


async def test_force_deletes_pods_now(temporal_client: Client) -> None:
    cluster = FakeCluster(pods=[PodState(namespace="default", name="a")], hang_drain=True,
                          min_drain=QUICK_DRAIN)
    tq = f"tq-{uuid.uuid4()}"
    async with Worker(temporal_client, task_queue=tq, workflows=[TerminationWorkflow],
                      activities=cluster.activities(), max_heartbeat_throttle_interval=timedelta(milliseconds=300)):
        handle = await _start(temporal_client, tq, _input())
        with pytest.raises(WorkflowUpdateFailedError) as err:
            await handle.execute_update(TerminationWorkflow.force, ForceRequest(reason=""))
        assert "reason is required" in str(err.value.cause)
        res = await handle.execute_update(TerminationWorkflow.force, ForceRequest(reason="stuck PDB"))
        assert res.accepted
        result = await handle.result()
    assert result.phase == TerminationPhase.TERMINATED
    assert [d.force for d in cluster.deletes] == [True]


async def test_cancel_accepted_untaints(temporal_client: Client) -> None:
    cluster = FakeCluster(pods=[PodState(namespace="default", name="a")], hang_drain=True,
                          min_drain=QUICK_DRAIN)
    tq = f"tq-{uuid.uuid4()}"
    async with Worker(temporal_client, task_queue=tq, workflows=[TerminationWorkflow],
                      activities=cluster.activities(), max_heartbeat_throttle_interval=timedelta(milliseconds=300)):
        handle = await _start(temporal_client, tq, _input(requested_by="disruption"))
        res = await handle.execute_update(TerminationWorkflow.cancel, CancelRequest(reason="changed my mind"))
        assert res.phase == TerminationPhase.CANCELLED
        result = await handle.result()
    assert result.phase == TerminationPhase.CANCELLED
    assert "untaint" in cluster.calls and "terminate_instance" not in cluster.calls


async def test_cancel_rejected_for_user_deletion(temporal_client: Client) -> None:
    cluster = FakeCluster(pods=[PodState(namespace="default", name="a")], hang_drain=True,
                          min_drain=QUICK_DRAIN)
    tq = f"tq-{uuid.uuid4()}"
    async with Worker(temporal_client, task_queue=tq, workflows=[TerminationWorkflow],
                      activities=cluster.activities(), max_heartbeat_throttle_interval=timedelta(milliseconds=300)):
        handle = await _start(temporal_client, tq, _input(requested_by="watcher"))
        with pytest.raises(WorkflowUpdateFailedError) as err:
            await handle.execute_update(TerminationWorkflow.cancel, CancelRequest(reason="oops"))
        assert "cannot be undone" in str(err.value.cause)
        await handle.execute_update(TerminationWorkflow.force, ForceRequest(reason="finish the test"))
        result = await handle.result()
    assert result.phase == TerminationPhase.TERMINATED


async def _until(check, timeout: float = 10.0) -> None:
    for _ in range(int(timeout / 0.05)):
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition never met")


async def _progress_when(handle, check, timeout: float = 10.0):
    for _ in range(int(timeout / 0.05)):
        progress = await handle.query(TerminationWorkflow.progress)
        if check(progress):
            return progress
        await asyncio.sleep(0.05)
    raise AssertionError(f"progress never matched: {progress}")


async def test_signals_named_like_the_updates_and_unknown_ones_reported(temporal_client: Client) -> None:
    """The Web UI's signals are `force`/`cancel` (the updates' names); a misspelt one is logged and recorded."""
    cluster = FakeCluster(pods=[PodState(namespace="default", name="a")], hang_drain=True,
                          min_drain=QUICK_DRAIN)
    tq = f"tq-{uuid.uuid4()}"
    async with Worker(temporal_client, task_queue=tq, workflows=[TerminationWorkflow],
                      activities=cluster.activities(), max_heartbeat_throttle_interval=timedelta(milliseconds=300)):
        handle = await _start(temporal_client, tq, _input(requested_by="disruption"))
        # no query before the drain runs: a query answered while the short local activities run splits the
        # workflow task, and such a history does not replay (tests/test_replay.py)
        await _until(lambda: "drain" in cluster.calls)
        await handle.signal("cancle", CancelRequest(reason="typo"))
        progress = await _progress_when(handle, lambda p: p.unknown_signals)
        assert progress.unknown_signals == ["cancle"] and "'cancle' ignored" in progress.message
        assert progress.phase == TerminationPhase.DRAINING and progress.cancelled is None
        await handle.signal("cancel", CancelRequest(reason="from the Web UI"))
        result = await handle.result()
        await record_history(handle, "cancel_signal")
    assert result.phase == TerminationPhase.CANCELLED and result.message == "from the Web UI"
    assert "untaint" in cluster.calls and "terminate_instance" not in cluster.calls
    assert cluster.untaints[0].cancelled_at is not None  # the untaint also holds the node from re-planning


async def test_force_signal_under_both_names(temporal_client: Client) -> None:
    for name in ("force", "force_signal"):
        cluster = FakeCluster(pods=[PodState(namespace="default", name="a")], hang_drain=True,
                              min_drain=QUICK_DRAIN)
        tq = f"tq-{uuid.uuid4()}"
        async with Worker(temporal_client, task_queue=tq, workflows=[TerminationWorkflow],
                          activities=cluster.activities(),
                          max_heartbeat_throttle_interval=timedelta(milliseconds=300)):
            handle = await _start(temporal_client, tq, _input())
            await handle.signal(name, ForceRequest(reason="stuck PDB"))
            result = await handle.result()
        assert result.phase == TerminationPhase.TERMINATED, name
        assert [d.force for d in cluster.deletes] == [True], name


async def test_old_cancel_signal_name_still_works(temporal_client: Client) -> None:
    cluster = FakeCluster(pods=[PodState(namespace="default", name="a")], hang_drain=True,
                          min_drain=QUICK_DRAIN)
    tq = f"tq-{uuid.uuid4()}"
    async with Worker(temporal_client, task_queue=tq, workflows=[TerminationWorkflow],
                      activities=cluster.activities(), max_heartbeat_throttle_interval=timedelta(milliseconds=300)):
        handle = await _start(temporal_client, tq, _input(requested_by="disruption"))
        await handle.signal("cancel_signal", CancelRequest(reason="a script"))
        result = await handle.result()
    assert result.phase == TerminationPhase.CANCELLED


def test_blocking_names_pdbs_and_do_not_disrupt_pods() -> None:
    pods = [PodState(namespace="default", name="web-0", status="Blocked", blocking_pdb="default/web"),
            PodState(namespace="default", name="web-1", status="Blocked", blocking_pdb="default/web"),
            PodState(namespace="batch", name="job-0", status="DoNotDisrupt"),
            PodState(namespace="default", name="idle", status="Waiting")]
    assert blocking_of(pods) == ["default/web", "do-not-disrupt: batch/job-0"]
