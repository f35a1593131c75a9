"""The soak's world: the demo's stack with the worker as a real `python worker.py` process.

Temporal dev server (headless, on a SQLite file), moto_server (EC2, SQS, IAM) with the demo's VPC, images and
the interruption queue, the simulator holding the demo cluster (devstack/demo_scenario.py) with a ready delay of
a few tens of seconds and a real kube-scheduler's timing (or, with `scheduler_retry_seconds`, the slow scheduler
a real control plane showed), and one worker process with the deletion watcher, the pending-pod intake, the
interruption poller and the planner and node-class Schedules it keeps.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar

from temporalio.client import Client

from bench import worker_metrics
from client.connection import connect
from contracts.nodeclass import NodeClassInput
from contracts.search_attributes import TASK_QUEUE
from devstack.demo_aws import CLUSTER_CA, CLUSTER_NAME, DemoAws
from devstack.demo_scenario import demo_cluster
from devstack.processes import MotoServer, TemporalDevServer, free_port
from devstack.stack import INTERRUPTION_QUEUE
from runtime.cloud_clients import ec2_client, iam_client, sqs_client
from simulator.scheduler_timing import SchedulerTiming
from simulator.server import Simulator
from simulator.world import DEFAULT_READY_JITTER
from workflows import summaries
from workflows.nodeclass import NodeClassWorkflow

ROOT = Path(__file__).resolve().parents[1]
AWS_ENV = {"AWS_ACCESS_KEY_ID": "soak", "AWS_SECRET_ACCESS_KEY": "soak", "AWS_DEFAULT_REGION": "us-east-1"}
BATCH_SECONDS = 11.0  # the worker's provisioning batch at its longest: idle 1 s after a new pod, closed at 10 s
PENDING_MARGIN = 30.0  # wall seconds: 1% API faults retried, the pending-pod intake's watch, a planner pass


@dataclass
class WorldOptions:
    workdir: Path
    time_scale: float = 0.1  # pods' grace periods and kubelet delays run 10x faster
    ready_delay: float = 300.0  # simulated seconds the instance boots, and about as long again to Node Ready
    planner_seconds: float = 10.0
    resync_seconds: float = 30.0
    scheduler_retry_seconds: float | None = None  # wall seconds a failed pod waits (None: a real scheduler's timing)
    outage_allowance: float = 0.0  # wall seconds the run itself shuts launches off at a time (bench/soak.py)

    def scheduler_timing(self) -> SchedulerTiming:
        """The emulated kube-scheduler: a real one's queues and backoff, or one that retries a pod that found no node
        only `scheduler_retry_seconds` of wall time later (SchedulerTiming counts simulated seconds)."""
        if self.scheduler_retry_seconds is None:
            return SchedulerTiming()
        return SchedulerTiming.slow(self.scheduler_retry_seconds / self.time_scale)

    def pending_bound_seconds(self) -> float:
        """How long (wall seconds) a pod may wait unbound before the soak counts it: a node's launch and readiness
        (the instance boots for ready_delay, the kubelet turns Ready up to (1 + jitter) x ready_delay later), then
        the scheduler's delay once the node fits (slow: its retry; real: its longest backoff, since a node turning
        Ready requeues the pod), a provisioning batch and a margin; plus the longest time the run's own faults keep
        every launch off (`outage_allowance`)."""
        timing = self.scheduler_timing()
        retry = timing.retry_after if timing.retry_after is not None else timing.max_backoff
        launch_ready = self.ready_delay * (2.0 + DEFAULT_READY_JITTER)
        return round((launch_ready + retry + timing.bind_delay) * self.time_scale + BATCH_SECONDS + PENDING_MARGIN
                     + self.outage_allowance, 1)


@dataclass
class World:
    o: WorldOptions
    temporal: TemporalDevServer = field(init=False)
    moto: MotoServer = field(init=False)
    sim: Simulator | None = None
    client: Client | None = None
    worker: subprocess.Popen | None = None
    metrics_port: int = 0
    ec2: Any = None
    sqs: Any = None
    queue_url: str = ""

    def __post_init__(self) -> None:
        self.o.workdir.mkdir(parents=True, exist_ok=True)
        self.temporal = TemporalDevServer(headless=True, db_path=self.o.workdir / "temporal.db",
                                          log_path=self.o.workdir / "temporal.log")
        self.moto = MotoServer(log_path=self.o.workdir / "moto.log")

    ec2_poll_seconds: ClassVar[float] = 0.25  # how often the simulator reads instance states from moto

    def cluster_objects(self) -> list[dict[str, Any]]:
        """What the simulator starts with: the demo's cluster and its EC2NodeClasses."""
        return demo_cluster(node_classes=True)

    def simulator(self, ec2_endpoint: str | None) -> Simulator:
        """The soak's simulator (not started): its time scale, delays and kube-scheduler, and the ledger's bound on
        a pod's unbound wait, past which the safety counts count it."""
        sim = Simulator(objects=self.cluster_objects(), ec2_endpoint=ec2_endpoint, time_scale=self.o.time_scale,
                        ready_delay=self.o.ready_delay, ec2_poll_seconds=self.ec2_poll_seconds,
                        kubeconfig_path=self.o.workdir / "kubeconfig", scheduler_timing=self.o.scheduler_timing())
        sim.world.ledger.pending_bound_seconds = self.o.pending_bound_seconds()
        return sim

    async def start(self) -> None:
        os.environ.update(AWS_ENV)
        (self.o.workdir / "temporal.db").unlink(missing_ok=True)
        await asyncio.gather(asyncio.to_thread(self.temporal.start), asyncio.to_thread(self.moto.start))
        self.ec2 = ec2_client("us-east-1", self.moto.endpoint)
        self.sqs = sqs_client("us-east-1", self.moto.endpoint)
        self.queue_url = self.sqs.create_queue(QueueName=INTERRUPTION_QUEUE,
                                               Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
        await asyncio.to_thread(DemoAws(self.ec2, iam_client("us-east-1", self.moto.endpoint)).create)
        self.sim = self.simulator(self.moto.endpoint)
        await asyncio.to_thread(self.sim.start)
        self.client = await connect(self.temporal.address, "default")
        self.start_worker()
        await self.wait_ready(120.0)
        await self.client.execute_workflow(NodeClassWorkflow.run, NodeClassInput(),
                                           id=f"nodeflow-nodeclass-start-{uuid.uuid4().hex[:8]}",
                                           task_queue=TASK_QUEUE, execution_timeout=timedelta(minutes=2),
                                           **summaries.nodeclass_now().kwargs())

    def worker_command(self) -> list[str]:
        assert self.sim is not None
        return [sys.executable, str(ROOT / "worker.py"), "--address", self.temporal.address,
                "--kubeconfig", self.sim.kubeconfig_path, "--ec2-endpoint", self.moto.endpoint,
                "--interruption-queue", self.queue_url, "--cluster-name", CLUSTER_NAME,
                "--cluster-endpoint", self.sim.base_url, "--cluster-ca", CLUSTER_CA,
                "--resync-seconds", str(self.o.resync_seconds), "--metrics-port", str(self.metrics_port),
                "--log-level", "WARNING"]

    def start_worker(self) -> None:
        self.metrics_port = free_port()
        env = dict(os.environ, PYTHONPATH=str(ROOT), NODEFLOW_PLANNER_SECONDS=str(self.o.planner_seconds))
        with (self.o.workdir / "worker.log").open("ab") as log:
            self.worker = subprocess.Popen(self.worker_command(), cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                           stderr=log)

    async def wait_ready(self, timeout: float) -> None:
        """Until the worker's /readyz answers 200 (Temporal reachable, cluster cache synced)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.worker is not None and self.worker.poll() is not None:
                raise RuntimeError(f"the worker exited with {self.worker.returncode} (see worker.log)")
            if await asyncio.to_thread(worker_metrics.ready, self.metrics_port, 2.0):
                return
            await asyncio.sleep(0.5)
        raise TimeoutError(f"the worker was not ready after {timeout:.0f}s")

    def worker_alive(self) -> bool:
        return self.worker is not None and self.worker.poll() is None

    def stop_worker(self) -> None:
        """SIGTERM the worker process (SIGKILL after 20 s), so that another can take its place."""
        if self.worker is not None and self.worker.poll() is None:
            self.worker.terminate()
            try:
                self.worker.wait(20)
            except subprocess.TimeoutExpired:
                self.worker.kill()
                self.worker.wait(10)

    def stop(self) -> None:
        self.stop_worker()
        if self.sim is not None:
            self.sim.stop()
        self.moto.stop()
        self.temporal.stop()
