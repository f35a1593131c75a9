"""Benchmark, end to end: a scale-out of pods that need a node each while the cheapest instance family has no
capacity, the worker launching RunInstances per offering against one CreateFleet per NodeClaim, side by side.

    .venv/bin/python -m bench.scale_out_ice [--pods 100] [--rounds 1] [--ec2-latency-ms 300] [--json]

One stack for the run (bench/karpenter_world.py's: Temporal dev server, the devstack's EC2 stand-in
`devstack.moto_indexed`, the simulator over HTTP with its scheduler and kubelets), and per arm a fresh
`python worker.py` process with `--launch-api run-instances` or `fleet` (so each arm starts with an empty
unavailable-offerings cache) and the bundled catalog. Each arm has its own NodePool admitting TYPES; every type of
the cheapest family among them (t3) is refused with InsufficientInstanceCapacity in every zone by the stand-in's
fault knob (devstack/cloud_faults.py): a RunInstances for it is answered with the error, a CreateFleet answers
its t3 overrides in `Errors` and launches from the others. Every RunInstances and CreateFleet is held
`--ec2-latency-ms` before it is answered (moto answers in milliseconds, EC2 in about a second). Then `--pods`
pods with hostname anti-affinity, so one node each, are created at once.

The worker's unavailable-offerings cache (3 minutes) is on, as in production: the sequential arm's first launches
learn the ICE and the later ones skip the refused offerings, so its extra calls are those of the launches in
flight before the first refusal came back. Per arm it prints: seconds from the pods' creation to half and to all
of the NodeClaims launched (providerID set) and of the Nodes Ready, and to every pod bound, a pod's wait (p50, max),
EC2 launch calls, ICE answers (a refused RunInstances, or a refused override inside a CreateFleet answer), the
instances launched (duplicates and leaks from devstack/audit.py) and the load average. With `--rounds` above 1 the
arms alternate which goes first.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from api import labels as L
from api.catalog import InstanceTypeCatalog, load_default_catalog
from bench import worker_metrics
from bench.karpenter_phases import say
from bench.karpenter_probe import CLAIMS, NODES, PODS
from bench.karpenter_world import SuiteWorld
from bench.soak_world import ROOT, WorldOptions
from devstack import audit
from devstack.cloud_faults import FaultRule, fault_counts, set_faults
from devstack.demo_aws import node_class_object
from planning.provisioning.fleet import LaunchApi
from simulator.pods import condition_true

TYPES = ("t3.medium", "t3.large", "c5.large", "c6i.large", "m5.large", "m6i.large")
ICE = "InsufficientInstanceCapacity"
LAUNCH_CALLS = ("RunInstances", "CreateFleet")
ARM_LABEL = "bench.nodeflow.dev/scale-out-ice"
TICK = 0.25


def _on_demand_price(catalog: InstanceTypeCatalog, name: str) -> float:
    itype = next(it for it in catalog.instance_types if it.name == name)
    return min(o.price for o in itype.offerings if o.capacity_type == "on-demand")


def cheapest_family_types(types: tuple[str, ...], catalog: InstanceTypeCatalog) -> list[str]:
    """Every type of `types` in the family of the cheapest one (on-demand): the family the stand-in refuses."""
    family = min(types, key=lambda t: _on_demand_price(catalog, t)).split(".")[0]
    return [t for t in types if t.split(".")[0] == family]


def fault_rules(iced: list[str]) -> list[FaultRule]:
    """No capacity for the iced types in any zone, whichever API asks (no zone in the rule: it matches them all)."""
    return [FaultRule(action, ICE, params={"InstanceType": t}) for t in iced for action in LAUNCH_CALLS]


def arm_order(rounds: int) -> list[tuple[int, LaunchApi]]:
    """(round, API) in the order run: A/B, then B/A, alternating."""
    pair = [LaunchApi.RUN_INSTANCES, LaunchApi.FLEET]
    return [(r, api) for r in range(rounds) for api in (pair if r % 2 == 0 else pair[::-1])]


def pool_name(rnd: int, api: LaunchApi) -> str:
    return f"ice-{rnd}-{api.value}"


def node_pool(name: str) -> dict[str, Any]:
    """An on-demand pool of TYPES that never consolidates while the bench runs."""
    reqs = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
            {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": list(TYPES)}]
    spec = {"requirements": reqs, "expireAfter": "720h",
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}
    return {"apiVersion": L.API_VERSION, "kind": "NodePool", "metadata": {"name": name},
            "spec": {"template": {"spec": spec},
                     "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "Never"}}}


def pod(pool: str, i: int) -> dict[str, Any]:
    """A pod of the arm's pool that needs a node of its own: hostname anti-affinity against the arm's other pods."""
    match = {ARM_LABEL: pool}
    anti = {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": L.HOSTNAME_LABEL, "labelSelector": {"matchLabels": match}}]}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{pool}-{i:03d}", "namespace": "default", "labels": match},
            "spec": {"nodeSelector": {L.NODEPOOL_LABEL: pool}, "affinity": {"podAntiAffinity": anti},
                     "terminationGracePeriodSeconds": 30,
                     "containers": [{"name": "main", "image": "registry.example/app:1",
                                     "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]}}


class IceWorld(SuiteWorld):
    """The suite's stack holding one NodePool per arm; the worker runs with the arm's launch API."""

    def __init__(self, o: WorldOptions, pools: list[str], launch_api: LaunchApi) -> None:
        super().__init__(o)
        self.pools = pools
        self.launch_api = launch_api

    def cluster_objects(self) -> list[dict[str, Any]]:
        return [node_class_object("default"), *(node_pool(p) for p in self.pools)]

    def worker_command(self) -> list[str]:
        return [*super().worker_command(), "--launch-api", self.launch_api.value, "--no-instance-type-discovery"]

    async def fresh_worker(self, api: LaunchApi, timeout: float = 120.0) -> None:
        """Replace the worker with a new process launching through `api` (so its offerings cache starts empty,
        even when the arm before used the same API), and wait until it runs the controllers."""
        self.stop_worker()
        self.launch_api = api
        self.start_worker()
        await self.wait_ready(timeout)
        await wait_leader(self, timeout)


async def wait_leader(world: SuiteWorld, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not await asyncio.to_thread(worker_metrics.is_leader, world.metrics_port):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the worker did not run the controllers within {timeout:.0f}s")
        await asyncio.sleep(0.25)


def _loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _create_pods(world: SuiteWorld, pool: str, n: int) -> dict[str, float]:
    """Create the arm's pods over HTTP, one after the other; returns each pod's creation time (monotonic)."""
    assert world.sim is not None
    api = world.sim.api_client()
    core, created = k8s.CoreV1Api(api), {}
    try:
        for i in range(n):
            body = pod(pool, i)
            core.create_namespaced_pod("default", body)
            created[body["metadata"]["name"]] = time.monotonic()
    finally:
        api.close()
    return created


class ArmWatch:
    """When each of the arm's NodeClaims got its providerID and each of its pods its node, read from the
    simulator's store every TICK (no HTTP: watching costs the API server nothing)."""

    def __init__(self, world: SuiteWorld, pool: str, created: dict[str, float]) -> None:
        assert world.sim is not None
        self.sim, self.pool, self.created = world.sim, pool, created
        self.launched: dict[str, float] = {}
        self.ready: dict[str, float] = {}  # the pool's Nodes Ready
        self.drifted: dict[str, str] = {}  # NodeClaims found Drifted during the arm, with the condition's reason
        self.bound: dict[str, float] = {}

    def look(self, now: float) -> None:
        with self.sim.store.lock:
            claims = [c for c in self.sim.store.list(CLAIMS)
                      if (c["metadata"].get("labels") or {}).get(L.NODEPOOL_LABEL) == self.pool]
            pods = [p for p in self.sim.store.list(PODS)
                    if (p["metadata"].get("labels") or {}).get(ARM_LABEL) == self.pool]
            nodes = [n for n in self.sim.store.list(NODES)
                     if (n["metadata"].get("labels") or {}).get(L.NODEPOOL_LABEL) == self.pool]
        for c in claims:
            if (c.get("status") or {}).get("providerID"):
                self.launched.setdefault(c["metadata"]["name"], now)
            drift = next((d for d in (c.get("status") or {}).get("conditions") or []
                          if d.get("type") == "Drifted" and d.get("status") == "True"), None)
            if drift is not None:
                self.drifted.setdefault(c["metadata"]["name"], str(drift.get("reason") or ""))
        for n in nodes:
            if condition_true(n, "Ready"):
                self.ready.setdefault(n["metadata"]["name"], now)
        for p in pods:
            if (p.get("spec") or {}).get("nodeName"):
                self.bound.setdefault(p["metadata"]["name"], now)

    def done(self) -> bool:
        return len(self.bound) >= len(self.created) and len(self.launched) >= len(self.created)

    async def run(self, timeout: float) -> bool:
        deadline = min(self.created.values()) + timeout
        while time.monotonic() < deadline:
            self.look(time.monotonic())
            if self.done():
                return True
            await asyncio.sleep(TICK)
        return False

    def figures(self, t0: float) -> dict[str, Any]:
        n = len(self.created)
        waits = sorted(self.bound[p] - self.created[p] for p in self.bound)
        def nth(times: dict[str, float], i: int) -> float | None:
            ordered = sorted(times.values())
            return round(ordered[i - 1] - t0, 2) if len(ordered) >= i else None

        return {"launchedSeconds": nth(self.launched, n), "launchedP50Seconds": nth(self.launched, (n + 1) // 2),
                "nodesReadySeconds": nth(self.ready, n), "nodesReadyP50Seconds": nth(self.ready, (n + 1) // 2),
                "boundSeconds": round(max(self.bound.values()) - t0, 2) if len(self.bound) >= n else None,
                "podWaitP50Seconds": round(statistics.median(waits), 2) if waits else None,
                "podWaitMaxSeconds": round(waits[-1], 2) if waits else None,
                "podsBound": len(self.bound), "nodeClaimsLaunched": len(self.launched),
                "driftedNodeClaims": dict(self.drifted)}


def _instances(ec2: Any) -> list[dict[str, Any]]:
    pages = ec2.get_paginator("describe_instances").paginate()
    return [i for page in pages for r in page["Reservations"] for i in r["Instances"]]


def audit_arm(world: SuiteWorld, pool: str) -> dict[str, Any]:
    """The instances launched for the arm's pool (by type), its duplicate launches, and every leaked instance."""
    assert world.sim is not None
    instances = _instances(world.ec2)
    with world.sim.store.lock:
        nodes, claims = list(world.sim.store.list(NODES)), list(world.sim.store.list(CLAIMS))
    mine = [i for i in instances if {t["Key"]: t["Value"] for t in i.get("Tags") or []}.get(L.NODEPOOL_LABEL) == pool]
    return {"instancesLaunched": audit.our_launches(mine),
            "instanceTypes": dict(sorted(Counter(i["InstanceType"] for i in mine).items())),
            "duplicateLaunches": audit.duplicate_launches(mine),
            "leakedInstances": audit.leaked_instances(instances, nodes, claims)}


def ec2_figures(endpoint: str) -> dict[str, Any]:
    """What the stand-in saw since the arm's rules were set: launch calls, ICE answers (a refused RunInstances,
    or one refused override of a CreateFleet answer)."""
    report = fault_counts(endpoint)
    calls = report.get("calls") or {}
    return {"launchCalls": {a: calls.get(a, 0) for a in LAUNCH_CALLS},
            "iceAnswers": (report.get("injectedByCode") or {}).get(ICE, 0),
            "iceAnswersByCall": {a: (report.get("injected") or {}).get(a, 0) for a in LAUNCH_CALLS}}


async def run_arm(world: IceWorld, rnd: int, api: LaunchApi, args: argparse.Namespace, iced: list[str],
                  first: bool) -> dict[str, Any]:
    """One arm: its own worker (the stack's first for the first arm, started with its API), the rules set (which
    zeroes the stand-in's counts), the pods created, watched until all are bound, then counted."""
    pool = pool_name(rnd, api)
    if first:
        await wait_leader(world, 120.0)
    else:
        await world.fresh_worker(api)
    set_faults(world.moto.endpoint, fault_rules(iced), delay_ms={a: args.ec2_latency_ms for a in LAUNCH_CALLS})
    load_start = _loadavg()
    say(f"round {rnd}, {api.value}: creating {args.pods} pods (load {load_start[0]})")
    t0 = time.monotonic()
    created = await asyncio.to_thread(_create_pods, world, pool, args.pods)
    watch = ArmWatch(world, pool, created)
    finished = await watch.run(args.timeout)
    out = {"round": rnd, "api": api.value, "pool": pool, "finished": finished,
           "createSeconds": round(max(created.values()) - t0, 2), **watch.figures(t0),
           **ec2_figures(world.moto.endpoint), **await asyncio.to_thread(audit_arm, world, pool),
           "loadAverage": {"start": load_start, "end": _loadavg()}}
    say(f"round {rnd}, {api.value}: {json.dumps(out)}")
    return out


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


async def run(args: argparse.Namespace) -> dict[str, Any]:
    iced = cheapest_family_types(TYPES, load_default_catalog())
    order = arm_order(args.rounds)
    workdir = Path(tempfile.mkdtemp(prefix="nodeflow-scale-out-ice-"))
    opts = WorldOptions(workdir=workdir, time_scale=args.time_scale, ready_delay=args.launch_seconds / 2,
                        planner_seconds=10.0, resync_seconds=30.0)
    world = IceWorld(opts, [pool_name(r, a) for r, a in order], order[0][1])
    load_start, arms = _loadavg(), []
    say(f"starting the stack (logs in {workdir}) ...")
    try:
        await world.start()
        for i, (rnd, api) in enumerate(order):
            arms.append(await run_arm(world, rnd, api, args, iced, first=i == 0))
    finally:
        world.stop()
    return {"pods": args.pods, "rounds": args.rounds, "commit": _commit(), "types": list(TYPES),
            "icedTypes": iced, "ec2LatencyMs": args.ec2_latency_ms, "timeScale": args.time_scale,
            "launchSeconds": args.launch_seconds, "loadAverage": {"start": load_start, "end": _loadavg()},
            "arms": arms, "workdir": str(workdir)}


HEADER = ("| round | launch API | launched half / all s | Ready half / all s | all bound s | pod wait p50 / max s | "
          "RunInstances / CreateFleet | ICE answers | instances (types) | duplicates / leaked | load start -> end |")


def _row(a: dict[str, Any]) -> str:
    calls = a["launchCalls"]
    cells = [str(a["round"]), a["api"] + ("" if a["finished"] else " TIMED OUT"),
             f"{a['launchedP50Seconds']} / {a['launchedSeconds']}",
             f"{a['nodesReadyP50Seconds']} / {a['nodesReadySeconds']}", str(a["boundSeconds"]),
             f"{a['podWaitP50Seconds']} / {a['podWaitMaxSeconds']}",
             f"{calls['RunInstances']} / {calls['CreateFleet']}", str(a["iceAnswers"]),
             f"{a['instancesLaunched']} {a['instanceTypes']}",
             f"{len(a['duplicateLaunches'])} / {len(a['leakedInstances'])}",
             f"{a['loadAverage']['start'][0]} -> {a['loadAverage']['end'][0]}"]
    return "| " + " | ".join(cells) + " |"


def render(result: dict[str, Any]) -> str:
    load = result["loadAverage"]
    lines = [f"{result['pods']} pods, {', '.join(result['icedTypes'])} refused in every zone, EC2 launch calls held "
             f"{result['ec2LatencyMs']:.0f} ms; load {load['start']} -> {load['end']}", HEADER,
             "|" + "---|" * HEADER.count(" | ") + "---|"]
    return "\n".join([*lines, *(_row(a) for a in result["arms"])])


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m bench.scale_out_ice", description=(__doc__ or "").splitlines()[0])
    p.add_argument("--pods", type=int, default=100)
    p.add_argument("--rounds", type=int, default=1, help="pairs of arms; the first of a pair alternates")
    p.add_argument("--ec2-latency-ms", type=float, default=300.0, help="each RunInstances / CreateFleet held this long")
    p.add_argument("--time-scale", type=float, default=0.1, help="the simulator's delays x this")
    p.add_argument("--launch-seconds", type=float, default=45.0, help="simulated launch-to-Ready latency")
    p.add_argument("--timeout", type=float, default=900.0, help="wall seconds an arm may take")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    args = p.parse_args(argv)
    result = asyncio.run(run(args))
    print(json.dumps(result, indent=2) if args.json else render(result), flush=True)
    return result


if __name__ == "__main__":
    main()
