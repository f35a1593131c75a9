"""Running one worker process: the Temporal Worker on the task queue, the deletion watcher beside it, and the
interruption poller's bootstrap; `run_worker()` is what `worker.py`, the demo, the tests and the benchmarks run."""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from client.interruption import ensure_interruption_poller
from runtime import karpenter_state
from runtime.deletion_watcher import DeletionWatcher, WatcherSettings
from runtime.fleet_worker import build_fleet_worker
from runtime.pending_pods import IntakeSettings, PendingPodIntake, cache_pods, listed_pods
from runtime.settings import Deps
from runtime.wiring import activities, workflows

log = logging.getLogger(__name__)


def build_worker(client: Client, deps: Deps, task_queue: str | None = None) -> Worker:
    s = deps.settings
    return Worker(
        client, task_queue=task_queue or s.task_queue, workflows=workflows(), activities=activities(deps),
        # threads start lazily; sizing it to the slot count keeps sync activities from queueing behind slots
        activity_executor=ThreadPoolExecutor(max_workers=max(s.activity_threads, s.max_concurrent_activities),
                                             thread_name_prefix="activity"),
        max_concurrent_activities=s.max_concurrent_activities,
        max_concurrent_workflow_tasks=s.max_concurrent_workflow_tasks,
        graceful_shutdown_timeout=timedelta(seconds=5),
        # cancellation reaches an activity only with a heartbeat: keep force/cancel of a drain within ~2 s
        max_heartbeat_throttle_interval=timedelta(seconds=2),
    )


def use_io_threads(threads: int) -> None:
    """Give this event loop a default executor of `threads` threads. The async activities make their blocking
    Kubernetes and EC2 calls with asyncio.to_thread, whose default pool has min(32, CPUs + 4) threads: six on a
    2-core node, so a batch launching 140 NodeClaims ran six launches at a time and the last ones outlived their
    60 s start-to-close timeout (docs/decisions.md §13). Threads start lazily: an idle worker holds few."""
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(max_workers=threads, thread_name_prefix="io"))


def _start_watcher(client: Client, deps: Deps, task_queue: str) -> tuple[DeletionWatcher, asyncio.Task[None]]:
    watcher = DeletionWatcher(deps.kube, client, WatcherSettings(task_queue=task_queue,
                                                                 resync_seconds=deps.settings.resync_seconds))
    return watcher, asyncio.create_task(watcher.run(), name="deletion-watcher")


def _start_lifecycle(deps: Deps) -> tuple[list[Any], list[asyncio.Task[None]], Any]:
    """The NodeClaim lifecycle controller and garbage collection, on the worker's watch cache (or their own)."""
    from api.catalog import current_catalog
    from runtime.cluster_cache import ClusterCache
    from runtime.nodeclaim_gc import GarbageCollector
    from runtime.nodeclaim_lifecycle import KINDS, NodeClaimLifecycle
    from runtime.nodepool_status import start_nodepool_status

    s = deps.settings
    own = None
    if deps.cluster is not None:
        cache = deps.cluster.cache
    else:
        cache = own = ClusterCache(deps.kube_api, kinds=KINDS)
        own.start()
    source = deps.catalog_source  # the discovered catalog in force at each read, or a fixed one
    lifecycle = NodeClaimLifecycle(deps.kube, cache, deps.ec2, lambda: current_catalog(source), s.lifecycle_settings)
    gc = GarbageCollector(deps.kube, cache, deps.ec2, s.cluster_name, s.gc_settings)
    tasks = [asyncio.create_task(lifecycle.run(), name="nodeclaim-lifecycle"),
             asyncio.create_task(gc.run(), name="nodeclaim-gc")]
    status, status_task = start_nodepool_status(deps.kube, cache, s.lifecycle_settings,  # NodePool status (#25)
                                                lambda: current_catalog(source))
    return [lifecycle, gc, status], [*tasks, status_task], own


def _start_karpenter_state(cache: Any) -> tuple[Any, asyncio.Task[None] | None]:
    """Karpenter's state gauges read this worker's watch cache when scraped (runtime/karpenter_state.py); a tick
    every 5 s remembers pods seen pending, so a pod's startup is observed even if it started between scrapes."""
    if cache is None:
        return None, None
    source = karpenter_state.cache_source(cache)
    karpenter_state.STATE.attach(source)

    async def tick() -> None:
        while True:
            await asyncio.sleep(5)  # Karpenter's metrics controllers requeue every 5 s
            try:
                await asyncio.to_thread(karpenter_state.STATE.tick)
            except Exception as exc:  # metrics are best effort; never end the worker over them
                log.debug("karpenter state tick failed: %s", exc)

    return source, asyncio.create_task(tick(), name="karpenter-state")


def _start_intake(client: Client, deps: Deps, task_queue: str) -> tuple[PendingPodIntake, asyncio.Task[None]]:
    """The pending-pod intake reads the watch cache when the worker has one, else LISTs pods."""
    s = deps.settings
    pods = cache_pods(deps.cluster) if deps.cluster is not None else listed_pods(deps.kube)
    intake = PendingPodIntake(pods, client, IntakeSettings(task_queue=task_queue, idle_seconds=s.batch_idle_seconds,
                                                           max_seconds=s.batch_max_seconds))
    return intake, asyncio.create_task(intake.run(), name="pending-pod-intake")


async def run_worker(client: Client, deps: Deps, stop: asyncio.Event, task_queue: str | None = None) -> None:
    """Run the worker (and the watcher) until `stop` is set; then shut both down gracefully. The cluster cache
    starts first, so its LISTs run while the worker connects; passes wait for it (activities/planning_runner.py)."""
    deps.temporal = deps.temporal or client
    use_io_threads(deps.settings.io_threads)
    queue = task_queue or deps.settings.task_queue
    cluster = deps.cluster
    if cluster is not None:
        cluster.start()
    worker = build_worker(client, deps, queue)
    watcher, watcher_task = _start_watcher(client, deps, queue) if deps.settings.watch else (None, None)
    intake, intake_task = _start_intake(client, deps, queue) if deps.settings.provisioning else (None, None)
    controllers, controller_tasks, own_cache = _start_lifecycle(deps) if deps.settings.lifecycle else ([], [], None)
    state_source, state_task = _start_karpenter_state(cluster.cache if cluster is not None else own_cache)
    worker_task = asyncio.create_task(worker.run(), name="temporal-worker")
    fleet = build_fleet_worker(client, deps.settings.fleet_task_queue) if deps.settings.fleet_task_queue else None
    fleet_task = asyncio.create_task(fleet.run(), name="fleet-worker") if fleet is not None else None
    if deps.settings.interruption_queue_url:
        await ensure_interruption_poller(client, queue, deps.settings.interruption_poll)
    stop_task = asyncio.create_task(stop.wait())
    try:
        running = {worker_task, stop_task, *([fleet_task] if fleet_task is not None else [])}
        done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
        for task in done & {worker_task, fleet_task}:
            task.result()  # a worker died: surface why
    finally:
        if watcher is not None and watcher_task is not None:
            watcher.stop()
            watcher_task.cancel()
            await asyncio.gather(watcher_task, return_exceptions=True)
        if intake is not None and intake_task is not None:
            intake.stop()
            await asyncio.gather(intake_task, return_exceptions=True)
        for controller in controllers:
            controller.stop()
        for task in controller_tasks:
            task.cancel()
        await asyncio.gather(*controller_tasks, return_exceptions=True)
        if state_source is not None and state_task is not None:
            karpenter_state.STATE.detach(state_source)
            state_task.cancel()
            await asyncio.gather(state_task, return_exceptions=True)
        if own_cache is not None:
            await asyncio.to_thread(own_cache.stop)
        stop_task.cancel()
        if fleet is not None and fleet_task is not None:
            if not fleet_task.done():
                await fleet.shutdown()
            await asyncio.gather(fleet_task, return_exceptions=True)
        if not worker_task.done():
            await worker.shutdown()
        await asyncio.gather(worker_task, return_exceptions=True)
        if cluster is not None:
            await asyncio.to_thread(cluster.stop)
