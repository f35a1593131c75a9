"""The worker's `--min-drain-time` (Settings.min_drain_seconds, docs/configuration.md) reaches TerminationWorkflow in
`termination.prepare`'s result and replaces Karpenter's 5 s MinDrainTime (docs/semantics.md §9.5); without it the
5 s hold, which the drain activity keeps (`drained_not_before`). On the time-skipping server; the worker flags that
set it, and the other two timing flags, parse."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import pytest
from support.termination_fakes import after_drain
from temporalio import activity
from temporalio.worker import Worker

import worker
from contracts.termination import (
    DrainInput,
    DrainResult,
    PodState,
    PrepareInput,
    PrepareResult,
    TerminationInput,
    TerminationPhase,
)
from workflows.termination import MIN_DRAIN_TIME, TerminationWorkflow, workflow_id

WEB = PodState(namespace="default", name="web-1")


async def _drain_times(ts_env, min_drain_time: timedelta | None) -> list[tuple[datetime, datetime | None]]:
    """Run one termination whose drain always succeeds at once; each drain's start and `drained_not_before`."""
    drains: list[tuple[datetime, datetime | None]] = []

    @activity.defn(name="termination.prepare")
    async def prepare(inp: PrepareInput) -> PrepareResult:
        return PrepareResult(node_exists=True, node_claim_name="c", node_claim_exists=True, node_pool="default",
                             provider_id="aws:///us-east-1a/i-0abc", pods=[WEB], min_drain_time=min_drain_time)

    @activity.defn(name="termination.drain")
    async def drain(inp: DrainInput) -> DrainResult:
        drains.append((await ts_env.get_current_time(), inp.drained_not_before))
        return DrainResult(drained=True, evicted=1 if len(drains) == 1 else 0)

    uid = str(uuid.uuid4())
    inp = TerminationInput(node_name=f"n-{uid[:6]}", node_uid=uid, node_claim_name="c", node_pool="default",
                           provider_id="aws:///us-east-1a/i-0abc", reason="Drifted", requested_by="disrupt-x")
    tq = f"tq-{uuid.uuid4()}"
    async with Worker(ts_env.client, task_queue=tq, workflows=[TerminationWorkflow],
                      activities=[prepare, drain, *after_drain()]):
        handle = await ts_env.client.start_workflow(TerminationWorkflow.run, inp, id=workflow_id(uid), task_queue=tq)
        assert (await handle.result()).phase == TerminationPhase.TERMINATED
    return drains


@pytest.mark.parametrize(("setting", "hold"), [(None, MIN_DRAIN_TIME), (timedelta(seconds=40), timedelta(seconds=40))])
async def test_the_drain_is_held_to_the_workers_minimum(ts_env, setting, hold) -> None:
    drains = await _drain_times(ts_env, setting)
    assert len(drains) == 1  # the hold is the activity's wait, not a timer and a second drain
    began, floor = drains[0]
    assert floor is not None and hold - timedelta(seconds=1) <= floor - began <= hold


def test_the_timing_flags_default_to_what_they_were_and_parse_go_durations() -> None:
    default = worker.parse_args([])
    assert (default.min_drain_time, default.launch_timeout, default.sticky_queue_timeout) == (None, 60.0, 10.0)
    short = worker.parse_args(["--min-drain-time", "500ms", "--launch-timeout", "10s", "--sticky-queue-timeout", "1s"])
    assert (short.min_drain_time, short.launch_timeout, short.sticky_queue_timeout) == (0.5, 10.0, 1.0)
