"""Running one worker process: the Temporal Worker on the task queue, the deletion watcher beside it, and the
interruption poller's bootstrap; `run_worker()` is what `worker.py`, the demo, the tests and the benchmarks run."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from api.catalog import current_catalog
from client.interruption import ensure_interruption_poller
from contracts.provisioning import ProvisioningSettings
from planning.provisioning.launch_templates import SWEEP_SECONDS
from runtime import karpenter_state
from runtime.activity_intake import ActivityIntake, IntakeGate
from runtime.activity_start_delay import StartDelay
from runtime.build_id import default_build_id
from runtime.capacity_buffers import BufferSettings, CapacityBufferController
from runtime.cluster_cache import ClusterCache
from runtime.cluster_view import ClusterView
from runtime.deletion_watcher import DeletionWatcher, WatcherSettings
from runtime.fleet_worker import build_fleet_worker
from runtime.leader import gate_controllers
from runtime.loop_lag import watch_lag
from runtime.nodeclaim_gc import GarbageCollector
from runtime.nodeclaim_lifecycle import KINDS, NodeClaimLifecycle
from runtime.nodepool_status import start_nodepool_status
from runtime.pending_index import cache_index
from runtime.pending_pods import (
    IntakeSettings,
    PendingPodIntake,
    listed_deleting,
    listed_pods,
)
from runtime.periodic import tick_until_stopped
from runtime.pod_deletion_cost import DeletionCostSettings, PodDeletionCostController
from runtime.settings import Deps, configure_scheduling
from runtime.wiring import activities, workflows

log = logging.getLogger(__name__)
Stop = Callable[[], Awaitable[Any]]  # stops one part started beside the worker and waits for it


def build_worker(client: Client, deps: Deps, task_queue: str | None = None) -> Worker:
    s = deps.settings
    intake = ActivityIntake(s.max_concurrent_activities)
    return Worker(
        client, task_queue=task_queue or s.task_queue, workflows=workflows(), activities=activities(deps),
        # threads start lazily; sizing it to the slot count keeps sync activities from queueing behind slots
        activity_executor=ThreadPoolExecutor(max_workers=max(s.activity_threads, s.max_concurrent_activities),
                                             thread_name_prefix="activity"),
        # the activity slots, granted only as fast as the loop begins tasks: runtime/activity_intake.py
        tuner=intake.tuner(workflow_slots=s.max_concurrent_workflow_tasks),
        graceful_shutdown_timeout=timedelta(seconds=5),
        # a workflow cached by a worker that died waits this long before another worker takes its next task
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=s.sticky_queue_timeout_seconds),
        # cancellation reaches an activity only with a heartbeat: keep force/cancel of a drain within ~2 s
        max_heartbeat_throttle_interval=timedelta(seconds=2),
        # named, not the SDK's hash of every loaded module (0.3 CPU-s of a start): runtime/build_id.py
        build_id=s.build_id or default_build_id(),
        interceptors=[StartDelay(), IntakeGate(intake)],  # nodeflow_activity_start_delay_seconds; the intake
    )


def use_io_threads(threads: int) -> None:
    """Give this event loop a default executor of `threads` threads. The async activities make their blocking
    Kubernetes and EC2 calls with asyncio.to_thread, whose default pool has min(32, CPUs + 4) threads: six on a
    2-core node, so a batch launching 140 NodeClaims ran six launches at a time and the last ones outlived their
    60 s start-to-close timeout (docs/decisions.md §13). Threads start lazily: an idle worker holds few."""
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(max_workers=threads, thread_name_prefix="io"))


def _start_watcher(client: Client, deps: Deps, task_queue: str) -> tuple[DeletionWatcher, asyncio.Task[None]]:
    cache = deps.cluster.cache if deps.cluster is not None else None  # its events and reads, no watches of its own
    watcher = DeletionWatcher(deps.kube, client, WatcherSettings(task_queue=task_queue,
                                                                 resync_seconds=deps.settings.resync_seconds),
                              cache=cache)
    return watcher, asyncio.create_task(watcher.run(), name="deletion-watcher")


def _start_lifecycle(deps: Deps) -> tuple[list[Any], list[asyncio.Task[None]], Any]:
    """The NodeClaim lifecycle controller and garbage collection, on the worker's watch cache (or their own)."""
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
    status, status_task = start_nodepool_status(deps.kube, cache, s.lifecycle_settings,  # NodePool status
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
    """The pending-pod intake reads the watch cache's candidate index (runtime/pending_index.py) when the worker has
    a cache, else LISTs pods."""
    s = deps.settings
    index = cache_index(deps.cluster) if deps.cluster is not None else None
    cached = {} if index is None else {"candidates": index.candidates, "notes": index.notes,
                                       "ready_nodes": index.ready_nodes}  # without a cache: the intake's defaults
    intake = PendingPodIntake(listed_pods(deps.kube), client, IntakeSettings(
        task_queue=task_queue, idle_seconds=s.batch_idle_seconds, max_seconds=s.batch_max_seconds,
        workflow=ProvisioningSettings(launch_timeout_seconds=s.launch_timeout_seconds)),
        deleting=listed_deleting(deps.kube), **cached)
    return intake, asyncio.create_task(intake.run(), name="pending-pod-intake")


def _start_buffers(client: Client, deps: Deps, task_queue: str) -> list[Stop]:
    """The CapacityBuffer controller (runtime/capacity_buffers.py), on the worker's watch cache: without one it
    would LIST every pod each tick, so a worker run with the cache off keeps no buffer headroom (its status says
    nothing either; docs/semantics.md §20)."""
    if deps.cluster is None:
        return []
    s = deps.settings
    controller = CapacityBufferController(
        deps.kube, deps.cluster, client, lambda: current_catalog(deps.catalog_source),
        BufferSettings(task_queue=task_queue, interval_seconds=s.capacity_buffer_seconds, workflow=ProvisioningSettings(
            launch_timeout_seconds=s.launch_timeout_seconds)))
    return [_stopper([asyncio.create_task(controller.run(), name="capacity-buffers")], controller.stop)]


def _start_template_sweep(deps: Deps) -> list[Stop]:
    """Every worker process, leader or not, sweeps the launch templates its own launches made: each keeps its own
    book (activities/launch_templates.py), as each Karpenter process keeps its cache."""
    templates = deps.launch_templates
    if templates is None or deps.settings.launch_api != "fleet":
        return []
    stop = asyncio.Event()
    task = asyncio.create_task(tick_until_stopped(lambda: asyncio.to_thread(templates.sweep), stop, SWEEP_SECONDS,
                                                  "launch template sweep"), name="launch-template-sweep")
    return [_stopper([task], stop.set, cancel=False)]


def _hydrate_templates(deps: Deps) -> list[Stop]:
    """The leader books the cluster's launch templates in EC2 once, so its sweeps delete those a stopped process
    left (Karpenter hydrates its cache when elected)."""
    templates = deps.launch_templates
    if templates is None or deps.settings.launch_api != "fleet":
        return []

    async def hydrate() -> None:
        try:
            await asyncio.to_thread(templates.hydrate)
        except Exception as exc:  # the sweeps still delete what this process's launches made
            log.warning("launch templates not booked from EC2: %s", exc)

    return [_stopper([asyncio.create_task(hydrate(), name="launch-template-hydrate")])]


def _stopper(tasks: list[asyncio.Task[None]], *stops: Callable[[], Any], cancel: bool = True) -> Stop:
    """How to stop one part: tell it (`stops`), cancel its tasks unless it ends them itself, wait for them."""
    async def stop() -> None:
        for tell in stops:
            tell()
        if cancel:
            for task in tasks:
                task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    return stop


def _start_optional(client: Client, deps: Deps, task_queue: str) -> list[Stop]:
    """Start the parts beside the Temporal worker that the settings turn on; returns how to stop each, in the order
    to call them: the state gauges read the lifecycle's own cache (when it has one), so that cache stops last."""
    s = deps.settings
    stops: list[Stop] = []
    if s.watch:
        watcher, watcher_task = _start_watcher(client, deps, task_queue)
        stops.append(_stopper([watcher_task], watcher.stop))
    if s.provisioning:
        intake, intake_task = _start_intake(client, deps, task_queue)
        stops.append(_stopper([intake_task], intake.stop, cancel=False))  # the intake ends its own task
        stops += _start_buffers(client, deps, task_queue)
    own_cache = None
    if s.lifecycle:
        controllers, controller_tasks, own_cache = _start_lifecycle(deps)
        stops.append(_stopper(controller_tasks, *(c.stop for c in controllers)))
    cluster = deps.cluster
    state_source, state_task = _start_karpenter_state(cluster.cache if cluster is not None else own_cache)
    if state_source is not None and state_task is not None:
        stops.append(_stopper([state_task], lambda: karpenter_state.STATE.detach(state_source)))
    stops += _start_deletion_cost(deps)
    stops += _hydrate_templates(deps)
    if own_cache is not None:
        stops.append(lambda: asyncio.to_thread(own_cache.stop))
    return stops


def _start_deletion_cost(deps: Deps) -> list[Stop]:
    """The pod deletion-cost controller (runtime/pod_deletion_cost.py) on the worker's watch cache, or its own when
    the gate is on and the worker has none; with the gate off, its one cleanup run (only on the worker's cache: a
    worker without one does not list every pod to find none)."""
    s = deps.settings
    view, own = deps.cluster, None
    if view is None and not s.pod_deletion_cost:
        return []
    if view is None:
        view = own = ClusterView(ClusterCache(deps.kube_api))
        own.start()
    # the catalog is asked at each ranking, so the cleanup (which ranks nothing) never builds one
    controller = PodDeletionCostController(deps.kube, view, lambda: current_catalog(deps.catalog_source),
                                           DeletionCostSettings(interval_seconds=s.pod_deletion_cost_seconds,
                                                                cleanup=not s.pod_deletion_cost))
    stops = [_stopper([asyncio.create_task(controller.run(), name="pod-deletion-cost")], controller.stop)]
    if own is not None:
        stops.append(lambda: asyncio.to_thread(own.stop))
    return stops


def _start_workers(client: Client, worker: Worker, fleet_task_queue: str | None,
                   sticky_seconds: float, build_id: str | None = None) -> dict[asyncio.Task[None], Worker]:
    """Run the cluster's Temporal worker and, with a `fleet_task_queue`, the fleet's beside it (docs/fleet.md)."""
    workers = {asyncio.create_task(worker.run(), name="temporal-worker"): worker}
    if fleet_task_queue:
        fleet = build_fleet_worker(client, fleet_task_queue, sticky_seconds, build_id)
        workers[asyncio.create_task(fleet.run(), name="fleet-worker")] = fleet
    return workers


async def _until_stopped(stop: asyncio.Event, workers: dict[asyncio.Task[None], Worker]) -> None:
    """Wait until `stop` is set or a worker ends; a worker that ended raises here (a worker died: surface why)."""
    stop_task = asyncio.create_task(stop.wait())
    try:
        done, _ = await asyncio.wait({stop_task, *workers}, return_when=asyncio.FIRST_COMPLETED)
        for task in done & workers.keys():
            task.result()
    finally:
        stop_task.cancel()


async def _shutdown_workers(workers: dict[asyncio.Task[None], Worker]) -> None:
    """Shut the workers down gracefully, the last started first (the fleet's, then the cluster's)."""
    for task, worker in reversed(workers.items()):
        if not task.done():
            await worker.shutdown()
        await asyncio.gather(task, return_exceptions=True)


async def run_worker(client: Client, deps: Deps, stop: asyncio.Event, task_queue: str | None = None) -> None:
    """Run the worker (and the watcher) until `stop` is set; then shut both down gracefully. The cluster cache
    starts first, so its LISTs run while the worker connects; passes wait for it (activities/planning_runner.py)."""
    deps.temporal = deps.temporal or client
    configure_scheduling(deps.settings)  # the default topology spread every simulation applies
    use_io_threads(deps.settings.io_threads)
    queue = task_queue or deps.settings.task_queue
    cluster = deps.cluster
    if cluster is not None:
        cluster.start()
    worker = build_worker(client, deps, queue)
    stops = gate_controllers(deps, lambda: _start_optional(client, deps, queue))  # only the leader's, if elected
    stops += _start_template_sweep(deps)
    stops.append(_stopper([asyncio.create_task(watch_lag(), name="event-loop-lag")]))
    workers = _start_workers(client, worker, deps.settings.fleet_task_queue,
                             deps.settings.sticky_queue_timeout_seconds, deps.settings.build_id)
    if deps.settings.interruption_queue_url:
        await ensure_interruption_poller(client, queue, deps.settings.interruption_poll)
    try:
        await _until_stopped(stop, workers)
    finally:
        for stop_part in stops:
            await stop_part()
        await _shutdown_workers(workers)
        if cluster is not None:
            await asyncio.to_thread(cluster.stop)
