"""What a fleet rollout costs beyond its bakes: stage time against bake time, and the overhead per cluster.

A Temporal dev server, N simulated clusters (API servers, each with one NodePool and a few pods), a
NodePool-template change through S stages. The fleet's rollouts run in a `worker.py --fleet-only` process (as in
production); each cluster's side (fleet_apply, fleet_observe) runs in this process on the cluster's own task queue,
against that cluster's API server over HTTP, which is a part of its worker, not the whole: the figures are the
fleet's overhead, not a cluster's own rollout (its nodes' drift and replacement are measured by the other
benchmarks). Prints JSON: per stage its seconds and seconds beyond the bake; per cluster apply-to-done seconds,
history events and activities; the fleet worker's RSS and CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from activities.fleet import FleetActivities
from api.fleet import load_fleet_rollout
from bench.clusters import node_pool
from bench.karpenter_probe import cpu_seconds
from client.fleet import start_fleet_rollout
from contracts.fleet import FleetSettings
from contracts.search_attributes import ALL as SEARCH_ATTRIBUTES
from devstack.binaries import find_binary
from gateways.kube import KubeClient
from simulator.server import Simulator

ROOT = Path(__file__).resolve().parents[1]


def _document(tag: str, queues: list[str], stages: int, bake: str, in_flight: int) -> dict[str, Any]:
    per = max(1, len(queues) // stages)
    groups = [queues[i:i + per] for i in range(0, len(queues), per)][:stages]
    groups[-1] += queues[per * stages:]
    return {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "FleetRollout", "metadata": {"name": f"bench-{tag}"},
            "spec": {"change": {"nodePoolTemplate": {"patch": {"metadata": {"labels": {"image": tag}}}}},
                     "maxClustersInFlight": in_flight,
                     "stages": [{"name": f"s{i + 1}", "bakeTime": bake, "clusters": [
                         {"name": f"c{queues.index(q) + 1}", "taskQueue": q, "nodePools": ["general"]} for q in g]}
                         for i, g in enumerate(groups)]}}


def _cluster(stack: ExitStack, pods: int) -> Simulator:
    """One NodePool (no NodeClaims: the fleet's overhead, not a rollout of nodes) and `pods` Running pods."""
    sim = stack.enter_context(Simulator(time_scale=0.01))
    ready = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    objs: list[dict[str, Any]] = [node_pool("general"), {
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}],
                   "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "500"}}}]
    objs += [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default"},
              "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x"}]}, "status": dict(ready)}
             for i in range(pods)]
    sim.load_objects(objs)
    return sim


def _fleet_worker(address: str, queue: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(ROOT / "worker.py"), "--fleet-only", "--fleet-task-queue", queue,
                             "--address", address, "--log-level", "warning"], cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))


def _proc_figures(pid: int) -> tuple[float, float]:
    """(RSS MiB, CPU seconds) of a process, from /proc."""
    rss = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
               if line.startswith("VmRSS:"))
    return rss / 1024, cpu_seconds(pid)


async def _history_figures(client: Client, workflow_id: str, clusters: int) -> dict[str, Any]:
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    events = list(history.events)
    activities = sum(1 for e in events if e.HasField("activity_task_scheduled_event_attributes"))
    return {"historyEvents": len(events), "historyEventsPerCluster": round(len(events) / clusters, 1),
            "activitiesPerCluster": round(activities / clusters, 1)}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=find_binary("temporal"),
                                                data_converter=pydantic_data_converter,
                                                search_attributes=list(SEARCH_ATTRIBUTES))
    tag = uuid.uuid4().hex[:8]
    fleet_queue = f"fleet-{tag}"
    proc = _fleet_worker(env.client.service_client.config.target_host, fleet_queue)
    try:
        with ExitStack() as stack:
            queues = [f"nodeflow-bench-{tag}-{i + 1}" for i in range(args.clusters)]
            workers = []
            for q in queues:
                sim = _cluster(stack, args.pods)
                kube = KubeClient(stack.enter_context(sim.api_client()))
                acts = FleetActivities(kube)
                workers.append(Worker(env.client, task_queue=q, activities=[acts.apply, acts.observe]))
            async with _Workers(workers):
                return await _measure(env.client, proc, queues, args, tag)
    finally:
        proc.kill()
        await env.shutdown()


class _Workers:
    """Run several Temporal workers for the duration of a block."""

    def __init__(self, workers: list[Worker]) -> None:
        self._workers = workers

    async def __aenter__(self) -> None:
        for w in self._workers:
            await w.__aenter__()

    async def __aexit__(self, *exc: object) -> None:
        for w in self._workers:
            await w.__aexit__(*exc)


async def _measure(client: Client, proc: subprocess.Popen, queues: list[str], args: argparse.Namespace,
                   tag: str) -> dict[str, Any]:
    settings = FleetSettings(poll_seconds=args.poll, gate_seconds=args.poll, unreachable_retry_seconds=args.poll)
    warm = load_fleet_rollout(_document(f"warm-{tag}", queues[:1], 1, "1s", 1))  # the worker up and imported
    handle, _ = await start_fleet_rollout(client, warm, task_queue=f"fleet-{tag}", settings=settings)
    await asyncio.wait_for(handle.result(), args.timeout)
    rollout = load_fleet_rollout(_document(tag, queues, args.stages, f"{args.bake}s", args.in_flight))
    rss0, cpu0 = _proc_figures(proc.pid)
    started = time.monotonic()
    handle, _ = await start_fleet_rollout(client, rollout, task_queue=f"fleet-{tag}", settings=settings)
    result = await asyncio.wait_for(handle.result(), args.timeout)
    wall = time.monotonic() - started
    rss1, cpu1 = _proc_figures(proc.pid)
    stages = []
    for s in result.stages:
        seconds = (s.done_at - s.started_at).total_seconds()
        stages.append({"name": s.name, "clusters": len(s.clusters), "seconds": round(seconds, 2),
                       "beyondBakeSeconds": round(seconds - args.bake, 2)})
    done = [(c.done_at - c.applied_at).total_seconds() for s in result.stages for c in s.clusters]
    return {"clusters": args.clusters, "stages": args.stages, "bakeSeconds": args.bake, "pollSeconds": args.poll,
            "phase": result.phase.value, "wallSeconds": round(wall, 2), "stageSeconds": stages,
            "applyToDoneSeconds": {"p50": round(statistics.median(done), 2), "max": round(max(done), 2)},
            **await _history_figures(client, handle.id, args.clusters),
            "fleetWorker": {"rssMiB": round(rss1, 1), "rssGrowthMiB": round(rss1 - rss0, 1),
                            "cpuSeconds": round(cpu1 - cpu0, 2)},
            "loadAverage": [round(x, 2) for x in os.getloadavg()], "partial": True}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.fleet", description=__doc__.splitlines()[0])
    p.add_argument("--clusters", type=int, default=9)
    p.add_argument("--stages", type=int, default=3)
    p.add_argument("--bake", type=int, default=5, help="whole seconds of bake per stage")
    p.add_argument("--in-flight", type=int, default=3, help="maxClustersInFlight")
    p.add_argument("--pods", type=int, default=20, help="pods per cluster (the pods-ready gate reads them)")
    p.add_argument("--poll", type=float, default=1.0, help="seconds between observations")
    p.add_argument("--timeout", type=float, default=600.0)
    args = p.parse_args(argv)
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    print(json.dumps(asyncio.run(run(args)), indent=2))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
