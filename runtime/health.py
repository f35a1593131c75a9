"""The worker's HTTP endpoint: `/healthz` (liveness), `/readyz` (readiness) and Prometheus `/metrics`.

Liveness only says the event loop answers, so a slow Temporal server never gets pods restarted;
readiness runs the worker's checks (e.g. "the Temporal worker is polling"), so a pod that lost its
connection stops counting as available during a rollout.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry

from telemetry.exposition import render
from telemetry.metrics import REGISTRY

log = logging.getLogger(__name__)

ReadinessCheck = Callable[[], bool | Awaitable[bool]]
CHECK_TIMEOUT = 2.0
ALL_INTERFACES = "0.0.0.0"


@dataclass(frozen=True)
class MetricsBind:
    """Where the health and metrics endpoint listens."""

    host: str
    port: int


def parse_metrics_address(text: str) -> MetricsBind:
    """`HOST:PORT`, `:PORT` (every interface, as Go's net.Listen reads it) or `[v6]:PORT`; port 0 picks a free one."""
    host, sep, port = text.strip().rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"metrics address {text!r} is not HOST:PORT (e.g. 127.0.0.1:8080 or :8080)")
    return MetricsBind(host=host.strip("[]") or ALL_INTERFACES, port=int(port))


def metrics_bind(address: str | None, port: int) -> MetricsBind | None:
    """`--metrics-address` when given (host and port), else `--metrics-port` on every interface, else off."""
    if address:
        return parse_metrics_address(address)
    return MetricsBind(host=ALL_INTERFACES, port=port) if port else None


class HealthServer:
    """Serve health and metrics on `host:port` until `stop()`; checks are named so `/readyz` can say which failed."""

    def __init__(self, port: int, host: str = ALL_INTERFACES, registry: CollectorRegistry = REGISTRY,
                 checks: dict[str, ReadinessCheck] | None = None) -> None:
        self.host = host
        self.port = port
        self._registry = registry
        self._checks: dict[str, ReadinessCheck] = dict(checks or {})
        self._runner: web.AppRunner | None = None

    def add_check(self, name: str, check: ReadinessCheck) -> None:
        self._checks[name] = check

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/livez", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        return app

    async def start(self) -> HealthServer:
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        if self.port == 0:  # an ephemeral port was asked for: report the real one
            server = site._server  # aiohttp exposes no public accessor for the bound socket
            if server is not None and getattr(server, "sockets", None):
                self.port = server.sockets[0].getsockname()[1]
        log.info("health and metrics on http://%s:%d (/healthz /readyz /metrics)", self.host, self.port)
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _readyz(self, _: web.Request) -> web.Response:
        failed = [name for name, ok in zip(self._checks, await asyncio.gather(
            *(self._run_check(c) for c in self._checks.values())), strict=True) if not ok]
        if failed:
            return web.Response(status=503, text="not ready: " + ", ".join(failed) + "\n")
        return web.Response(text="ok\n")

    @staticmethod
    async def _run_check(check: ReadinessCheck) -> bool:
        try:
            result = check()
            if inspect.isawaitable(result):
                result = await asyncio.wait_for(result, CHECK_TIMEOUT)
            return bool(result)
        except Exception as exc:
            log.warning("readiness check failed: %s", exc)
            return False

    async def _metrics(self, _: web.Request) -> web.Response:
        # in a thread: Karpenter's state gauges make a scrape of a large cluster take seconds (docs/semantics.md §19.2);
        # rendered as generate_latest does, each label set once (telemetry/exposition.py)
        body = await asyncio.to_thread(render, self._registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


async def start_health_server(port: int, checks: dict[str, ReadinessCheck] | None = None,
                              host: str = ALL_INTERFACES) -> HealthServer:
    """What worker.py calls for `--metrics-address` / `--metrics-port`; 0 picks a free port (tests)."""
    return await HealthServer(port, host=host, checks=checks).start()
