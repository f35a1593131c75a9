"""The planner pass on the worker's watch cache: it decides what a LIST pass decides without LISTing again, and a
stale cache is never planned on: the attempt fails retryably (Temporal retries it, on any worker) and the last
attempt skips the pass with the reason, so the PlannerWorkflow completes either way.

Real parts: the simulator over HTTP, the Temporal dev server (visibility; the workflow and its retries)."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment
from temporalio.worker import Worker

import activities.planning_runner as runner
from activities.planning_runner import PlanningActivities
from contracts.disruption import (
    DisruptionSettings,
    PassSkipped,
    PlannerInput,
    PlanPassInput,
    ValidateInput,
)
from contracts.errors import ErrorType
from gateways.kube import KubeClient
from runtime.cluster_cache import KINDS, ClusterCache
from runtime.cluster_view import ClusterView
from runtime.informer import CacheSettings
from simulator.generate import generate_cluster
from simulator.server import Simulator
from telemetry.metrics import REGISTRY
from workflows.planner import PlannerWorkflow

FAST = CacheSettings(watch_timeout_seconds=30, connect_timeout_seconds=5, list_timeout_seconds=10,
                     backoff_base_seconds=0.05, backoff_cap_seconds=0.4, min_stream_seconds=0.2)


@pytest.fixture
def view(k8s: Any) -> Iterator[ClusterView]:
    v = ClusterView(ClusterCache(k8s, FAST))
    try:
        yield v
    finally:
        v.stop()


@pytest.fixture
def quick_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "CACHE_WAIT_SECONDS", 0.1)


def _skips(reason: str, outcome: str) -> float:
    return REGISTRY.get_sample_value("nodeflow_planner_passes_skipped_total",
                                     {"reason": reason, "outcome": outcome}) or 0.0


async def test_cache_pass_decides_like_a_list_pass_without_listing(sim: Simulator, k8s: Any, view: ClusterView,
                                                                   temporal_client: Client) -> None:
    sim.load_objects(generate_cluster(20, 8, seed=5))
    view.start()
    at = datetime.now(UTC)
    kube = KubeClient(k8s)
    listed = await ActivityEnvironment().run(PlanningActivities(kube, temporal_client).plan_pass, PlanPassInput(at=at))
    cached = PlanningActivities(kube, temporal_client, cluster=view)
    results = [await ActivityEnvironment().run(cached.plan_pass, PlanPassInput(at=at)) for _ in range(3)]
    assert listed.commands and listed.skipped is None
    for r in results:
        assert r.model_dump() == listed.model_dump()
    assert view.cache.counters().lists == len(KINDS)  # one LIST per kind at start, none per pass
    assert view.reparsed == 0  # the steady passes reused every parsed pod


async def test_stale_cache_fails_retryably_then_skips(k8s: Any, view: ClusterView, temporal_client: Client,
                                                      quick_wait: None) -> None:
    planning = PlanningActivities(KubeClient(k8s), temporal_client, cluster=view)  # never started: not synced
    env = ActivityEnvironment()
    before = _skips("NotSynced", "retried"), _skips("NotSynced", "skipped")
    with pytest.raises(ApplicationError) as err:
        await env.run(planning.plan_pass, PlanPassInput(at=datetime.now(UTC)))
    assert err.value.type == ErrorType.CLUSTER_CACHE_NOT_READY and not err.value.non_retryable
    env.info = dataclasses.replace(env.info, attempt=runner.CACHE_ATTEMPTS)
    result = await env.run(planning.plan_pass, PlanPassInput(at=datetime.now(UTC)))
    assert result.skipped is PassSkipped.NOT_SYNCED and "NotSynced" in result.skipped_detail
    assert not result.commands and not result.expirations
    assert (_skips("NotSynced", "retried"), _skips("NotSynced", "skipped")) == (before[0] + 1, before[1] + 1)

    from support.disruption_fakes import command
    verdict = await env.run(planning.validate_command, ValidateInput(command=command(n=1), at=datetime.now(UTC),
                                                                     own_workflow_id="disrupt-x"))
    assert not verdict.valid and "cluster cache not fresh" in verdict.reason


async def _run_planner(client: Client, planning: PlanningActivities) -> list[int]:
    """One PlannerWorkflow on a real worker; the attempts its plan_pass took (from the history)."""
    tq = f"tq-{uuid.uuid4()}"
    async with Worker(client, task_queue=tq, workflows=[PlannerWorkflow], activities=[planning.plan_pass]):
        handle = await client.start_workflow(PlannerWorkflow.run, PlannerInput(settings=DisruptionSettings()),
                                             id=f"planner-{uuid.uuid4()}", task_queue=tq)
        result = await asyncio.wait_for(handle.result(), 60)
        assert result.started == [] and result.terminations == []
        return [e.activity_task_started_event_attributes.attempt async for e in handle.fetch_history_events()
                if e.HasField("activity_task_started_event_attributes")]


async def test_planner_workflow_retries_until_the_cache_is_warm(k8s: Any, view: ClusterView,
                                                                temporal_client: Client, quick_wait: None) -> None:
    """A worker whose cache syncs after the pass began (a new replica during a rollout): the failed attempt is
    retried by Temporal and plans once the cache is warm; the workflow never fails. (An empty cluster: the pass
    starts no child workflows this worker does not run.)"""
    planning = PlanningActivities(KubeClient(k8s), temporal_client, cluster=view)
    retried = _skips("NotSynced", "retried")

    async def warm_after_first_failure() -> None:
        while _skips("NotSynced", "retried") == retried:
            await asyncio.sleep(0.05)
        view.start()

    warming = asyncio.create_task(warm_after_first_failure())
    attempts = await _run_planner(temporal_client, planning)
    await warming
    assert attempts and attempts[-1] >= 2  # the pass completed on a retry


async def test_planner_workflow_completes_skipped_when_the_cache_never_warms(
        k8s: Any, view: ClusterView, temporal_client: Client, quick_wait: None) -> None:
    planning = PlanningActivities(KubeClient(k8s), temporal_client, cluster=view)  # never started
    skipped = _skips("NotSynced", "skipped")
    attempts = await _run_planner(temporal_client, planning)
    assert attempts == [runner.CACHE_ATTEMPTS]  # the history records the last attempt's start
    assert _skips("NotSynced", "skipped") == skipped + 1
