"""The worker side of bench/planner_live.py: the planner activity as the worker wires it, one pass per stdin line.

Mode `list`: PlanningActivities without a cluster source (a LIST of every kind per pass). Mode `cache`: with a
ClusterView over a ClusterCache started here (the sync time is reported first). Each pass runs
`plan_pass` in Temporal's ActivityEnvironment (the visibility query goes to the dev server) and answers one
JSON line: seconds, commands, skip reason, pods re-parsed, and the process's RSS.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from datetime import UTC, datetime
from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import ActivityEnvironment

from activities.kube_client import KubeClient
from activities.planning_runner import PlanningActivities
from api.catalog import load_default_catalog
from runtime.cloud_clients import kube_api_client
from runtime.cluster_cache import ClusterCache
from runtime.cluster_view import ClusterView
from workflows.disruption_models import PlanPassInput


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


async def _serve(mode: str, kubeconfig: str, temporal: str) -> None:
    api = kube_api_client(kubeconfig)
    client = await Client.connect(temporal, data_converter=pydantic_data_converter)
    view = None
    started = time.monotonic()
    if mode == "cache":
        view = ClusterView(ClusterCache(api))
        view.start()
        await asyncio.to_thread(view.cache.wait_synced, 600)
    _say({"mode": mode, "syncSeconds": round(time.monotonic() - started, 3), "rssMiB": rss_mib()})
    kube = TimedKube(api)
    planning = PlanningActivities(kube, client, load_default_catalog(), cluster=view)
    env = ActivityEnvironment()
    try:
        while (await asyncio.to_thread(sys.stdin.readline)).strip() == "pass":
            t = time.monotonic()
            result = await env.run(planning.plan_pass, PlanPassInput(at=datetime.now(UTC)))
            _say({"seconds": round(time.monotonic() - t, 3), "listSeconds": round(kube.list_seconds, 3),
                  "commands": len(result.commands),
                  "skipped": result.skipped, "reparsed": view.reparsed if view else None, "rssMiB": rss_mib()})
    finally:
        if view is not None:
            view.stop()


def serve(mode: str, kubeconfig: str, temporal: str) -> int:
    asyncio.run(_serve(mode, kubeconfig, temporal))
    return 0
