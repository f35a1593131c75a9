"""The embedded nodeflow stack: Temporal dev server (with Web UI), moto (EC2 + SQS), the cluster simulator
and the worker with the planner schedule, all on loopback. Used by `nodeflow demo`, benchmarks and chaos tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from devstack.processes import MotoServer, TemporalDevServer, free_port

INTERRUPTION_QUEUE = "nodeflow-interruptions"


def _port_or_free(preferred: int | None) -> int:
    """The preferred port when it is free (7233/8233 in the demo, like the Temporal docs), else any."""
    import socket

    if preferred:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", preferred))
                return preferred
            except OSError:
                pass
    return free_port()


@dataclass
class StackOptions:
    workdir: Path
    scenario: Path | None = None
    time_scale: float = 0.1  # simulated durations (pod grace, kubelet delays) run 10x faster
    ready_delay: float = 20.0  # simulated seconds from instance running to Node Ready
    planner_every: timedelta = timedelta(seconds=10)
    validation_delay: float = 15.0
    ready_timeout: float = 600.0
    temporal_port: int | None = 7233
    ui_port: int | None = 8233
    headless_ui: bool = False
    sim_port: int | None = None
    interruption: bool = True
    planner: bool = True
    resync_seconds: float = 10.0
    provisioning: bool = False  # the worker's pending-pod intake (the demo turns it on)
    # the demo's AWS side for its EC2NodeClasses (devstack/demo_aws.py), resolved once before planning starts
    node_classes: bool = False
    env: dict[str, str] = field(default_factory=lambda: {
        "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"})


class Stack:
    """Start with `await stack.start()`, stop with `await stack.stop()` (or `async with`)."""

    def __init__(self, options: StackOptions) -> None:
        self.o = options
        self.o.workdir.mkdir(parents=True, exist_ok=True)
        self.temporal = TemporalDevServer(port=_port_or_free(options.temporal_port),
                                          ui_port=None if options.headless_ui else _port_or_free(options.ui_port),
                                          headless=options.headless_ui, db_path=options.workdir / "temporal.db",
                                          log_path=options.workdir / "temporal.log")
        self.moto = MotoServer(log_path=options.workdir / "moto.log")
        self.sim: Any = None
        self.client: Any = None
        self.queue_url: str | None = None
        self.ec2: Any = None
        self.sqs: Any = None
        self.aws: Any = None  # devstack.demo_aws.DemoAws when options.node_classes
        self._stop = asyncio.Event()
        self._worker_task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Stack:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def kubeconfig(self) -> str:
        return str(self.sim.kubeconfig_path)

    async def start(self) -> None:
        os.environ.update({k: v for k, v in self.o.env.items() if k not in os.environ})
        db = self.o.workdir / "temporal.db"
        db.unlink(missing_ok=True)
        await asyncio.gather(asyncio.to_thread(self.temporal.start), asyncio.to_thread(self.moto.start))
        from runtime.cloud_clients import ec2_client, sqs_client
        from simulator.server import Simulator

        self.ec2 = ec2_client("us-east-1", self.moto.endpoint)
        self.sqs = sqs_client("us-east-1", self.moto.endpoint)
        if self.o.interruption:
            self.queue_url = self.sqs.create_queue(QueueName=INTERRUPTION_QUEUE,
                                                   Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
        if self.o.node_classes:
            from devstack.demo_aws import DemoAws
            from runtime.cloud_clients import iam_client

            self.aws = await asyncio.to_thread(DemoAws(self.ec2, iam_client("us-east-1", self.moto.endpoint)).create)
        self.sim = Simulator(scenario=self.o.scenario, ec2_endpoint=self.moto.endpoint, time_scale=self.o.time_scale,
                             ready_delay=self.o.ready_delay, port=self.o.sim_port or 0,
                             kubeconfig_path=self.o.workdir / "kubeconfig")
        await asyncio.to_thread(self.sim.start)
        from client.connection import connect

        self.client = await connect(self.temporal.address, "default")
        await self.start_worker()
        from client.nodeclass_schedule import ensure_nodeclass_schedule

        await ensure_nodeclass_schedule(self.client)
        if self.o.node_classes:
            await self.resolve_node_classes()
        if self.o.planner:
            from client.planner_schedule import ensure_planner_schedule
            from workflows.disruption_models import DisruptionSettings

            await ensure_planner_schedule(self.client, every=self.o.planner_every, settings=DisruptionSettings(
                validation_delay_seconds=self.o.validation_delay, ready_timeout_seconds=self.o.ready_timeout,
                ready_poll_seconds=2.0))

    async def resolve_node_classes(self) -> Any:
        """One NodeClassWorkflow now, as the `nodeflow-nodeclass` Schedule runs it (its first run is up to a minute
        away): launches find the classes Ready from the first planner pass on."""
        from workflows import summaries
        from workflows.nodeclass import NodeClassWorkflow
        from workflows.nodeclass_models import NodeClassInput
        from workflows.search_attributes import TASK_QUEUE

        return await self.client.execute_workflow(NodeClassWorkflow.run, NodeClassInput(),
                                                  id=f"nodeflow-nodeclass-start-{uuid.uuid4().hex[:8]}",
                                                  task_queue=TASK_QUEUE, execution_timeout=timedelta(minutes=2),
                                                  **summaries.nodeclass_now().kwargs())

    async def start_worker(self) -> None:
        from devstack.demo_aws import CLUSTER_CA, CLUSTER_NAME
        from runtime.cloud_clients import iam_client, ssm_client
        from runtime.settings import Deps, Settings
        from runtime.worker_loop import run_worker

        api = self.sim.api_client()
        api.configuration.connection_pool_maxsize = 64
        deps = Deps(kube_api=api, ec2=self.ec2, sqs=self.sqs, temporal=self.client,
                    ssm=ssm_client("us-east-1", self.moto.endpoint), iam=iam_client("us-east-1", self.moto.endpoint),
                    settings=Settings(interruption_queue_url=self.queue_url, resync_seconds=self.o.resync_seconds,
                                      cluster_name=CLUSTER_NAME, cluster_endpoint=self.sim.base_url,
                                      cluster_ca=CLUSTER_CA, provisioning=self.o.provisioning))
        self._stop = asyncio.Event()
        self._worker_task = asyncio.create_task(run_worker(self.client, deps, self._stop), name="nodeflow-worker")

    async def stop_worker(self) -> None:
        self._stop.set()
        if self._worker_task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._worker_task, 20)
            self._worker_task = None

    async def stop(self) -> None:
        await self.stop_worker()
        if self.sim is not None:
            await asyncio.to_thread(self.sim.stop)
        await asyncio.gather(asyncio.to_thread(self.moto.stop), asyncio.to_thread(self.temporal.stop))

    def worker_failed(self) -> BaseException | None:
        t = self._worker_task
        if t is not None and t.done() and not t.cancelled():
            return t.exception()
        return None
