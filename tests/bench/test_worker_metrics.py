"""bench/worker_metrics.py: the worker's validation counters read over HTTP, summed over methods, as deltas; its
discovered instance types, which bench.karpenter_suite waits for before a scenario starts."""

from __future__ import annotations

import asyncio
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from bench.worker_metrics import (
    LAG,
    LAG_THRESHOLDS,
    START_DELAY,
    drain_start_delay,
    event_loop_lag,
    histogram_sum_count,
    instance_types_discovered,
    launches,
    read,
    ready,
    since,
    totals,
    validations,
    wait_for_discovery,
)
from devstack.processes import free_port
from runtime.health import HealthServer
from telemetry.metrics import ACTIVITY_START_DELAY, REGISTRY


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


def test_nodeclaims_created_are_read_by_reason_over_pools() -> None:
    """A consolidation phase's launches for pending pods (reason `provisioning`) apart from its replacements."""
    registry = CollectorRegistry()
    counter = Counter("karpenter_nodeclaims_created_total", "x", ["reason", "nodepool", "min_values_relaxed"],
                      registry=registry)
    counter.labels(reason="provisioning", nodepool="a", min_values_relaxed="false").inc(4)
    counter.labels(reason="provisioning", nodepool="b", min_values_relaxed="false").inc(1)
    counter.labels(reason="underutilized", nodepool="a", min_values_relaxed="false").inc(2)
    server = _serve(registry)
    try:
        port = server.server_address[1]
        before = launches(port)
        assert before == {"provisioning": 5.0, "underutilized": 2.0}
        counter.labels(reason="provisioning", nodepool="a", min_values_relaxed="false").inc(3)
        assert since(before, launches(port)) == {"provisioning": 3}
    finally:
        server.shutdown()


def test_a_worker_that_does_not_answer_reads_as_nothing() -> None:
    server = HTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = server.server_address[1]
    server.server_close()
    assert validations(port) == {}
    assert launches(port) == {}
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


def test_one_reading_gives_counters_by_the_labels_asked_and_a_histograms_sum_and_count() -> None:
    registry = CollectorRegistry()
    decisions = Counter("nodeflow_disruption_decisions_total", "x", ["method", "reason", "decision"],
                        registry=registry)
    decisions.labels(method="MultiNodeConsolidation", reason="Underutilized", decision="delete").inc(2)
    decisions.labels(method="MultiNodeConsolidation", reason="Empty", decision="delete").inc()
    decisions.labels(method="SingleNodeConsolidation", reason="Underutilized", decision="replace").inc()
    evaluation = Histogram("karpenter_voluntary_disruption_decision_evaluation_duration_seconds", "x",
                           ["reason", "consolidation_type"], registry=registry)
    evaluation.labels(reason="", consolidation_type="").observe(0.25)
    evaluation.labels(reason="", consolidation_type="").observe(0.75)
    server = _serve(registry)
    try:
        text = read(server.server_address[1])
        assert text is not None
        assert totals(text, "nodeflow_disruption_decisions", ("method", "decision")) == {
            "MultiNodeConsolidation/delete": 3.0, "SingleNodeConsolidation/replace": 1.0}
        assert histogram_sum_count(text, "karpenter_voluntary_disruption_decision_evaluation_duration_seconds") == (
            1.0, 2.0)
    finally:
        server.shutdown()
    closed = HTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = closed.server_address[1]
    closed.server_close()
    assert read(port, attempts=2, timeout=0.5) is None


async def test_ready_is_a_200_from_readyz_and_nothing_else() -> None:
    ok = {"cache": True}
    server = await HealthServer(0, "127.0.0.1", checks={"cache": lambda: ok["cache"]}).start()
    try:
        assert await asyncio.to_thread(ready, server.port)
        ok["cache"] = False  # /readyz answers 503
        assert not await asyncio.to_thread(ready, server.port)
    finally:
        await server.stop()
    assert not await asyncio.to_thread(ready, free_port())  # nothing listens



def test_event_loop_lag_counts_the_samples_past_each_threshold() -> None:
    registry = CollectorRegistry()
    lag = Histogram(LAG, "lag", buckets=(0.5, 1, 5, 15, 30), registry=registry)
    for seconds in (0.01, 0.2, 2.0, 7.0, 20.0):
        lag.observe(seconds)
    assert event_loop_lag(generate_latest(registry).decode()) == {"samples": 5, "over1s": 3, "over5s": 2,
                                                                  "over15s": 1}
    assert event_loop_lag(None) == {}


def test_the_workers_lag_histogram_has_a_bucket_at_each_threshold() -> None:
    text = generate_latest(REGISTRY).decode()
    assert all(f'{LAG}_bucket{{le="{t}"}}' in text for t in LAG_THRESHOLDS)


def test_drain_start_delay_counts_drain_attempts_only() -> None:
    registry = CollectorRegistry()
    delay = Histogram(START_DELAY, "delay", ["activity_type"], buckets=(1, 5, 15, 30), registry=registry)
    for seconds in (0.2, 3.0, 20.0):
        delay.labels(activity_type="termination.drain").observe(seconds)
    delay.labels(activity_type="termination.prepare").observe(40.0)
    assert drain_start_delay(generate_latest(registry).decode()) == {"samples": 3, "over5s": 1, "over15s": 1}


def test_the_start_delay_histogram_has_a_bucket_at_each_threshold() -> None:
    ACTIVITY_START_DELAY.labels(activity_type="termination.drain")  # a labelled histogram shows once it has a child
    text = generate_latest(REGISTRY).decode()
    assert all(f'{START_DELAY}_bucket{{activity_type="termination.drain",le="{t}"}}' in text for t in (5.0, 15.0))
