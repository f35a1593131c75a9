"""bench/worker_metrics.py: the worker's validation counters read over HTTP, summed over methods, as deltas; its
discovered instance types, which bench.karpenter_suite waits for before a scenario starts."""

from __future__ import annotations

import asyncio
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from bench.karpenter_suite import wait_for_discovery
from bench.worker_metrics import instance_types_discovered, since, validations


def _serve(registry: CollectorRegistry) -> HTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = generate_latest(registry)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_validations_are_summed_over_methods_and_compared_between_reads() -> None:
    registry = CollectorRegistry()
    counter = Counter("nodeflow_disruption_validations_total", "x", ["method", "result"], registry=registry)
    counter.labels(method="SingleNodeConsolidation", result="valid").inc(3)
    counter.labels(method="MultiNodeConsolidation", result="valid").inc(2)
    counter.labels(method="SingleNodeConsolidation", result="new_scheduling_results").inc()
    server = _serve(registry)
    try:
        port = server.server_address[1]
        before = validations(port)
        assert before == {"valid": 5.0, "new_scheduling_results": 1.0}
        counter.labels(method="SingleNodeConsolidation", result="valid").inc()
        assert since(before, validations(port)) == {"valid": 1}
    finally:
        server.shutdown()


def test_a_worker_that_does_not_answer_reads_as_nothing() -> None:
    server = HTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = server.server_address[1]
    server.server_close()
    assert validations(port) == {}
    assert instance_types_discovered(port) is None


def test_the_suite_waits_until_the_worker_plans_on_discovered_types() -> None:
    registry = CollectorRegistry()
    server = _serve(registry)
    try:
        port = server.server_address[1]
        assert instance_types_discovered(port) == 0.0  # no gauge yet
        gauge = Gauge("nodeflow_instance_types_discovered", "x", registry=registry)
        assert instance_types_discovered(port) == 0.0  # the bundled catalog stands in
        with pytest.raises(TimeoutError):
            asyncio.run(wait_for_discovery(port, 0.2))

        async def discovered_later() -> float:
            async def refresh() -> None:
                await asyncio.sleep(0.3)
                gauge.set(1366)
            task = asyncio.create_task(refresh())
            waited = await wait_for_discovery(port, 10.0)
            await task
            return waited

        assert 0.3 <= asyncio.run(discovered_later()) < 5.0
        assert instance_types_discovered(port) == 1366
    finally:
        server.shutdown()
