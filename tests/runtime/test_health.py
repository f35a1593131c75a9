"""The worker's health/metrics endpoint, served for real on a free loopback port."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from runtime.health import MetricsBind, metrics_bind, parse_metrics_address, start_health_server
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
