"""Benchmark: a 100-node scale-out with one instance family out of capacity, launched RunInstances per offering
(cheapest first, the next after InsufficientInstanceCapacity) against one CreateFleet per NodeClaim, side by side.

    .venv/bin/python -m bench.fleet_launch [--nodes 100] [--concurrency 8] [--ec2-latency-ms 300]

Brings up the devstack's EC2 stand-in (moto with devstack/moto_fleet.py) and the simulator's API server, resolves
one EC2NodeClass, and launches `--nodes` NodeClaims through the launch activity (ProvisioningActivities, as the
worker runs it, `--concurrency` at a time) for each launch API. The cheapest family (t3) answers
InsufficientInstanceCapacity in every zone (simulator/ice.py). Every EC2 launch call (RunInstances, CreateFleet)
is held `--ec2-latency-ms` before it is sent, the same for both, since moto answers in milliseconds where EC2
takes about a second. Each API runs twice: with the worker's unavailable-offerings cache (3 min, so only the
first launches pay for the ICE) and with the cache off (every launch meets the ICE, as after the TTL or across
workers). Prints JSON: wall seconds, per-launch p50/p95/max, EC2 launch calls, refused offerings.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import time
from collections.abc import Iterator
from typing import Any

import boto3
from temporalio.testing import ActivityEnvironment

from activities.nodeclass import NodeClassActivities
from activities.provisioning import ProvisioningActivities
from api.catalog import load_default_catalog
from api.nodeclass_launch import ClusterInfo
from contracts.disruption import LaunchInput, Replacement
from contracts.nodeclass import NodeClassInput
from devstack.demo_aws import CLUSTER_CA, CLUSTER_NAME, DemoAws, node_class_object
from devstack.processes import MotoServer
from gateways.kube import KubeClient
from planning.pricing.unavailable_offerings import UnavailableOfferings
from planning.provisioning.fleet import LaunchApi
from simulator.ice import IceInjector
from simulator.server import Simulator

REGION = "us-east-1"
TYPES = ["t3.large", "c5.large", "c6i.large", "m5.large", "m6i.large", "m7i.large"]
ICED = "t3.large"
LAUNCH_CALLS = ("RunInstances", "CreateFleet")


class Ec2Clock:
    """Holds each launch call `latency` seconds before it is sent, and counts the calls."""

    def __init__(self, client: Any, latency: float) -> None:
        self.latency = latency
        self.calls: dict[str, int] = {}
        client.meta.events.register("before-call.ec2.*", self._before)

    def _before(self, model: Any, **_: Any) -> None:
        self.calls[model.name] = self.calls.get(model.name, 0) + 1
        if model.name in LAUNCH_CALLS:
            time.sleep(self.latency)


def _pool() -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "bench"},
            "spec": {"template": {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                            "name": "default"}, "requirements": []}}}}


def _setup(kube: KubeClient, endpoint: str) -> None:
    kw = {"region_name": REGION, "endpoint_url": endpoint}
    ec2, iam, ssm = (boto3.client(s, **kw) for s in ("ec2", "iam", "ssm"))
    DemoAws(ec2, iam).create()
    kube.custom.create_cluster_custom_object("karpenter.k8s.aws", "v1", "ec2nodeclasses", node_class_object("default"))
    kube.custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", _pool())
    NodeClassActivities(kube, ec2, ssm, iam, cluster_name=CLUSTER_NAME).reconcile_all(NodeClassInput())


async def _run(kube: KubeClient, endpoint: str, api: LaunchApi, cached: bool, args: argparse.Namespace
               ) -> dict[str, Any]:
    ec2 = boto3.client("ec2", region_name=REGION, endpoint_url=endpoint)
    clock = Ec2Clock(ec2, args.ec2_latency_ms / 1000)
    ice = IceInjector().install(ec2)
    ice.exhaust(ICED)
    cache = UnavailableOfferings() if cached else UnavailableOfferings(ttl_seconds=0.0)
    acts = ProvisioningActivities(kube, ec2, load_default_catalog(),
                                  cluster=ClusterInfo(CLUSTER_NAME, "https://bench.example", CLUSTER_CA),
                                  offerings=cache, launch_api=api)
    gate = asyncio.Semaphore(args.concurrency)
    latencies: list[float] = []
    types: dict[str, int] = {}

    async def one(i: int) -> None:
        inp = LaunchInput(key=f"bench-{api.value}-{cached}/{i}", node_pool="bench", reason="Provisioning",
                          replacement=Replacement(instance_types=TYPES))
        async with gate:
            start = time.perf_counter()
            launched = await ActivityEnvironment().run(acts.launch_replacement, inp)
            latencies.append(time.perf_counter() - start)
            types[launched.instance_type] = types.get(launched.instance_type, 0) + 1

    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(args.nodes)))
    wall = time.perf_counter() - start
    latencies.sort()
    return {"api": api.value, "cache": "3 min" if cached else "off", "nodes": args.nodes,
            "wall_s": round(wall, 2), "p50_s": round(statistics.median(latencies), 3),
            "p95_s": round(latencies[int(0.95 * (len(latencies) - 1))], 3), "max_s": round(latencies[-1], 3),
            "launch_calls": {k: clock.calls.get(k, 0) for k in LAUNCH_CALLS},
            "refused_offerings": len(ice.refused), "types": types}


@contextlib.contextmanager
def launch_world() -> Iterator[tuple[KubeClient, str]]:
    """The launch benches' world: the EC2 stand-in (with the stand-in's credentials), the simulator's API server and
    the EC2NodeClass of `_setup`; yields the Kubernetes gateway and the EC2 endpoint."""
    for key, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        os.environ.setdefault(key, value)
    with MotoServer() as moto, Simulator(time_scale=0.01, ready_delay=2.0) as sim:
        api_client = sim.api_client()
        try:
            kube = KubeClient(api_client)
            _setup(kube, moto.endpoint)
            yield kube, moto.endpoint
        finally:
            api_client.close()


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    with launch_world() as (kube, endpoint):
        rows = []
        for cached in (True, False):
            for api in (LaunchApi.RUN_INSTANCES, LaunchApi.FLEET):
                rows.append(await _run(kube, endpoint, api, cached, args))
                print(json.dumps(rows[-1]), flush=True)
        return rows


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--ec2-latency-ms", type=float, default=300.0)
    return asyncio.run(main_async(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
