"""The chaos knobs of the control API: an outage (every API request answers 503), a cut of the open watch
streams, and 410 Gone on the next watch resumes; each counted in /sim/stats under faultKnobs."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client import ApiException
from support.sim_objects import node, wait_for
from urllib3.exceptions import ProtocolError

from simulator.server import Simulator


def _call(sim: Simulator, method: str, path: str, body: dict | None = None) -> dict[str, Any]:
    req = urllib.request.Request(sim.base_url + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None)
    with urllib.request.urlopen(req, timeout=5) as resp:
        return json.loads(resp.read())


def _knobs(sim: Simulator) -> dict[str, Any]:
    return _call(sim, "GET", "/sim/stats")["faultKnobs"]


class _Watching:
    """A kubernetes.watch stream of nodes in a thread, resuming by itself (no timeout_seconds) as informers do."""

    def __init__(self, v1: client.CoreV1Api, resource_version: str) -> None:
        self.names: list[str] = []
        self.error: ApiException | None = None
        self._closing = False
        self._watch = watch.Watch()
        self._thread = threading.Thread(target=self._run, args=(v1, resource_version), daemon=True)
        self._thread.start()

    def _run(self, v1: client.CoreV1Api, resource_version: str) -> None:
        try:
            for ev in self._watch.stream(v1.list_node, resource_version=resource_version):
                self.names.append(ev["object"].metadata.name)
        except ApiException as exc:
            self.error = exc
        except ProtocolError:
            if not self._closing:
                raise

    def ended(self) -> bool:
        return not self._thread.is_alive()

    def close(self, sim: Simulator) -> None:
        """Stop resuming and end the open stream (Watch.stop() alone may leave the read blocked until the next
        event, or break it by shutting the client's own socket down)."""
        self._closing = True
        self._watch.stop()
        if not self.ended():
            sim.cut_watches()
        self._thread.join(5)
        assert self.ended(), "the watch thread did not end"


def test_outage_answers_503_until_switched_off_or_timed_out(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("n1")])
    v1 = client.CoreV1Api(k8s)
    sim.outage()
    with pytest.raises(ApiException) as exc:
        v1.read_node("n1")
    assert exc.value.status == 503 and json.loads(exc.value.body)["reason"] == "ServiceUnavailable"
    with pytest.raises(ApiException):
        v1.create_node(node("n2"))
    assert _knobs(sim)["outageActive"] is True, "the control API stays reachable during an outage"
    sim.end_outage()
    assert v1.read_node("n1").metadata.name == "n1"
    assert _call(sim, "POST", "/sim/outage", {"seconds": 0.3}) == {"outage": True, "seconds": 0.3}
    with pytest.raises(ApiException):
        v1.list_node()
    time.sleep(0.35)
    assert [n.metadata.name for n in v1.list_node().items] == ["n1"], "the timed outage ended by itself"
    _call(sim, "POST", "/sim/outage", {})
    with pytest.raises(urllib.error.HTTPError) as http:
        urllib.request.urlopen(sim.base_url + "/version", timeout=5)
    assert http.value.code == 503
    assert _call(sim, "DELETE", "/sim/outage") == {"outage": False}
    knobs = _knobs(sim)
    assert (knobs["outagesStarted"], knobs["outageRejected"], knobs["outageActive"]) == (3, 4, False)


def test_outage_breaks_open_watches(sim: Simulator, k8s: client.ApiClient) -> None:
    v1 = client.CoreV1Api(k8s)
    watching = _Watching(v1, v1.list_node().metadata.resource_version)
    wait_for(lambda: _knobs(sim)["watchesOpen"] == 1, what="the watch open")
    sim.outage()
    wait_for(watching.ended, what="the watch broken by the outage")
    assert watching.error is not None and watching.error.status == 503, "its resume met the outage"
    sim.end_outage()
    knobs = _knobs(sim)
    assert (knobs["watchCuts"], knobs["watchStreamsCut"], knobs["watchesOpen"]) == (1, 1, 0)


def test_watch_cut_ends_streams_and_clients_resume(sim: Simulator, k8s: client.ApiClient) -> None:
    v1 = client.CoreV1Api(k8s)
    watching = _Watching(v1, v1.list_node().metadata.resource_version)
    try:
        wait_for(lambda: _knobs(sim)["watchesOpen"] == 1, what="the watch open")
        v1.create_node(node("a"))
        wait_for(lambda: watching.names == ["a"], what="a seen")
        requests = sim.stats()["requests"]
        assert sim.cut_watches() == 1
        wait_for(lambda: sim.stats()["requests"] > requests and _knobs(sim)["watchesOpen"] == 1,
                 what="the client resumed")
        v1.create_node(node("b"))
        assert _call(sim, "POST", "/sim/watches/cut") == {"cut": 1}
        wait_for(lambda: _knobs(sim)["watchesOpen"] == 1, what="resumed again")
        v1.create_node(node("c"))
        wait_for(lambda: watching.names == ["a", "b", "c"], what="b and c seen once each across the cuts")
        knobs = _knobs(sim)
        assert (knobs["watchCuts"], knobs["watchStreamsCut"]) == (2, 2)
    finally:
        watching.close(sim)


def test_gone_on_the_next_resumes(sim: Simulator, k8s: client.ApiClient) -> None:
    v1 = client.CoreV1Api(k8s)
    rv = v1.list_node().metadata.resource_version
    sim.gone_on_next_resume()
    watching = _Watching(v1, rv)  # one Gone: the client retries once from the same version and goes on
    try:
        wait_for(lambda: _knobs(sim)["watchesOpen"] == 1, what="the watch open after its retry")
        v1.create_node(node("a"))
        wait_for(lambda: watching.names == ["a"], what="a seen")
    finally:
        watching.close(sim)
    assert _call(sim, "POST", "/sim/watches/gone", {"count": 2}) == {"goneArmed": 2}
    twice = _Watching(v1, rv)  # two in a row: the client gives up with 410, as after a real compaction
    wait_for(twice.ended, what="the watch given up")
    assert twice.error is not None and twice.error.status == 410
    assert [n.metadata.name for n in v1.list_node().items] == ["a"], "a list is never answered Gone"
    knobs = _knobs(sim)
    assert (knobs["goneServed"], knobs["goneArmed"]) == (3, 0)


def test_knob_settings_are_validated(sim: Simulator) -> None:
    for path, body in (("/sim/outage", {"seconds": -1}), ("/sim/outage", {"seconds": "soon"}),
                       ("/sim/watches/gone", {"count": -1})):
        with pytest.raises(urllib.error.HTTPError) as exc:
            _call(sim, "POST", path, body)
        assert exc.value.code == 422, path
    with pytest.raises(urllib.error.HTTPError) as exc:
        _call(sim, "GET", "/sim/watches/cut")
    assert exc.value.code == 405
    assert _knobs(sim) == {"outagesStarted": 0, "outageRejected": 0, "watchCuts": 0, "watchStreamsCut": 0,
                           "goneServed": 0, "outageActive": False, "goneArmed": 0, "watchesOpen": 0}
