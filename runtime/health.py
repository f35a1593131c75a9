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
from dataclasses import dataclass, field
from http import HTTPStatus

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry

from telemetry.exposition import render
from telemetry.metrics import REGISTRY

log = logging.getLogger(__name__)

ReadinessCheck = Callable[[], bool | Awaitable[bool]]
CHECK_TIMEOUT = 2.0
MAX_HEAD = 16 * 1024  # bytes of a request's line and headers (probes and scrapes send a few hundred)
READ_TIMEOUT = 5.0  # seconds to send them
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
    """Serve health and metrics on `host:port` until `stop()`; checks are named so `/readyz` can say which failed.

    HTTP/1.1 GET (and HEAD) on the worker's own event loop, one request a connection (`Connection: close`), as the
    kubelet's probes and Prometheus's scrapes ask: asyncio's streams rather than aiohttp's server, whose package
    cost every worker start 0.18 CPU-s to import. A request's head is bounded (MAX_HEAD bytes, READ_TIMEOUT
    seconds) so a slow or endless client holds nothing for long.
    """

    def __init__(self, port: int, host: str = ALL_INTERFACES, registry: CollectorRegistry = REGISTRY,
                 checks: dict[str, ReadinessCheck] | None = None) -> None:
        self.host = host
        self.port = port
        self._registry = registry
        self._checks: dict[str, ReadinessCheck] = dict(checks or {})
        self._server: asyncio.base_events.Server | None = None
        self._routes: dict[str, Callable[[], Awaitable[Answer]]] = {
            "/healthz": self._healthz, "/livez": self._healthz, "/readyz": self._readyz, "/metrics": self._metrics}

    def add_check(self, name: str, check: ReadinessCheck) -> None:
        self._checks[name] = check

    async def start(self) -> HealthServer:
        self._server = await asyncio.start_server(self._serve, self.host, self.port, limit=MAX_HEAD)
        if self.port == 0:  # an ephemeral port was asked for: report the real one
            self.port = self._server.sockets[0].getsockname()[1]
        log.info("health and metrics on http://%s:%d (/healthz /readyz /metrics)", self.host, self.port)
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                method, path = _request_line(await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT))
            except (asyncio.LimitOverrunError, ValueError):  # a head too long, or not HTTP
                method, answer = "GET", Answer(400, "bad request\n")
            else:
                answer = await self._answer(method, path)
            writer.write(_response(answer, body=method != "HEAD"))
            await writer.drain()
        except (asyncio.IncompleteReadError, TimeoutError, ConnectionError):
            pass  # a client that went away or sent no head in time: nobody to answer
        finally:
            writer.close()

    async def _answer(self, method: str, path: str) -> Answer:
        route = self._routes.get(path.split("?", 1)[0])
        if route is None:
            return Answer(404, "not found\n")
        if method not in ("GET", "HEAD"):
            return Answer(405, "method not allowed\n", {"Allow": "GET, HEAD"})
        try:
            return await route()
        except Exception:  # a collector that raised: the scraper sees a failed scrape, the log says why
            log.exception("%s %s failed", method, path)
            return Answer(500, "internal error\n")

    async def _healthz(self) -> Answer:
        return Answer(200, "ok\n")

    async def _readyz(self) -> Answer:
        failed = [name for name, ok in zip(self._checks, await asyncio.gather(
            *(self._run_check(c) for c in self._checks.values())), strict=True) if not ok]
        if failed:
            return Answer(503, "not ready: " + ", ".join(failed) + "\n")
        return Answer(200, "ok\n")

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

    async def _metrics(self) -> Answer:
        # in a thread: Karpenter's state gauges make a scrape of a large cluster take seconds (docs/semantics.md §19.2);
        # rendered as generate_latest does, each label set once (telemetry/exposition.py)
        body = await asyncio.to_thread(render, self._registry)
        return Answer(200, body, {"Content-Type": CONTENT_TYPE_LATEST})


@dataclass(frozen=True)
class Answer:
    """A response: its status, its body (text is UTF-8) and headers beyond the length and the connection's close."""

    status: int
    body: str | bytes
    headers: dict[str, str] = field(default_factory=dict)


def _request_line(head: bytes) -> tuple[str, str]:
    """The method and target of a request head; ValueError when the first line is not `METHOD TARGET HTTP/x`."""
    method, target, version = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
    if not version.startswith("HTTP/"):
        raise ValueError(version)
    return method, target


def _response(answer: Answer, body: bool = True) -> bytes:
    payload = answer.body.encode() if isinstance(answer.body, str) else answer.body
    headers = {"Content-Type": "text/plain; charset=utf-8", **answer.headers, "Content-Length": str(len(payload)),
               "Connection": "close"}
    lines = [f"HTTP/1.1 {answer.status} {HTTPStatus(answer.status).phrase}"] + [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (payload if body else b"")


async def start_health_server(port: int, checks: dict[str, ReadinessCheck] | None = None,
                              host: str = ALL_INTERFACES) -> HealthServer:
    """What worker.py calls for `--metrics-address` / `--metrics-port`; 0 picks a free port (tests)."""
    return await HealthServer(port, host=host, checks=checks).start()
