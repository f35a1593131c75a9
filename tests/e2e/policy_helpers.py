"""Helpers of the DisruptionPolicy e2e tests: a tiny HTTP endpoint that answers a scripted series of statuses and
keeps what it was sent, and a drift command planned by the real planner on the simulator's objects."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from contracts.disruption import DisruptionCommand


@dataclass
class Endpoint:
    """Answers `statuses` in turn (the last one from then on); `calls` holds each request's JSON body."""

    statuses: list[int]
    url: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        self.calls.append(json.loads(await request.text()))
        status = self.statuses[min(len(self.calls), len(self.statuses)) - 1]
        return web.Response(status=status, text="{}")

    def events(self) -> list[str]:
        return [c.get("event", "") for c in self.calls]


@asynccontextmanager
async def endpoint(statuses: list[int]) -> AsyncIterator[Endpoint]:
    ep = Endpoint(statuses)
    app = web.Application()
    app.router.add_post("/{tail:.*}", ep.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    ep.url = f"http://{host}:{port}/hook"
    try:
        yield ep
    finally:
        await runner.cleanup()


def planned_command(api: Any, node: str, method: str = "Drift") -> DisruptionCommand:
    """The command the real planner makes now for `node` (its uids, claims and replacements resolved)."""
    from activities.planning_runner import node_index, to_command
    from api.snapshot import Snapshot
    from gateways.kube import KubeClient
    from planning.planner.plan import plan

    objs = KubeClient(api).cluster_objects()
    result = plan(Snapshot.from_objects(objs), datetime.now(UTC))
    cmd = next((c for c in result.commands if node in c.nodes and c.method == method), None)
    assert cmd is not None, f"no {method} command for {node}: {result.commands} blocked {result.blocked}"
    return to_command(cmd, node_index(objs))
