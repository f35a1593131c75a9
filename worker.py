"""The nodeflow worker: `python worker.py` in-cluster, `run_worker()` in-process for tests, demo and benchmarks.

One Temporal Worker on task queue `nodeflow` runs every workflow and activity; the deletion watcher runs
next to it as an asyncio task. To add workflows or activities, append to WORKFLOWS / ACTIVITY_FACTORIES.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from activities.cloud import CloudActivities
from activities.disruption_wiring import disruption_activities
from activities.kube import KubeActivities
from activities.kube_client import KubeClient
from activities.watcher import DeletionWatcher, WatcherSettings
from workflows.disruption import DisruptionWorkflow
from workflows.interruption import InterruptionPollerWorkflow, SpotPrespinWorkflow
from workflows.planner import PlannerWorkflow
from workflows.search_attributes import TASK_QUEUE
from workflows.termination import TerminationWorkflow

log = logging.getLogger("nodeflow.worker")


@dataclass
class Settings:
    task_queue: str = TASK_QUEUE
    watch: bool = True  # run the deletion watcher
    resync_seconds: float = 30.0
    max_concurrent_activities: int = 500
    max_concurrent_workflow_tasks: int = 100
    activity_threads: int = 32  # for sync activities; async ones offload to their own pools
    interruption_queue_url: str | None = None  # SQS queue of EventBridge interruption events; None: no intake
    interruption_poll: Any = None  # workflows.interruption_models.PollInput; None: production defaults
    catalog_path: str | None = None  # instance type catalog for spot pre-spin; None: the bundled one
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Deps:
    """Clients the activities get in their constructors (built once per worker process)."""

    kube_api: Any  # kubernetes.client.ApiClient
    ec2: Any  # boto3 EC2 client
    sqs: Any = None
    temporal: Client | None = None
    settings: Settings = field(default_factory=Settings)
    _cache: dict[str, Any] = field(default_factory=dict)

    @property
    def kube(self) -> KubeClient:
        if "kube" not in self._cache:
            self._cache["kube"] = KubeClient(self.kube_api)
        return self._cache["kube"]


def _termination_activities(deps: Deps) -> list[Callable[..., Any]]:
    return [*KubeActivities(deps.kube).all(), *CloudActivities(deps.ec2).all()]


def _interruption_activities(deps: Deps) -> list[Callable[..., Any]]:
    if not deps.settings.interruption_queue_url or deps.temporal is None:
        return []
    from starter.interruption import catalog_from, interruption_activities

    kube = deps.kube
    return interruption_activities(kube.core, kube.custom, deps.sqs, deps.settings.interruption_queue_url,
                                   deps.temporal, deps.settings.task_queue, catalog_from(deps.settings.catalog_path))


# Other areas append their workflow classes and activity factories (deps -> bound activity methods) here.
WORKFLOWS: list[type] = [TerminationWorkflow, InterruptionPollerWorkflow, SpotPrespinWorkflow, PlannerWorkflow,
                         DisruptionWorkflow]
ACTIVITY_FACTORIES: list[Callable[[Deps], Sequence[Callable[..., Any]]]] = [_termination_activities,
                                                                             _interruption_activities,
                                                                             disruption_activities]


def workflows() -> list[type]:
    return list(WORKFLOWS)


def activities(deps: Deps) -> list[Callable[..., Any]]:
    return [act for factory in ACTIVITY_FACTORIES for act in factory(deps)]


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


async def run_worker(client: Client, deps: Deps, stop: asyncio.Event, task_queue: str | None = None) -> None:
    """Run the worker (and the watcher) until `stop` is set; then shut both down gracefully."""
    deps.temporal = deps.temporal or client
    worker = build_worker(client, deps, task_queue)
    watcher_task: asyncio.Task[None] | None = None
    watcher: DeletionWatcher | None = None
    if deps.settings.watch:
        watcher = DeletionWatcher(deps.kube, client, WatcherSettings(task_queue=task_queue or deps.settings.task_queue,
                                                                     resync_seconds=deps.settings.resync_seconds))
        watcher_task = asyncio.create_task(watcher.run(), name="deletion-watcher")
    worker_task = asyncio.create_task(worker.run(), name="temporal-worker")
    if deps.settings.interruption_queue_url:
        from starter.interruption import ensure_interruption_poller

        await ensure_interruption_poller(client, task_queue or deps.settings.task_queue,
                                         deps.settings.interruption_poll)
    stop_task = asyncio.create_task(stop.wait())
    try:
        done, _ = await asyncio.wait({worker_task, stop_task}, return_when=asyncio.FIRST_COMPLETED)
        if worker_task in done:
            worker_task.result()  # the worker died: surface why
    finally:
        if watcher is not None:
            watcher.stop()
        if watcher_task is not None:
            watcher_task.cancel()
            await asyncio.gather(watcher_task, return_exceptions=True)
        stop_task.cancel()
        if not worker_task.done():
            await worker.shutdown()
        await asyncio.gather(worker_task, return_exceptions=True)


# ---- process entry point ---------------------------------------------------------------------------------


_STANDARD_RECORD_FIELDS = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line, with the `extra=` fields (node, workflow_id, reason...) as keys."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {"time": self.formatTime(record), "level": record.levelname, "logger": record.name,
                               "msg": record.getMessage()}
        for key, value in vars(record).items():
            if key not in _STANDARD_RECORD_FIELDS and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def kube_api_client(kubeconfig: str | None, pool_size: int = 64) -> Any:
    """In-cluster config when running in a pod and no kubeconfig is given, else the kubeconfig."""
    from kubernetes import client as k8s
    from kubernetes import config as k8s_config

    cfg = k8s.Configuration()
    if kubeconfig or not os.environ.get("KUBERNETES_SERVICE_HOST"):
        k8s_config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    else:
        k8s_config.load_incluster_config(client_configuration=cfg)
    cfg.connection_pool_maxsize = pool_size
    return k8s.ApiClient(cfg)


def ec2_client(region: str | None, endpoint: str | None) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client("ec2", region_name=region, endpoint_url=endpoint,
                        config=Config(retries={"max_attempts": 5, "mode": "standard"}, max_pool_connections=32))


def sqs_client(region: str | None, endpoint: str | None) -> Any:
    import boto3

    return boto3.client("sqs", region_name=region, endpoint_url=endpoint)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    env = os.environ.get
    p = argparse.ArgumentParser(prog="worker.py", description="Run the nodeflow Temporal worker and watcher.")
    p.add_argument("--address", default=env("NODEFLOW_TEMPORAL_ADDRESS"), help="Temporal host:port")
    p.add_argument("--namespace", default=env("NODEFLOW_TEMPORAL_NAMESPACE"), help="Temporal namespace")
    p.add_argument("--api-key", default=env("NODEFLOW_TEMPORAL_API_KEY"), help="Temporal Cloud API key")
    p.add_argument("--tls-cert", default=env("NODEFLOW_TEMPORAL_TLS_CERT"))
    p.add_argument("--tls-key", default=env("NODEFLOW_TEMPORAL_TLS_KEY"))
    p.add_argument("--tls-ca", default=env("NODEFLOW_TEMPORAL_TLS_CA"))
    p.add_argument("--task-queue", default=env("NODEFLOW_TASK_QUEUE", TASK_QUEUE))
    p.add_argument("--kubeconfig", default=env("KUBECONFIG"), help="default: in-cluster config")
    p.add_argument("--region", default=env("AWS_REGION") or env("AWS_DEFAULT_REGION") or "us-east-1")
    p.add_argument("--ec2-endpoint", default=env("NODEFLOW_EC2_ENDPOINT"), help="e.g. a moto_server URL")
    p.add_argument("--sqs-endpoint", default=env("NODEFLOW_SQS_ENDPOINT"))
    p.add_argument("--no-watch", action="store_true", help="do not run the deletion watcher")
    p.add_argument("--resync-seconds", type=float, default=float(env("NODEFLOW_RESYNC_SECONDS", "30")))
    p.add_argument("--log-level", default=env("NODEFLOW_LOG_LEVEL", "INFO"))
    p.add_argument("--interruption-queue", default=env("NODEFLOW_INTERRUPTION_QUEUE"),
                   help="SQS queue URL of EventBridge interruption events (unset: no interruption handling)")
    p.add_argument("--catalog", default=env("NODEFLOW_CATALOG"), help="instance type catalog YAML (default: bundled)")
    p.add_argument("--metrics-port", type=int, default=int(env("NODEFLOW_METRICS_PORT", "0")),
                   help="serve /healthz, /readyz and /metrics on this port (0: off)")
    p.add_argument("--ami-id", default=env("NODEFLOW_AMI_ID"),
                   help="AMI for replacement instances (default: discovered with DescribeImages)")
    return p.parse_args(argv)


async def amain(args: argparse.Namespace) -> int:
    from starter.temporal import connect

    client = await connect(args.address, args.namespace, api_key=args.api_key, tls_cert=args.tls_cert,
                           tls_key=args.tls_key, tls_ca=args.tls_ca)
    settings = Settings(task_queue=args.task_queue, watch=not args.no_watch, resync_seconds=args.resync_seconds,
                        interruption_queue_url=args.interruption_queue, catalog_path=args.catalog)
    if args.ami_id:
        settings.extra["ami_id"] = args.ami_id
    deps = Deps(kube_api=kube_api_client(args.kubeconfig), ec2=ec2_client(args.region, args.ec2_endpoint),
                sqs=sqs_client(args.region, args.sqs_endpoint or args.ec2_endpoint), temporal=client,
                settings=settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    health = None
    if args.metrics_port:
        from activities.health import start_health_server

        health = await start_health_server(args.metrics_port, checks={"temporal": client.service_client.check_health})
    from starter.schedule import ensure_planner_schedule

    every = timedelta(seconds=float(os.environ.get("NODEFLOW_PLANNER_SECONDS", "10")))
    await ensure_planner_schedule(client, every=every, task_queue=settings.task_queue)  # idempotent; keeps a pause
    log.info("worker started", extra={"task_queue": settings.task_queue, "watch": settings.watch})
    try:
        await run_worker(client, deps, stop)
    finally:
        if health is not None:
            await health.stop()
    log.info("worker stopped")
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    logging.basicConfig(level=args.log_level.upper(), handlers=[handler])
    profile_path = os.environ.get("NODEFLOW_PROFILE")  # write cProfile stats here at shutdown (benchmarks)
    if profile_path:
        import cProfile

        profiler = cProfile.Profile()
        code = profiler.runcall(asyncio.run, amain(args))
        profiler.dump_stats(profile_path)
    else:
        code = asyncio.run(amain(args))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # avoids the SDK's interpreter-exit crash (sdk-python#300)


if __name__ == "__main__":
    main()
