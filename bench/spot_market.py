"""Benchmark, partial: spot interruptions per node-hour when launches take the cheapest pool first (RunInstances)
against CreateFleet's `price-capacity-optimized`, in a simulated spot market whose cheapest pools are the
shallowest and interrupted most.

    .venv/bin/python -m bench.spot_market [--nodes 20] [--hours 24] [--seed 7]

The market: each (type, zone) pool of TYPES in three zones at the bundled catalog's spot price; pools ranked by
price get a capacity score rising with the price (the cheapest third 1, the middle 4, the dearest third 10) and
an interruption rate of `--base-rate` / score per hour. The stand-in (devstack/moto_fleet.py `set_spot_market`)
picks a spot fleet's pool from it as EC2 describes `price-capacity-optimized`; RunInstances takes the pool the
launch asks for, the cheapest. Partial: interruptions are drawn here from each pool's rate on a simulated clock
(no SQS warning, no drain); each one marks its offering unavailable for 3 minutes of that clock, as the
interruption intake does, and its replacement is launched through the launch activity against the stand-in.
Prints JSON per launch API: interruptions, node-hours, interruptions per node-hour, mean spot price per node-hour.
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import json
import random
from typing import Any

import boto3
from temporalio.testing import ActivityEnvironment

from activities.provisioning import ProvisioningActivities
from api.catalog import load_default_catalog
from api.nodeclass_launch import ClusterInfo
from bench.fleet_launch import REGION, TYPES, launch_world
from contracts.disruption import LaunchInput, Replacement
from devstack.demo_aws import CLUSTER_CA, CLUSTER_NAME, ZONES
from devstack.moto_fleet import set_spot_market
from gateways.kube import KubeClient
from planning.pricing.unavailable_offerings import UnavailableOfferings, UnavailableReason
from planning.provisioning.fleet import LaunchApi

SCORES = (1.0, 4.0, 10.0)  # capacity score of the cheapest, middle and dearest third of the pools


def market(base_rate: float) -> list[dict[str, Any]]:
    """Every pool with its price, capacity score and interruption rate per hour (cheapest: shallow, reclaimed)."""
    catalog = load_default_catalog()
    pools = []
    for name in TYPES:
        it = catalog.get(name)
        for zone in ZONES:
            off = it.offering(zone, "spot") if it is not None else None
            if off is not None:
                pools.append({"type": name, "zone": zone, "price": off.price})
    pools.sort(key=lambda p: (p["price"], p["type"], p["zone"]))
    for i, pool in enumerate(pools):
        pool["capacity"] = SCORES[min(2, 3 * i // len(pools))]
        pool["rate_per_hour"] = base_rate / pool["capacity"]
    return pools


async def _run(kube: KubeClient, endpoint: str, api: LaunchApi, pools: list[dict[str, Any]],
               args: argparse.Namespace) -> dict[str, Any]:
    now = [0.0]  # simulated seconds
    cache = UnavailableOfferings(clock=lambda: now[0])
    ec2 = boto3.client("ec2", region_name=REGION, endpoint_url=endpoint)
    acts = ProvisioningActivities(kube, ec2, load_default_catalog(),
                                  cluster=ClusterInfo(CLUSTER_NAME, "https://bench.example", CLUSTER_CA),
                                  offerings=cache, launch_api=api)
    rates = {(p["type"], p["zone"]): p["rate_per_hour"] for p in pools}
    rng = random.Random(args.seed)
    horizon = args.hours * 3600.0
    events: list[tuple[float, int, tuple[str, str], float, float]] = []  # (interrupt at, node, pool, price, since)
    launches = [0]

    async def launch(node: int) -> None:
        launches[0] += 1
        inp = LaunchInput(key=f"spot-{api.value}-{args.seed}/{node}/{launches[0]}", node_pool="bench",
                          reason="Provisioning", replacement=Replacement(instance_types=TYPES, capacity_type="spot"))
        got = await ActivityEnvironment().run(acts.launch_replacement, inp)
        pool = (got.instance_type, got.zone)
        at = now[0] + rng.expovariate(rates[pool]) * 3600.0
        heapq.heappush(events, (at, node, pool, got.price, now[0]))

    for node in range(args.nodes):
        await launch(node)
    interruptions, cost, by_pool = 0, 0.0, {}
    while events:
        at, node, pool, price, since = heapq.heappop(events)
        end = min(at, horizon)
        cost += price * (end - since) / 3600.0
        by_pool[f"{pool[0]}/{pool[1]}"] = by_pool.get(f"{pool[0]}/{pool[1]}", 0.0) + (end - since) / 3600.0
        if at >= horizon:
            continue
        now[0] = at
        interruptions += 1
        cache.mark(pool[0], pool[1], "spot", UnavailableReason.SPOT_INTERRUPTION)
        await launch(node)
    node_hours = args.nodes * args.hours
    top = sorted(by_pool.items(), key=lambda kv: -kv[1])[:4]
    return {"api": api.value, "partial": True, "nodes": args.nodes, "hours": args.hours, "seed": args.seed,
            "interruptions": interruptions, "node_hours": node_hours,
            "interruptions_per_node_hour": round(interruptions / node_hours, 4),
            "mean_spot_price_per_node_hour": round(cost / node_hours, 5),
            "top_pools_node_hours": {k: round(v, 1) for k, v in top}}


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    pools = market(args.base_rate)
    with launch_world() as (kube, endpoint):
        set_spot_market(endpoint, pools)
        rows = []
        for api in (LaunchApi.RUN_INSTANCES, LaunchApi.FLEET):
            rows.append(await _run(kube, endpoint, api, pools, args))
            print(json.dumps(rows[-1]), flush=True)
        return rows


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--base-rate", type=float, default=0.2, help="interruptions per hour of a score-1 pool")
    parser.add_argument("--seed", type=int, default=7)
    return asyncio.run(main_async(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
