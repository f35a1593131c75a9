"""/sim/stats byVerb: requests and response bytes per Kubernetes verb, over HTTP; watch bytes counted as the
events are written (so a benchmark can read them while streams stay open); a bool sent capitalized
(allowWatchBookmarks=True, as the Python client does) is understood."""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

from kubernetes import client
from support.sim_objects import node

from simulator.server import Simulator
from simulator.traffic import verb_of


def _get(sim: Simulator, path: str) -> bytes:
    with urllib.request.urlopen(sim.base_url + path, timeout=10) as resp:
        return resp.read()


def _by_verb(sim: Simulator) -> dict[str, Any]:
    return json.loads(_get(sim, "/sim/stats"))["byVerb"]


def test_verbs_of_paths() -> None:
    assert verb_of("GET", "/api/v1/pods", {}) == "list"
    assert verb_of("GET", "/api/v1/namespaces/default/pods", {"watch": "True"}) == "watch"
    assert verb_of("GET", "/api/v1/watch/nodes", {}) == "watch"
    assert verb_of("GET", "/api/v1/namespaces/default/pods/p", {}) == "get"
    assert verb_of("GET", "/api/v1/namespaces", {}) == "list"
    assert verb_of("GET", "/api/v1/namespaces/default", {}) == "get"
    assert verb_of("PATCH", "/apis/karpenter.sh/v1/nodeclaims/c", {}) == "patch"
    assert verb_of("POST", "/api/v1/namespaces/d/pods/p/eviction", {}) == "create"
    assert verb_of("DELETE", "/api/v1/nodes", {}) == "deletecollection"
    assert verb_of("GET", "/apis", {}) == "discovery" and verb_of("GET", "/version", {}) == "other"


def test_requests_and_bytes_per_verb(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("a"), node("b")])
    before = _by_verb(sim)
    body = _get(sim, "/api/v1/nodes")
    client.CoreV1Api(k8s).patch_node("a", {"metadata": {"labels": {"x": "y"}}})
    after = _by_verb(sim)
    assert after["list"]["requests"] == before.get("list", {}).get("requests", 0) + 1
    assert after["list"]["bytes"] - before.get("list", {}).get("bytes", 0) == len(body)
    assert after["patch"]["requests"] == before.get("patch", {}).get("requests", 0) + 1
    assert after["patch"]["bytes"] > 0
    assert "other" not in after or after["other"]["requests"] == before.get("other", {}).get("requests", 0)


def test_watch_bytes_count_while_the_stream_is_open_and_bookmarks_parse_capitalized(sim: Simulator) -> None:
    sim.load_objects([node("a")])
    url = sim.base_url + "/api/v1/nodes?watch=True&allowWatchBookmarks=True&timeoutSeconds=8"
    with urllib.request.urlopen(url, timeout=15) as stream:
        first = stream.readline()  # the ADDED of node a
        assert json.loads(first)["type"] == "ADDED"
        deadline = time.monotonic() + 5
        while _by_verb(sim).get("watch", {}).get("bytes", 0) < len(first):
            assert time.monotonic() < deadline, "watch bytes were not counted while the stream was open"
            time.sleep(0.05)
        assert _by_verb(sim)["watch"]["requests"] == 1
        assert json.loads(stream.readline())["type"] == "BOOKMARK"  # after 5 quiet seconds
