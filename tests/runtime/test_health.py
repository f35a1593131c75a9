"""The worker's health/metrics endpoint, served for real on a free loopback port."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from runtime.health import HealthServer, MetricsBind, metrics_bind, parse_metrics_address, start_health_server
from runtime.settings import Deps
from telemetry import metrics


async def _get(session: aiohttp.ClientSession, url: str) -> tuple[int, str, str]:
    async with session.get(url) as resp:
        return resp.status, await resp.text(), resp.headers.get("Content-Type", "")


async def test_health_ready_and_metrics() -> None:
    state = {"polling": False}

    async def temporal_ok() -> bool:
        return True

    server = await start_health_server(0, checks={"worker": lambda: state["polling"], "temporal": temporal_ok},
                                       host="127.0.0.1")
    base = f"http://127.0.0.1:{server.port}"
    metrics.INTERRUPTION_MESSAGES.labels(kind="Malformed").inc()
    try:
        async with aiohttp.ClientSession() as session:
            assert (await _get(session, f"{base}/healthz"))[0] == 200
            status, text, _ = await _get(session, f"{base}/readyz")
            assert status == 503 and "worker" in text and "temporal" not in text
            state["polling"] = True
            assert (await _get(session, f"{base}/readyz"))[0] == 200
            status, text, ctype = await _get(session, f"{base}/metrics")
            assert status == 200 and ctype.startswith("text/plain")
            assert 'nodeflow_interruption_messages_total{kind="Malformed"}' in text
            assert "nodeflow_interruption_message_age_seconds_bucket" in text
    finally:
        await server.stop()


async def test_a_raising_check_means_not_ready() -> None:
    def boom() -> bool:
        raise RuntimeError("no connection")

    server = await start_health_server(0, checks={"temporal": boom}, host="127.0.0.1")
    try:
        async with aiohttp.ClientSession() as session:
            status, text, _ = await _get(session, f"http://127.0.0.1:{server.port}/readyz")
            assert status == 503 and "temporal" in text
    finally:
        await server.stop()


async def test_not_ready_until_the_cluster_cache_has_synced(k8s: object, temporal_client: object) -> None:
    """worker.py's readiness: a new replica counts as available (and a rollout moves on) only once its cache
    holds the cluster, so the planner always has a warm worker to run on."""
    from worker import readiness_checks

    deps = Deps(kube_api=k8s, ec2=None)
    server = await start_health_server(0, checks=readiness_checks(temporal_client, deps), host="127.0.0.1")
    url = f"http://127.0.0.1:{server.port}/readyz"
    try:
        async with aiohttp.ClientSession() as session:
            status, text, _ = await _get(session, url)
            assert status == 503 and "cluster-cache" in text and "temporal" not in text
            deps.cluster.start()
            assert await asyncio.to_thread(deps.cluster.cache.wait_synced, 10)
            assert (await _get(session, url))[0] == 200
    finally:
        deps.cluster.stop()
        await server.stop()


def test_metrics_address_gives_host_and_port_and_wins_over_the_port() -> None:
    import worker

    args = worker.parse_args(["--metrics-address", "127.0.0.1:8080", "--metrics-port", "9000"])
    assert metrics_bind(args.metrics_address, args.metrics_port) == MetricsBind("127.0.0.1", 8080)
    assert metrics_bind(None, 9000) == MetricsBind("0.0.0.0", 9000)  # the port alone: every interface, as before
    assert metrics_bind(None, 0) is None
    assert parse_metrics_address(":8080") == MetricsBind("0.0.0.0", 8080)
    assert parse_metrics_address("[::1]:8080") == MetricsBind("::1", 8080)
    with pytest.raises(SystemExit):
        worker.parse_args(["--metrics-address", "127.0.0.1"])


def test_the_environment_sets_the_metrics_address(monkeypatch: pytest.MonkeyPatch) -> None:
    import worker

    monkeypatch.setenv("NODEFLOW_METRICS_ADDRESS", "127.0.0.1:9100")
    assert worker.parse_args([]).metrics_address == "127.0.0.1:9100"


async def test_the_endpoint_binds_only_where_asked() -> None:
    """Bound to 127.0.0.2 (a loopback alias on Linux), it answers there and refuses 127.0.0.1 on the same port."""
    import worker

    args = worker.parse_args(["--metrics-address", "127.0.0.2:0"])
    bind = metrics_bind(args.metrics_address, args.metrics_port)
    assert bind is not None
    server = await start_health_server(bind.port, host=bind.host)
    try:
        async with aiohttp.ClientSession() as session:
            assert (await _get(session, f"http://127.0.0.2:{server.port}/metrics"))[0] == 200
            with pytest.raises(aiohttp.ClientConnectorError):
                await _get(session, f"http://127.0.0.1:{server.port}/metrics")
    finally:
        await server.stop()


async def _raw(port: int, request: bytes) -> bytes:
    """What the endpoint answers a request sent as is, read until it closes the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    try:
        return await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()


async def test_what_is_not_a_probe_or_a_scrape_gets_a_plain_http_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unknown paths 404, other methods 405, HEAD no body, a malformed or endless head 400, a silent client is let go
    after READ_TIMEOUT, and each request gets its own connection closed after the answer."""
    from runtime import health

    monkeypatch.setattr(health, "READ_TIMEOUT", 0.5)
    server = await start_health_server(0, host="127.0.0.1")
    try:
        ok = await _raw(server.port, b"GET /healthz?verbose=1 HTTP/1.1\r\nHost: x\r\n\r\n")
        assert ok.startswith(b"HTTP/1.1 200 OK\r\n") and b"Connection: close" in ok and ok.endswith(b"\r\n\r\nok\n")
        assert (await _raw(server.port, b"GET /nope HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 404 ")
        refused = await _raw(server.port, b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
        assert refused.startswith(b"HTTP/1.1 405 ") and b"Allow: GET, HEAD" in refused
        head = await _raw(server.port, b"HEAD /healthz HTTP/1.1\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 ") and b"Content-Length: 3" in head and head.endswith(b"\r\n\r\n")
        assert (await _raw(server.port, b"hello\r\n\r\n")).startswith(b"HTTP/1.1 400 ")
        endless = b"GET /healthz HTTP/1.1\r\n" + b"X-Pad: " + b"a" * (health.MAX_HEAD + 10) + b"\r\n\r\n"
        assert (await _raw(server.port, endless)).startswith(b"HTTP/1.1 400 ")
        assert await _raw(server.port, b"GET /healthz HTTP/1.1\r\n") == b""  # never finished its head
        metrics_answer = await _raw(server.port, b"GET /metrics HTTP/1.1\r\n\r\n")
        assert b"Content-Type: text/plain; version=" in metrics_answer  # Prometheus's text format, versioned
    finally:
        await server.stop()


def test_the_worker_loads_no_aiohttp() -> None:
    """Its endpoint is asyncio's and its policy hooks urllib's: aiohttp cost every start 0.18 CPU-s to import (its
    TLS contexts are made at import), and the image no longer installs it (pyproject's [sim] extra has it)."""
    probe = "import sys; sys.argv = ['worker.py']; import worker; print(sorted({m.split('.')[0] for m in sys.modules}))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=Path(__file__).resolve().parents[2], capture_output=True,
                         text=True, timeout=60, check=True)
    loaded = out.stdout
    assert "'worker'" in loaded and "'temporalio'" in loaded, loaded[-500:]
    assert "'aiohttp'" not in loaded and "'multidict'" not in loaded and "'yarl'" not in loaded


async def test_a_collector_that_raises_fails_the_scrape_not_the_endpoint() -> None:
    class Broken:
        def collect(self) -> list[object]:
            raise RuntimeError("cache gone")

    registry = CollectorRegistry()
    registry.register(Broken())  # type: ignore[arg-type]
    server = await HealthServer(0, host="127.0.0.1", registry=registry).start()
    try:
        assert (await _raw(server.port, b"GET /metrics HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 500 ")
        assert (await _raw(server.port, b"GET /healthz HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 200 ")
    finally:
        await server.stop()
