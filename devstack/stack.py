"""The embedded nodeflow stack: Temporal dev server (with Web UI), moto (EC2 + SQS), the cluster simulator
and the worker with the planner schedule, all on loopback. Used by `nodeflow demo`, benchmarks and chaos tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from api.catalog import load_default_catalog
from client.connection import connect
from client.nodeclass_schedule import ensure_nodeclass_schedule
from client.planner_schedule import ensure_planner_schedule
from contracts.disruption import DisruptionSettings
from contracts.nodeclass import NodeClassInput
from contracts.search_attributes import TASK_QUEUE
from devstack.demo_aws import CLUSTER_CA, CLUSTER_NAME, DemoAws, region_zones
from devstack.processes import MotoServer, TemporalDevServer, free_port
from runtime.cloud_clients import ec2_client, iam_client, pricing_client, sqs_client, ssm_client
from runtime.settings import Deps, Settings
from runtime.worker_loop import run_worker
from simulator.server import Simulator
from workflows import summaries
from workflows.nodeclass import NodeClassWorkflow

if TYPE_CHECKING:
    from simulator.scheduler_timing import SchedulerTiming

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
    # the emulated kube-scheduler's timing (simulator.scheduler_timing.SchedulerTiming); None: a real cluster's
    scheduler_timing: SchedulerTiming | None = None
    sim_seed: int | None = 0  # seeds the kubelets' jittered ready and pod start delays
    region: str = "us-east-1"  # of every AWS client, the simulator's EC2 world and the demo's subnets
    # the worker discovers the region's instance types, offerings and prices (the bundled catalog is us-east-1's);
    # start() returns once the first discovery is in force
    discover_instance_types: bool = False
    # builds the scenario from the region's zones (devstack.demo_aws.region_zones) once moto runs; else `scenario`
    scenario_for_zones: Callable[[tuple[str, ...]], Path] | None = None
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
        self.zones: tuple[str, ...] = ()  # the demo's zones of the region (devstack.demo_aws.region_zones)
        self.deps: Any = None  # the worker's runtime.settings.Deps
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
        await asyncio.to_thread(self._start_aws)
        scenario = self.o.scenario_for_zones(self.zones) if self.o.scenario_for_zones else self.o.scenario
        self.sim = Simulator(scenario=scenario, ec2_endpoint=self.moto.endpoint, time_scale=self.o.time_scale,
                             ready_delay=self.o.ready_delay, port=self.o.sim_port or 0,
                             kubeconfig_path=self.o.workdir / "kubeconfig", region=self.o.region,
                             scheduler_timing=self.o.scheduler_timing, seed=self.o.sim_seed)
        await asyncio.to_thread(self.sim.start)
        self.client = await connect(self.temporal.address, "default")
        await self.start_worker()
        if self.o.discover_instance_types:
            await self.wait_for_instance_types()
        await ensure_nodeclass_schedule(self.client)
        if self.o.node_classes:
            await self.resolve_node_classes()
        if self.o.planner:
            await ensure_planner_schedule(self.client, every=self.o.planner_every, settings=DisruptionSettings(
                validation_delay_seconds=self.o.validation_delay, ready_timeout_seconds=self.o.ready_timeout,
                ready_poll_seconds=2.0))

    def _start_aws(self) -> None:
        """The region's clients and zones, the interruption queue and, with node_classes, the demo's VPC."""
        region, endpoint = self.o.region, self.moto.endpoint
        self.ec2 = ec2_client(region, endpoint)
        self.sqs = sqs_client(region, endpoint)
        self.zones = region_zones(self.ec2)
        if not self.zones:
            raise RuntimeError(f"EC2 names no availability zone in region {region!r}")
        if self.o.interruption:
            self.queue_url = self.sqs.create_queue(QueueName=INTERRUPTION_QUEUE,
                                                   Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
        if self.o.node_classes:
            self.aws = DemoAws(self.ec2, iam_client(region, endpoint), zones=self.zones).create()

    async def wait_for_instance_types(self, timeout: float = 300.0) -> None:
        """Until the worker's catalog is the region's discovered one: until then it is the bundled (us-east-1)
        catalog, whose zones no subnet of another region is in, so nothing could launch."""
        source = self.deps.catalog_source
        deadline = asyncio.get_running_loop().time() + timeout
        while await asyncio.to_thread(lambda: source.region) != self.o.region:
            failure = self.worker_failed()
            if failure is not None:
                raise RuntimeError(f"the worker stopped: {failure}")
            if asyncio.get_running_loop().time() > deadline:
                raise RuntimeError(f"instance types of {self.o.region} not discovered in {timeout:.0f}s: "
                                   f"{source.provider.last_error}")
            await asyncio.sleep(0.5)

    def catalog(self) -> Any:
        """The instance-type catalog the worker plans with now (prices for the demo's cost figures)."""
        if self.o.discover_instance_types and self.deps is not None:
            return self.deps.catalog_source.current()
        return load_default_catalog()

    async def resolve_node_classes(self) -> Any:
        """One NodeClassWorkflow now, as the `nodeflow-nodeclass` Schedule runs it (its first run is up to a minute
        away): launches find the classes Ready from the first planner pass on."""
        return await self.client.execute_workflow(NodeClassWorkflow.run, NodeClassInput(),
                                                  id=f"nodeflow-nodeclass-start-{uuid.uuid4().hex[:8]}",
                                                  task_queue=TASK_QUEUE, execution_timeout=timedelta(minutes=2),
                                                  **summaries.nodeclass_now().kwargs())

    def worker_settings(self) -> Settings:
        """The in-process worker's settings: the cluster as the demo's user data names it, and the simulated world's
        image for launches of a scenario without EC2NodeClasses (`--scenario`), which are refused without one."""
        return Settings(interruption_queue_url=self.queue_url, resync_seconds=self.o.resync_seconds,
                        cluster_name=CLUSTER_NAME, cluster_endpoint=self.sim.base_url, cluster_ca=CLUSTER_CA,
                        provisioning=self.o.provisioning, discover_instance_types=self.o.discover_instance_types,
                        ami_id=self.sim.world.ec2.image_id())

    async def start_worker(self) -> None:
        api = self.sim.api_client()
        api.configuration.connection_pool_maxsize = 64
        region, endpoint, discover = self.o.region, self.moto.endpoint, self.o.discover_instance_types
        deps = Deps(kube_api=api, ec2=self.ec2, sqs=self.sqs, temporal=self.client,
                    ssm=ssm_client(region, endpoint), iam=iam_client(region, endpoint),
                    pricing=pricing_client(region, endpoint) if discover else None, settings=self.worker_settings())
        self.deps = deps
        self._stop = asyncio.Event()
        self._worker_task = asyncio.create_task(run_worker(self.client, deps, self._stop), name="nodeflow-worker")

    async def stop_worker(self) -> None:
        self._stop.set()
        if self._worker_task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._worker_task, 20)
            self._worker_task = None
        if self.o.discover_instance_types and self.deps is not None:  # its discovery thread ends with it
            self.deps.catalog_source.provider.stop()

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
