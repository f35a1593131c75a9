"""The watch cache holds values that pods repeat once (runtime/shared_values.py, runtime/cluster_trim.py)."""

from __future__ import annotations

import copy
import json

from runtime.cluster_trim import trim
from runtime.shared_values import SharedValues


def _pod(name: str, node: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "shop", "uid": f"uid-{name}", "resourceVersion": "7",
                         "labels": {"app": "web", "pod-template-hash": "abc"},
                         "ownerReferences": [{"kind": "ReplicaSet", "name": "web-abc", "uid": "rs-1",
                                              "controller": True}]},
            "spec": {"nodeName": node, "tolerations": [{"key": "a", "operator": "Exists"}],
                     "containers": [{"name": "web", "image": "x", "resources": {"requests": {"cpu": "500m"}}}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"},
                                                          {"type": "Initialized", "status": "True"}]}}


def test_equal_values_come_back_as_one_object() -> None:
    shared = SharedValues()
    a = shared.share(json.loads('{"app": "web", "tier": ["a", {"x": 1}]}'))
    b = shared.share(json.loads('{"app": "web", "tier": ["a", {"x": 1}]}'))
    assert a is b
    assert a == {"app": "web", "tier": ["a", {"x": 1}]}


def test_values_that_only_compare_equal_in_python_stay_apart() -> None:
    shared = SharedValues()
    one, true, text = shared.share({"v": 1}), shared.share({"v": True}), shared.share({"v": "1"})
    assert one["v"] is not True and true["v"] is True and text["v"] == "1"
    assert shared.share([1.0]) is not shared.share([1])  # a float stays a float


def test_the_table_starts_over_when_full() -> None:
    shared = SharedValues(max_entries=2)
    first = shared.share({"a": "1"})
    shared.share({"b": "2"})
    shared.share({"c": "3"})  # full: the table starts over
    assert len(shared) == 1
    again = shared.share({"a": "1"})
    assert again == first and again is not first


def test_trimmed_pods_share_what_they_repeat_and_keep_what_is_theirs() -> None:
    one, two = _pod("web-1", "node-a"), _pod("web-2", "node-b")
    originals = copy.deepcopy([one, two])
    t1, t2 = trim("Pod", one), trim("Pod", two)
    assert [one, two] == originals  # inputs untouched
    assert t1["metadata"]["labels"] is t2["metadata"]["labels"]
    assert t1["metadata"]["ownerReferences"] is t2["metadata"]["ownerReferences"]
    assert t1["spec"]["containers"] is t2["spec"]["containers"]
    assert t1["status"]["conditions"] is t2["status"]["conditions"]
    assert t1["metadata"]["name"] == "web-1" and t2["metadata"]["name"] == "web-2"
    assert (t1["spec"]["nodeName"], t2["spec"]["nodeName"]) == ("node-a", "node-b")
    assert t1["spec"]["containers"] == [{"name": "web", "resources": {"requests": {"cpu": "500m"}}}]
