"""Injected faults and the /sim endpoints."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

from kubernetes import client
from kubernetes.client import ApiException
from support.sim_objects import node

from simulator.server import Simulator


def test_fault_rate_codes_and_latency(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("n1")])
    v1 = client.CoreV1Api(k8s)
    sim.inject_faults(rate=1.0, codes=(429,))
    try:  # plain HTTP: the kubernetes client itself would honour Retry-After and retry
        urllib.request.urlopen(sim.base_url + "/api/v1/nodes/n1", timeout=5)
        raise AssertionError("expected an injected 429")
    except urllib.error.HTTPError as exc:
        assert exc.code == 429 and exc.headers.get("Retry-After") == "1"
        assert json.loads(exc.read())["reason"] == "TooManyRequests"
    sim.inject_faults(rate=1.0, codes=(409,))
    v1.read_node("n1")  # 409 only hits writes
    try:
        v1.patch_node("n1", {"metadata": {"labels": {"a": "b"}}})
        raise AssertionError("expected an injected 409")
    except ApiException as exc:
        assert exc.status == 409
    sim.inject_faults(rate=0.5, codes=(500,))
    codes = []
    for _ in range(60):
        try:
            v1.read_node("n1")
            codes.append(200)
        except ApiException as exc:
            codes.append(exc.status)
    assert set(codes) == {200, 500} and 10 < codes.count(500) < 50
    sim.inject_faults(rate=0.0, latency=0.2)
    started = time.monotonic()
    v1.read_node("n1")
    assert time.monotonic() - started >= 0.2
    sim.inject_faults()
    stats = sim.stats()
    assert stats["faultsInjected"]["429"] == 1 and stats["faultsInjected"]["500"] == codes.count(500)


def test_sim_http_endpoints(sim: Simulator) -> None:
    sim.load_objects([node("n1"), node("n2")])

    def call(method: str, path: str, body: dict | None = None) -> dict:
        req = urllib.request.Request(sim.base_url + path, method=method,
                                     data=json.dumps(body).encode() if body is not None else None)
        with urllib.request.urlopen(req, timeout=5) as resp:
            return json.loads(resp.read())

    assert call("POST", "/sim/nodes/n2/notready") == {"node": "n2", "ready": False}
    stats = call("GET", "/sim/stats")
    assert stats["nodes"]["Ready"] == 1 and stats["nodes"]["NotReady"] == 1
    assert {"evictions", "pdbViolations", "podsPending", "nodes"} <= set(stats)
    assert call("POST", "/sim/faults", {"rate": 0.25, "codes": [500]}) == {"rate": 0.25}
    assert sim.faults.config.codes == (500,)
    assert call("GET", "/sim/ledger")["removals"] == []
    assert call("POST", "/sim/never-ready", {"instanceType": "m5.large"})["neverReady"] == ["m5.large"]
