"""The worker side of bench/planner_live.py: the planner activity as the worker wires it, one pass per stdin line.

Mode `list`: PlanningActivities without a cluster source (a LIST of every kind per pass). Mode `cache`: with a
ClusterView over a ClusterCache started here (the sync time is reported first). The catalog is the bundled one,
or with `--discover-endpoint` the one discovered from that EC2 endpoint (bench/planner_catalogs.py). Each pass runs
`plan_pass` in Temporal's ActivityEnvironment (the visibility query goes to the dev server) and answers one
JSON line: seconds (wall), cpuSeconds (the process's CPU time meanwhile: the pass and the watch threads
keeping the cache current; on a loaded machine the wall time grows, this does not), commands, skip reason, pods
re-parsed, and the process's RSS.
"""

from __future__ import annotations

import asyncio
import cProfile
import gc
import json
import os
import sys
import time
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import ActivityEnvironment

from activities.planning_runner import PlanningActivities
from api.catalog import load_default_catalog
from contracts.disruption import PlanPassInput
from gateways.kube import KubeClient
from runtime.cloud_clients import kube_api_client
from runtime.cluster_cache import ClusterCache
from runtime.cluster_view import ClusterView
from runtime.malloc_tuning import limit_arenas, release_free

PROFILE_ENV = "NODEFLOW_BENCH_PROFILE"
TRACE_ENV = "NODEFLOW_BENCH_TRACEMALLOC"  # bench/planner_live.py starts tracing when set
TRIM_ENV = "NODEFLOW_BENCH_MALLOC_TRIM"  # set: glibc's free pages are handed back after every pass
ARENAS_ENV = "NODEFLOW_BENCH_MALLOC_ARENAS"  # a number: glibc's arenas capped at it (runtime/malloc_tuning.py)


class TimedKube(KubeClient):
    """The gateway, timing its LIST of every kind (the report splits a LIST pass into reading and the rest)."""

    list_seconds = 0.0

    def cluster_objects(self) -> list[dict[str, Any]]:
        t = time.monotonic()
        try:
            return super().cluster_objects()
        finally:
            self.list_seconds = time.monotonic() - t


def rss_mib() -> int:
    """Resident set size now (VmRSS), in MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return 0


def _say(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _catalog(discover: str | None, region: str) -> tuple[Any, dict[str, Any]]:
    """The bundled catalog; or, with `discover` (an EC2 endpoint that serves the Pricing API too), the catalog the
    worker discovers (runtime/settings.py `catalog_source`: an InstanceTypeProvider behind a LiveCatalog), its first
    refresh done here so every pass plans on the discovered types. The dict describes it for the hello line."""
    if discover is None:
        catalog = load_default_catalog()
        return catalog, {"catalog": "bundled", "instanceTypes": len(catalog.instance_types),
                         "instanceTypesAvailable": _available(catalog)}
    # the discovery clients (boto3) load only when this bench discovers instance types
    from gateways.instance_types import InstanceTypeProvider, LiveCatalog
    from runtime.cloud_clients import ec2_client, pricing_client

    provider = InstanceTypeProvider(ec2_client(region, discover), pricing_client(region, discover))
    t = time.monotonic()
    if not provider.refresh():
        raise RuntimeError(f"instance-type discovery in {region} failed: {provider.last_error}")
    found = provider.catalog()
    return LiveCatalog(provider), {
        "catalog": "discovered", "region": region, "instanceTypes": len(found.instance_types),
        "instanceTypesAvailable": _available(found),
        "offerings": sum(len(it.offerings) for it in found.instance_types),
        "discoverySeconds": round(time.monotonic() - t, 3), "onDemandPrices": provider.price_source}


def _available(catalog: Any) -> int:
    """Types with an offering the planner may use (available, so priced: semantics §17.1)."""
    return sum(1 for it in catalog.instance_types if any(o.available for o in it.offerings))


async def _serve(mode: str, kubeconfig: str, temporal: str, discover: str | None = None,
                 region: str = "us-east-1") -> None:
    if os.environ.get(ARENAS_ENV):
        limit_arenas(int(os.environ[ARENAS_ENV]))
    api = kube_api_client(kubeconfig)
    client = await Client.connect(temporal, data_converter=pydantic_data_converter)
    catalog, described = await asyncio.to_thread(_catalog, discover, region)
    catalog_rss = rss_mib()
    view = None
    started = time.monotonic()
    if mode == "cache":
        view = ClusterView(ClusterCache(api))
        view.start()
        await asyncio.to_thread(view.cache.wait_synced, 600)
    _say({"mode": mode, "syncSeconds": round(time.monotonic() - started, 3), "rssMiB": rss_mib(),
          "catalogRssMiB": catalog_rss, **described})
    kube = TimedKube(api)
    planning = PlanningActivities(kube, client, catalog, cluster=view)
    env = ActivityEnvironment()
    profile = _profiler(mode)
    suffix = f".{mode}" if discover is None else f".{mode}.discovered"
    passes = 0
    threads = _profile_threads(planning, view, lambda: passes > 0) if profile is not None else None
    try:
        while (await asyncio.to_thread(sys.stdin.readline)).strip() == "pass":
            t, cpu = time.monotonic(), time.process_time()
            if profile is not None and passes:  # steady passes only (the first loads everything)
                profile.enable()
            result = await env.run(planning.plan_pass, PlanPassInput(at=datetime.now(UTC)))
            if profile is not None and passes:
                profile.disable()
            passes += 1
            wall, cpu_used, before_trim = time.monotonic() - t, time.process_time() - cpu, rss_mib()
            if os.environ.get(TRIM_ENV):  # what malloc_trim hands back after a pass (not in the pass's times)
                release_free()
            _say({"seconds": round(wall, 3), "cpuSeconds": round(cpu_used, 3), "rssBeforeTrimMiB": before_trim,
                  "listSeconds": round(kube.list_seconds, 3),
                  "commands": len(result.commands), "methods": sorted({c.method for c in result.commands}),
                  "skipped": result.skipped, "reparsed": view.reparsed if view else None, "rssMiB": rss_mib(),
                  "catalogTypes": _planned_types(planning)})
    finally:
        if view is not None:
            view.stop()
        if profile is not None:
            profile.dump_stats(os.environ[PROFILE_ENV] + suffix)
        if threads is not None:
            threads.dump_stats(os.environ[PROFILE_ENV] + f"{suffix}.threads")
        if tracemalloc.is_tracing() and os.environ.get(TRACE_ENV):
            _dump_heap(os.environ[TRACE_ENV] + suffix)


def _dump_heap(path: str, top: int = 40) -> None:
    """What holds the memory at the end of the passes: traced bytes by file:line and by file, and the live
    objects the collector tracks by type (count, shallow bytes)."""
    snap = tracemalloc.take_snapshot()
    lines = [f"traced {tracemalloc.get_traced_memory()[0] / 2**20:.1f} MiB, RSS {rss_mib()} MiB", "", "by line:"]
    lines += [f"{s.size / 2**20:8.1f} MiB {s.count:9d} {s.traceback[0]}" for s in snap.statistics("lineno")[:top]]
    lines += ["", "by file:"]
    lines += [f"{s.size / 2**20:8.1f} MiB {s.count:9d} {s.traceback[0].filename}"
              for s in snap.statistics("filename")[:top]]
    by_type: dict[str, list[int]] = {}
    for obj in gc.get_objects():
        row = by_type.setdefault(type(obj).__qualname__, [0, 0])
        row[0] += 1
        row[1] += sys.getsizeof(obj)
    lines += ["", "collector-tracked objects by type (shallow):"]
    ranked = sorted(by_type.items(), key=lambda kv: -kv[1][1])[:top]
    lines += [f"{b / 2**20:8.1f} MiB {n:9d} {t}" for t, (n, b) in ranked]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def _planned_types(planning: PlanningActivities) -> int:
    """How many instance types a pass plans on: the catalog the activity resolves for it, as `_plan` does."""
    catalog = planning._catalog_for(None)
    return len(catalog.instance_types) if catalog is not None else 0


def _profiler(mode: str) -> cProfile.Profile | None:
    """With NODEFLOW_BENCH_PROFILE=<path>, profile every pass of this mode into <path>.<mode> (pstats)."""
    return cProfile.Profile() if os.environ.get(PROFILE_ENV) else None


def serve(mode: str, kubeconfig: str, temporal: str, discover: str | None = None, region: str = "us-east-1") -> int:
    asyncio.run(_serve(mode, kubeconfig, temporal, discover, region))
    return 0


def _profile_threads(planning: PlanningActivities, view: ClusterView | None,
                     steady: Callable[[], bool]) -> cProfile.Profile:
    """The pass's work in worker threads (the cache read, the decision), which the loop's profiler misses."""
    prof = cProfile.Profile()
    plan = planning._plan
    planning._plan = lambda *a, **k: prof.runcall(plan, *a, **k) if steady() else plan(*a, **k)  # type: ignore[method-assign]
    if view is not None:
        read = view.read
        view.read = lambda: prof.runcall(read) if steady() else read()  # type: ignore[method-assign]
    return prof
