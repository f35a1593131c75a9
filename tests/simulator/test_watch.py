"""Watch streams through kubernetes.watch: event types, resume from a resourceVersion, 410 when too old,
selector transitions (an object leaving a label selector is DELETED for that watcher), and `sendInitialEvents`."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request

import pytest
from kubernetes import client, watch
from kubernetes.client import ApiException
from support.sim_objects import node

from simulator.resources import BY_KIND
from simulator.server import Simulator
from simulator.store import Store


def _collect(fn, stop_after: int, **kw) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    out: list[tuple[str, str]] = []
    w = watch.Watch()
    for ev in w.stream(fn, timeout_seconds=5, **kw):
        out.append((ev["type"], ev["object"].metadata.name))
        if len(out) >= stop_after:
            w.stop()
    return out


def test_watch_sees_added_modified_deleted(sim: Simulator, k8s: client.ApiClient) -> None:
    v1 = client.CoreV1Api(k8s)
    rv = v1.list_node().metadata.resource_version
    events: list[tuple[str, str]] = []
    t = threading.Thread(target=lambda: events.extend(_collect(v1.list_node, 3, resource_version=rv)))
    t.start()
    v1.create_node(node("n1"))
    v1.patch_node("n1", {"metadata": {"labels": {"x": "y"}}})
    v1.delete_node("n1")
    t.join(10)
    assert events == [("ADDED", "n1"), ("MODIFIED", "n1"), ("DELETED", "n1")]


def test_watch_without_version_starts_with_current_objects(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("a"), node("b")])
    got = _collect(client.CoreV1Api(k8s).list_node, 2)
    assert sorted(got) == [("ADDED", "a"), ("ADDED", "b")]


def test_resume_replays_history_after_the_version(sim: Simulator, k8s: client.ApiClient) -> None:
    v1 = client.CoreV1Api(k8s)
    v1.create_node(node("a"))
    rv = v1.patch_node("a", {"metadata": {"labels": {"step": "1"}}}).metadata.resource_version
    v1.patch_node("a", {"metadata": {"labels": {"step": "2"}}})
    v1.create_node(node("b"))
    assert _collect(v1.list_node, 2, resource_version=rv) == [("MODIFIED", "a"), ("ADDED", "b")]


def test_too_old_version_is_410(sim: Simulator, k8s: client.ApiClient) -> None:
    v1 = client.CoreV1Api(k8s)
    sim.store.compacted_rv = sim.store.rv  # as if the history had been compacted
    with pytest.raises(ApiException) as exc:
        _collect(v1.list_node, 1, resource_version="1")
    assert exc.value.status == 410


def test_event_log_is_bounded_and_compacts() -> None:
    store = Store(log_size=3)
    for i in range(5):
        store.create(BY_KIND["Node"], node(f"n{i}"))
    assert store.events_since(BY_KIND["Node"], 1) is None
    assert [e.obj["metadata"]["name"] for e in store.events_since(BY_KIND["Node"], 3)] == ["n3", "n4"]


def test_label_selector_transitions(sim: Simulator, k8s: client.ApiClient) -> None:
    v1 = client.CoreV1Api(k8s)
    v1.create_node(node("a"))
    rv = v1.list_node().metadata.resource_version
    events: list[tuple[str, str]] = []
    t = threading.Thread(target=lambda: events.extend(
        _collect(v1.list_node, 2, resource_version=rv, label_selector="pool=x")))
    t.start()
    v1.patch_node("a", {"metadata": {"labels": {"pool": "x"}}})
    v1.patch_node("a", {"metadata": {"labels": {"pool": "y"}}})
    t.join(10)
    assert events == [("ADDED", "a"), ("DELETED", "a")]


def test_watch_a_single_object_by_field_selector(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("a"), node("b")])
    v1 = client.CoreV1Api(k8s)
    rv = v1.list_node().metadata.resource_version
    events: list[tuple[str, str]] = []
    t = threading.Thread(target=lambda: events.extend(
        _collect(v1.list_node, 1, resource_version=rv, field_selector="metadata.name=b")))
    t.start()
    v1.patch_node("a", {"metadata": {"labels": {"x": "1"}}})
    v1.patch_node("b", {"metadata": {"labels": {"x": "1"}}})
    t.join(10)
    assert events == [("MODIFIED", "b")]


def _stream(sim: Simulator, query: str, until: str = "BOOKMARK") -> list[dict]:
    """Raw watch events up to and including the first `until` event."""
    out: list[dict] = []
    with urllib.request.urlopen(f"{sim.base_url}/api/v1/nodes?watch=1&timeoutSeconds=3&{query}", timeout=10) as r:
        for line in r:
            out.append(json.loads(line))
            if out[-1]["type"] == until:
                break
    return out


def test_send_initial_events_ends_with_the_initial_events_end_bookmark(sim: Simulator) -> None:
    sim.load_objects([node("a"), node("b")])
    rv = sim.store.rv
    events = _stream(sim, "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
                          f"&resourceVersion={rv}")
    assert sorted((e["type"], e["object"]["metadata"]["name"]) for e in events[:-1]) == [
        ("ADDED", "a"), ("ADDED", "b")]
    end = events[-1]["object"]
    assert end["metadata"] == {"resourceVersion": str(rv), "annotations": {"k8s.io/initial-events-end": "true"}}
    assert end["kind"] == "Node"


def test_send_initial_events_needs_not_older_than_and_bookmarks(sim: Simulator) -> None:
    for query in ("sendInitialEvents=true&allowWatchBookmarks=true",
                  "sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
                  "resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"):
        with pytest.raises(urllib.error.HTTPError) as exc:
            urllib.request.urlopen(f"{sim.base_url}/api/v1/nodes?watch=1&{query}", timeout=10)
        assert exc.value.code == 422, query


def test_send_initial_events_false_starts_from_now(sim: Simulator, k8s: client.ApiClient) -> None:
    sim.load_objects([node("a")])
    got: list[dict] = []
    t = threading.Thread(target=lambda: got.extend(_stream(
        sim, "sendInitialEvents=false&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", until="ADDED")))
    t.start()
    time.sleep(0.5)
    client.CoreV1Api(k8s).create_node(node("b"))
    t.join(10)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in got] == [("ADDED", "b")]


def test_events_queued_while_the_loop_was_busy_go_out_in_one_write_and_in_order(sim: Simulator,
                                                                               k8s: client.ApiClient) -> None:
    """The emulator's loop also runs the world's ticks: a watcher woken once per event fell tens of seconds behind
    under load, so what is queued when it wakes is written at once."""
    v1 = client.CoreV1Api(k8s)
    rv = v1.list_node().metadata.resource_version
    writes: list[int] = []
    real = sim.server._write

    async def counting(resp, data: bytes) -> None:  # type: ignore[no-untyped-def]
        writes.append(data.count(b"\n"))
        await real(resp, data)

    sim.server._write = counting  # type: ignore[method-assign]
    events: list[tuple[str, str]] = []
    t = threading.Thread(target=lambda: events.extend(_collect(v1.list_node, 30, resource_version=rv)))
    t.start()
    time.sleep(0.5)  # the watch is open
    assert sim._loop is not None
    sim._loop.call_soon_threadsafe(time.sleep, 0.5)  # the loop busy, as during a long tick
    time.sleep(0.1)
    for i in range(30):
        sim.store.create(BY_KIND["Node"], node(f"n{i:02d}"))
    t.join(10)
    assert events == [("ADDED", f"n{i:02d}") for i in range(30)]
    assert sum(writes) == 30 and len(writes) < 5, writes
