"""Benchmark: N nodes deleted at once (default 200), each drained and terminated by its own TerminationWorkflow.

    .venv/bin/python -m bench.termination [--nodes 200] [--pods-per-node 4] [--time-scale 0.02]

Brings up a Temporal dev server, moto_server, the simulator and ONE worker process (`python worker.py`,
as in production), deletes every node with one DELETE collection call, and prints JSON figures: seconds
until the last of the benchmark's Nodes and NodeClaims is gone, history events per node by kind
(bench/termination_histories.py), the first drain's lag after the DELETE, CPU per node of the worker (by thread),
Temporal, moto and the simulator, API requests per node by verb, the worker's peak memory, evictions and PDB
violations from the simulator's ledger. `--worker-root DIR` runs the worker from another tree (A/B against an older
commit's export), `--profile PATH` writes the worker's cProfile, `--unregistered` loads NodeClaims without their
Launched/Registered conditions (the objects of the rounds before 2026-11-29's third). Goals at 1,000 nodes
(docs/benchmarks.md): last finalizer <= 60 s, <= 22 events and <= 40 worker CPU-ms per node, every drain started
within 2 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from kubernetes import client as k8s
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from api import labels
from bench import worker_metrics
from bench.termination_cluster import PodSpec, cluster_objects
from bench.termination_histories import Histories
from contracts.search_attributes import ALL as SEARCH_ATTRIBUTES
from devstack.binaries import find_binary
from devstack.processes import free_port, wait_for_port
from simulator.ec2 import DEFAULT_AMI
from simulator.server import Simulator

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a process (how much CPU it needed, whatever else shares the machine)."""
    return _cpu_seconds_of(Path(f"/proc/{pid}/stat").read_text())


def _thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds of a process's threads by name: `main` (the event loop: workflow code, async activities), the
    SDK core's Rust threads (tokio-*) and the Python threads (named as the process) that blocking calls run on."""
    out: dict[str, float] = {}
    for stat in Path(f"/proc/{pid}/task").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        tid = int(stat.parent.name)
        name = "main" if tid == pid else text[text.index("(") + 1:text.rindex(")")]
        out[name] = out.get(name, 0.0) + _cpu_seconds_of(text)
    return out


def _cpu_seconds_of(stat_text: str) -> float:
    fields = stat_text.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children_cpu() -> dict[str, float]:
    out: dict[str, float] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name = text[text.index("(") + 1:text.rindex(")")]
        if int(text.rsplit(")", 1)[1].split()[1]) == os.getpid():
            out[name] = out.get(name, 0.0) + _cpu_seconds(int(stat.parent.name))
    return out


def _launch(ec2: Any, count: int) -> list[str]:
    ids: list[str] = []
    while len(ids) < count:
        n = min(100, count - len(ids))
        resp = ec2.run_instances(ImageId="ami-12c6146b", MinCount=n, MaxCount=n, InstanceType="m5.large",
                                 Placement={"AvailabilityZone": "us-east-1a"})
        ids += [i["InstanceId"] for i in resp["Instances"]]
    return ids


@dataclass
class _Stack:
    """The processes of one benchmark run, filled in as they come up so that teardown stops only what started."""

    env: WorkflowEnvironment
    moto: subprocess.Popen
    logdir: Path
    endpoint: str = ""
    ec2: Any = None
    ids: list[str] = field(default_factory=list)
    sim: Simulator | None = None
    worker: subprocess.Popen | None = None
    metrics_port: int = 0
    discovery_wait: float | None = None  # seconds the burst waited for the worker's instance-type discovery


async def _start_services(moto_port: int) -> _Stack:
    """moto_server and a Temporal dev server with nodeflow's search attributes, as the worker expects them."""
    moto = subprocess.Popen([find_binary("moto_server"), "-H", "127.0.0.1", "-p", str(moto_port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=find_binary("temporal"),
                                                data_converter=pydantic_data_converter,
                                                search_attributes=list(SEARCH_ATTRIBUTES))
    return _Stack(env=env, moto=moto, logdir=Path(tempfile.mkdtemp(prefix="nodeflow-bench-")))


def _start_worker(args: argparse.Namespace, stack: _Stack, sim: Simulator) -> subprocess.Popen:
    """One `python worker.py` process, as in production, so its memory and CPU are measured on their own."""
    root = Path(args.worker_root).resolve() if args.worker_root else ROOT
    env = dict(os.environ, PYTHONPATH=str(root))
    if args.profile:
        env["NODEFLOW_PROFILE"] = str(Path(args.profile).resolve())
    return subprocess.Popen(
        [sys.executable, str(root / "worker.py"), "--address", stack.env.client.service_client.config.target_host,
         "--kubeconfig", sim.kubeconfig_path, "--ec2-endpoint", stack.endpoint, "--task-queue", "nodeflow-bench",
         "--resync-seconds", str(args.resync), "--log-level", "WARNING",
         # the launches for the drained pods (Karpenter plans capacity for a deleting node's pods) need an image:
         # the world has no EC2NodeClass
         "--ami-id", DEFAULT_AMI,
         "--metrics-address", f"127.0.0.1:{stack.metrics_port}"],
        cwd=root, env=env, stdout=subprocess.DEVNULL,
        stderr=(stack.logdir / "worker.log").open("wb"))


async def _bring_up(args: argparse.Namespace, stack: _Stack, moto_port: int) -> None:
    """EC2 instances in moto, a simulated cluster whose nodes point at them, and the worker, warmed up."""
    wait_for_port(moto_port)
    stack.endpoint = f"http://127.0.0.1:{moto_port}"
    stack.ec2 = boto3.client("ec2", region_name="us-east-1", endpoint_url=stack.endpoint)
    stack.ids = _launch(stack.ec2, args.nodes)
    nodes = {f"bench-{i:04d}": iid for i, iid in enumerate(stack.ids)}
    pods = [PodSpec(f"app-{i:04d}", name, count=args.pods_per_node, grace=args.pod_grace,
                    controller=args.controllers) for i, name in enumerate(nodes)]
    objects = cluster_objects(nodes, pods, registered=not args.unregistered)
    stack.sim = Simulator(time_scale=args.time_scale, ready_delay=0.5, objects=objects,
                          tick_seconds=args.tick)
    stack.sim.start()
    stack.metrics_port = free_port()
    stack.worker = _start_worker(args, stack, stack.sim)
    await asyncio.sleep(args.warmup)  # imports, first watcher pass
    if worker_metrics.discovers_instance_types():
        # the discovery's parse of 1,366 types (boto3) is about 6 s of worker CPU: not a termination's
        stack.discovery_wait = await worker_metrics.wait_for_discovery(stack.metrics_port, 120.0)


async def _tear_down(stack: _Stack) -> None:
    """Stop whatever came up: the worker first (15 s to exit, then killed) while its servers are still there."""
    if stack.worker is not None:
        stack.worker.terminate()
        try:
            stack.worker.wait(15)
        except subprocess.TimeoutExpired:
            stack.worker.kill()
    if stack.sim is not None:
        stack.sim.stop()
    await stack.env.shutdown()
    stack.moto.terminate()


def _cpu_now(worker_pid: int) -> dict[str, float]:
    """CPU seconds so far of the worker, this process (bench + simulator) and the services it started."""
    return {"worker": _cpu_seconds(worker_pid), "bench+simulator": _cpu_seconds(os.getpid()), **_children_cpu()}


def _bench_names(items: list[dict[str, Any]]) -> int:
    """How many of `items` are the benchmark's own (`bench-*`): a NodeClaim the worker launched meanwhile for the
    deleted nodes' pods is not one of the terminations measured (it is counted apart, `nodeClaimsLaunched`)."""
    return sum(1 for i in items if i["metadata"]["name"].startswith("bench-"))


async def _wait_until_gone(core: k8s.CoreV1Api, custom: k8s.CustomObjectsApi, t0: float, timeout: float,
                           remaining: int) -> tuple[int, int]:
    """Poll until none of the benchmark's Nodes and NodeClaims is left (their finalizers gone) or `timeout` seconds
    after t0; returns how many are left and how many other NodeClaims exist."""
    others = 0
    while time.monotonic() - t0 < timeout:
        node_items = json.loads(core.list_node(_preload_content=False).data)["items"]
        claim_items = custom.list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims")["items"]
        remaining = _bench_names(node_items) + _bench_names(claim_items)
        others = len(claim_items) - _bench_names(claim_items)
        if remaining == 0:
            break
        await asyncio.sleep(0.2)
    return remaining, others


async def _histories(client: Client, wall0: float) -> Histories:
    """Read every TerminationWorkflow history (bench/termination_histories.py says what is counted)."""
    out = Histories()
    async for wf in client.list_workflows("WorkflowType = 'TerminationWorkflow'"):
        hist = await client.get_workflow_handle(wf.id, run_id=wf.run_id).fetch_history()
        out.add(hist.events, wall0)
    return out


def _terminated(ec2: Any, ids: list[str]) -> int:
    """How many of the launched instances are shutting down or terminated (none may leak)."""
    states = [r["Instances"] for r in ec2.describe_instances(InstanceIds=ids)["Reservations"]]
    return sum(1 for group in states for i in group if i["State"]["Name"] in ("shutting-down", "terminated"))


def _per_node(verbs: dict[str, Any], before: dict[str, Any], nodes: int) -> dict[str, float]:
    """API requests per deleted node by verb, counted from the DELETE on (the warm-up's are not)."""
    return {v: round((n["requests"] - before.get(v, {}).get("requests", 0)) / nodes, 1) for v, n in verbs.items()}


async def _measure(args: argparse.Namespace, stack: _Stack) -> dict[str, Any]:
    """Delete every node with one call, wait until all are gone, then gather the figures. Process figures
    are read before the histories so that reading them does not count."""
    assert stack.sim is not None and stack.worker is not None
    api = stack.sim.api_client()
    core, custom = k8s.CoreV1Api(api), k8s.CustomObjectsApi(api)
    cpu0, threads0 = _cpu_now(stack.worker.pid), _thread_cpu(stack.worker.pid)
    verbs0 = stack.sim.stats().get("byVerb", {})
    text0 = await asyncio.to_thread(worker_metrics.read, stack.metrics_port)
    lag0, late0 = worker_metrics.event_loop_lag(text0), worker_metrics.drain_start_delay(text0)
    t0 = time.monotonic()
    wall0 = time.time()
    core.delete_collection_node(label_selector=f"{labels.NODEPOOL_LABEL}=default")
    remaining, launched = await _wait_until_gone(core, custom, t0, args.timeout, args.nodes)
    elapsed = time.monotonic() - t0
    peak_mb = _peak_rss_mb(stack.worker.pid)
    cpu1, threads1 = _cpu_now(stack.worker.pid), _thread_cpu(stack.worker.pid)
    threads = {k: round(v - threads0.get(k, 0.0), 1) for k, v in sorted(threads1.items(), key=lambda kv: -kv[1])}
    cpu = {k: round(cpu1[k] - cpu0.get(k, 0.0), 1) for k in cpu1 if k in ("worker", "bench+simulator", "temporal",
                                                                       "moto_server")}
    load = os.getloadavg()[0]
    text1 = await asyncio.to_thread(worker_metrics.read, stack.metrics_port)
    lag, late = worker_metrics.event_loop_lag(text1), worker_metrics.drain_start_delay(text1)
    histories = await _histories(stack.env.client, wall0)
    terminated = _terminated(stack.ec2, stack.ids)
    stats = stack.sim.stats()
    api.close()
    return {
        "nodes": args.nodes, "podsPerNode": args.pods_per_node, "controllers": args.controllers,
        "podGraceSeconds": args.pod_grace, "registeredFixture": not args.unregistered,
        "timeScale": args.time_scale, "cpus": os.cpu_count(), "discoveryWaitSeconds": stack.discovery_wait,
        "secondsUntilLastFinalizerGone": round(elapsed, 2), "objectsLeft": remaining,
        "nodeClaimsLaunched": launched,
        **histories.figures(),
        "workerPeakRssMiB": round(peak_mb, 1), "cpuSecondsDuringRun": cpu,
        "cpuMsPerNode": {k: round(1000 * v / args.nodes, 1) for k, v in cpu.items()},
        "workerCpuSecondsByThread": threads,
        "workerEventLoopLag": {k: int(v - lag0.get(k, 0.0)) for k, v in lag.items()},  # samples every 0.5 s
        "drainAttemptsByStartDelay": {k: int(v - late0.get(k, 0.0)) for k, v in late.items()},
        "loadAverage1m": round(load, 1), "instancesTerminated": terminated,
        "evictions": stats.get("evictions"), "pdbViolations": stats.get("pdbViolationsTotal"),
        "apiRequests": stats.get("requests"),
        "apiRequestsPerNodeByVerb": _per_node(stats.get("byVerb", {}), verbs0, args.nodes),
        "workerLog": str(stack.logdir / "worker.log"),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1")
    moto_port = _free_port()
    stack = await _start_services(moto_port)
    try:
        await _bring_up(args, stack, moto_port)
        return await _measure(args, stack)
    finally:
        await _tear_down(stack)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.termination", description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=200)
    p.add_argument("--pods-per-node", type=int, default=4)
    p.add_argument("--pod-grace", type=int, default=10, help="terminationGracePeriodSeconds of the pods")
    p.add_argument("--time-scale", type=float, default=0.02, help="simulator time scale (grace 10 s -> 0.2 s)")
    p.add_argument("--controllers", action="store_true",
                   help="pods owned by ReplicaSets (recreated Pending after eviction: load on the simulator)")
    p.add_argument("--tick", type=float, default=0.05, help="simulator world tick seconds")
    p.add_argument("--resync", type=float, default=2.0, help="watcher resync seconds")
    p.add_argument("--warmup", type=float, default=6.0)
    p.add_argument("--timeout", type=float, default=180.0)
    p.add_argument("--worker-root", help="run worker.py from this tree (e.g. an export of an older commit: A/B)")
    p.add_argument("--profile", help="write the worker's cProfile stats here (NODEFLOW_PROFILE)")
    p.add_argument("--unregistered", action="store_true",
                   help="NodeClaims without their Launched/Registered conditions, as before 2026-11-29's third round "
                        "(the worker then registers each one in the burst)")
    args = p.parse_args(argv)
    figures = asyncio.run(run(args))
    print(json.dumps(figures, indent=2))
    sys.stdout.flush()
    os._exit(0 if figures["objectsLeft"] == 0 else 1)


if __name__ == "__main__":
    main()
