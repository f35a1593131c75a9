"""A small fleet for FleetRolloutWorkflow tests: simulated clusters (one API server each, one NodePool `general`,
no NodeClaims), each cluster's side of the fleet (`fleet_apply`, `fleet_observe`) as a Temporal worker on its own
task queue in this process, talking to its API server over HTTP through the real `kubernetes` client, as
bench/fleet.py does. The nodes' own rollout is not played here (tests/e2e/test_fleet_rollout_e2e.py does that):
a pool without NodeClaims is done once it carries the change, unless its drift rollout note says Halted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowQueryFailedError
from temporalio.service import RPCError
from temporalio.worker import Worker

from activities.fleet import FleetActivities
from api import labels as L
from api.rollout_state import RolloutNote, RolloutNotePhase
from bench.clusters import node_pool
from contracts.fleet import FleetInput, FleetStatus
from gateways.kube import KubeClient
from simulator.server import Simulator
from workflows.fleet import FleetRolloutWorkflow

POOL = "general"


@dataclass
class SimCluster:
    name: str
    queue: str
    sim: Simulator
    kube: KubeClient

    def halt_pool_rollout(self, reason: str, halt: int = 1) -> None:
        """Say on the pool, as its DriftRolloutWorkflow does, that its drift rollout halted (for the `halt`-th time)."""
        note = RolloutNote(generation="g1", wave=1, waves=2, phase=RolloutNotePhase.HALTED, halt_reason=reason,
                           halt=halt)
        self.kube.patch_node_pool(POOL, {"metadata": {"annotations": {L.ROLLOUT_ANNOTATION: note.to_annotation()}}})

    def clear_pool_rollout(self) -> None:
        self.kube.patch_node_pool(POOL, {"metadata": {"annotations": {L.ROLLOUT_ANNOTATION: None}}})

    def pool(self) -> dict[str, Any]:
        return self.kube.get_node_pool(POOL) or {}

    def pending_pod(self) -> None:
        """A pod no node takes (the cluster has none): the cluster never gets done while it is there."""
        self.sim.load_objects([{"apiVersion": "v1", "kind": "Pod",
                                "metadata": {"name": "stuck", "namespace": "default"},
                                "spec": {"containers": [{"name": "c", "image": "x"}]}, "status": {"phase": "Pending"}}])


@contextlib.contextmanager
def sim_clusters(tag: str, n: int) -> Iterator[list[SimCluster]]:
    with contextlib.ExitStack() as stack:
        out = []
        for i in range(n):
            sim = stack.enter_context(Simulator(time_scale=0.01))
            sim.load_objects([node_pool(POOL)])
            kube = KubeClient(stack.enter_context(sim.api_client()))
            out.append(SimCluster(f"c{i + 1}-{tag}", f"fleet-{tag}-c{i + 1}", sim, kube))
        yield out


@contextlib.asynccontextmanager
async def cluster_workers(client: Client, clusters: list[SimCluster]) -> AsyncIterator[None]:
    """Each cluster's worker, as far as the fleet needs it: its fleet activities on its own queue."""
    async with contextlib.AsyncExitStack() as stack:
        for c in clusters:
            acts = FleetActivities(c.kube)
            await stack.enter_async_context(Worker(client, task_queue=c.queue, activities=[acts.apply, acts.observe]))
        yield


def document(tag: str, clusters: list[SimCluster], bakes: list[str | None], prometheus: str | None = None
             ) -> dict[str, Any]:
    """A NodePool-template change through one stage per cluster, with these bake times (None: no bake), and a
    Prometheus gate at this URL."""
    gates = {"prometheus": {"url": prometheus, "query": "sum(up) > 0"}} if prometheus else {}
    return {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "FleetRollout", "metadata": {"name": f"t-{tag}"},
            "spec": {"change": {"nodePoolTemplate": {"patch": {"metadata": {"labels": {"image": tag}}}}},
                     "workerTimeout": "10s", "gates": gates,
                     "stages": [_stage(i, c, bake) for i, (c, bake) in enumerate(zip(clusters, bakes, strict=True))]}}


def _stage(i: int, c: SimCluster, bake: str | None) -> dict[str, Any]:
    stage = {"name": f"s{i + 1}", "clusters": [{"name": c.name, "taskQueue": c.queue, "nodePools": [POOL]}]}
    return {**stage, "bakeTime": bake} if bake else stage


@dataclass
class Run:
    run_id: str
    events: list[HistoryEvent]
    input: FleetInput

    def activities(self, name: str) -> int:
        return sum(1 for e in self.events if e.HasField("activity_task_scheduled_event_attributes")
                   and e.activity_task_scheduled_event_attributes.activity_type.name == name)


async def runs(client: Client, workflow_id: str, first_run_id: str) -> list[Run]:
    """Every run of a workflow, first to last, following its continue-as-new chain."""
    out: list[Run] = []
    run_id: str | None = first_run_id
    while run_id:
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        events = list(history.events)
        payloads = list(events[0].workflow_execution_started_event_attributes.input.payloads)
        [inp] = await client.data_converter.decode(payloads, [FleetInput])
        out.append(Run(run_id, events, inp))
        last = events[-1]
        run_id = (last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
                  if last.HasField("workflow_execution_continued_as_new_event_attributes") else None)
    return out


class Prometheus:
    """A Prometheus HTTP API on loopback answering every /api/v1/query with one sample (the gate holds) or with no
    data (it fails, as a comparison query that does not hold does); `holds` flips it."""

    def __init__(self) -> None:
        self.holds = False
        self.queries = 0
        prom = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                prom.queries += 1
                result = [{"metric": {}, "value": [time.time(), "1"]}] if prom.holds else []
                body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="prometheus", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Prometheus:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


async def until(handle: Any, check: Any, what: str, timeout: float = 30) -> FleetStatus:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            st = await handle.query(FleetRolloutWorkflow.status)
        except (RPCError, WorkflowQueryFailedError):  # in the instant between two runs: ask again
            st = None
        if st is not None and check(st):
            return st
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}: {await handle.query(FleetRolloutWorkflow.status)}")
