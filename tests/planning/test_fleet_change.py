"""A fleet rollout's change in one cluster (planning/fleet/change.py): the patches that apply it with its record,
and the counts a cluster's worker reports back."""

from __future__ import annotations

import json
from typing import Any

from api.fleet import RECORD_ANNOTATION, FleetChange, record_of
from api.nodepool import load_nodepool
from planning.fleet.change import (
    merge_patch,
    node_class_patch,
    node_class_state,
    node_pool_patch,
    observe_pods,
    observe_pool,
)

AMI = FleetChange.model_validate({"nodeClass": {"name": "default", "amiSelectorTerms": [{"id": "ami-new"}]}})
LABEL = FleetChange.model_validate({"nodePoolTemplate": {"patch": {"metadata": {"labels": {"image": "v2"}}}}})


def _class(terms: list[dict[str, Any]], record: dict[str, Any] | None = None, amis: list[str] = ()) -> dict:
    ann = {RECORD_ANNOTATION: json.dumps(record)} if record else {}
    return {"metadata": {"name": "default", "annotations": ann, "generation": 3},
            "spec": {"amiSelectorTerms": terms}, "status": {"amis": [{"id": a} for a in amis]}}


def _pool(name: str = "general", record: dict[str, Any] | None = None, note: str | None = None,
          labels: dict[str, str] | None = None) -> dict:
    ann = {RECORD_ANNOTATION: json.dumps(record)} if record else {}
    if note:
        ann["nodeflow.dev/rollout"] = note
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name, "annotations": ann},
            "spec": {"template": {"metadata": {"labels": labels or {}},
                                  "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                            "name": "default"}, "requirements": []}}}}


def _claim(image: str = "", hash_: str = "", drifted: bool = False, initialized: bool = True,
           deleting: bool = False) -> dict:
    conds = [{"type": "Drifted", "status": "True"}] if drifted else []
    conds.append({"type": "Initialized", "status": "True" if initialized else "Unknown"})
    meta: dict[str, Any] = {"annotations": {"nodeflow.dev/template-hash": hash_}}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-27T00:00:00Z"
    return {"metadata": meta, "status": {"imageID": image, "conditions": conds}}


def test_merge_patch_follows_rfc7386() -> None:
    assert merge_patch({"a": 1, "b": {"c": 2, "d": 3}}, {"b": {"c": None, "e": 4}, "f": [1]}) == {
        "a": 1, "b": {"d": 3, "e": 4}, "f": [1]}
    assert merge_patch({"a": [1, 2]}, {"a": [3]}) == {"a": [3]}


def test_the_class_patch_carries_the_change_and_its_record_with_what_was_there() -> None:
    patch = node_class_patch(_class([{"alias": "al2023@latest"}]), AMI, "fleet-abc", "dev")
    assert patch["spec"] == {"amiSelectorTerms": [{"id": "ami-new"}]}
    record = json.loads(patch["metadata"]["annotations"][RECORD_ANNOTATION])
    assert record == {"id": "fleet-abc", "stage": "dev", "previous": [{"alias": "al2023@latest"}]}


def test_applying_twice_writes_nothing_and_keeps_the_first_previous() -> None:
    done = _class([{"id": "ami-new"}], {"id": "fleet-abc", "stage": "dev", "previous": [{"alias": "x"}]})
    assert node_class_patch(done, AMI, "fleet-abc", "dev") is None
    edited = _class([{"id": "ami-hand"}], {"id": "fleet-abc", "stage": "dev", "previous": [{"alias": "x"}]})
    again = node_class_patch(edited, AMI, "fleet-abc", "dev")
    assert json.loads(again["metadata"]["annotations"][RECORD_ANNOTATION])["previous"] == [{"alias": "x"}]


def test_another_rollouts_record_is_replaced_and_its_value_becomes_previous() -> None:
    theirs = _class([{"id": "ami-old"}], {"id": "fleet-old", "stage": "x", "previous": None})
    record = json.loads(node_class_patch(theirs, AMI, "fleet-abc", "dev")["metadata"]["annotations"][
        RECORD_ANNOTATION])
    assert record["id"] == "fleet-abc" and record["previous"] == [{"id": "ami-old"}]


def test_the_pool_patch_merges_the_template_and_is_idempotent() -> None:
    pool = _pool(labels={"team": "a"})
    patch = node_pool_patch(pool, LABEL, "fleet-t", "dev")
    assert patch["spec"] == {"template": {"metadata": {"labels": {"image": "v2"}}}}
    applied = _pool(record={"id": "fleet-t", "stage": "dev", "previous": {}}, labels={"team": "a", "image": "v2"})
    assert node_pool_patch(applied, LABEL, "fleet-t", "dev") is None
    assert node_class_patch(_class([]), LABEL, "fleet-t", "dev") is None  # not this change's object


def test_observe_pool_counts_images_against_the_resolved_class() -> None:
    cls = _class([{"id": "ami-new"}], {"id": "fleet-abc"}, amis=["ami-new"])
    claims = [_claim("ami-new"), _claim("ami-old", drifted=True), _claim("ami-new", initialized=False),
              _claim("ami-old", deleting=True)]
    obs = observe_pool("general", _pool(), claims, AMI, "fleet-abc", cls)
    assert (obs.applied, obs.nodes, obs.updated, obs.drifted, obs.launching) == (True, 3, 2, 1, 1)
    assert observe_pool("general", _pool(), [], AMI, "fleet-other", cls).applied is False
    assert observe_pool("gone", None, [], AMI, "fleet-abc", cls).exists is False


def test_observe_pool_counts_template_hashes_and_reads_the_rollout_note() -> None:
    pool = _pool(record={"id": "fleet-t"}, labels={"image": "v2"},
                 note='{"generation":"g1","wave":1,"waves":2,"phase":"Halted","haltReason":"never Ready"}')
    want = load_nodepool(pool).template_hash()
    obs = observe_pool("general", pool, [_claim(hash_=want), _claim(hash_="stale", drifted=True)], LABEL, "fleet-t")
    assert (obs.applied, obs.nodes, obs.updated, obs.drifted) == (True, 2, 1, 1)
    assert obs.rollout is not None and obs.rollout.halt_reason == "never Ready" and obs.rollout.generation == "g1"


def test_node_class_state_needs_the_current_generation() -> None:
    cls = _class([])
    cls["status"]["conditions"] = [{"type": "Ready", "status": "True", "observedGeneration": 2}]
    assert node_class_state(cls) == (False, True, "")
    cls["status"]["conditions"][0]["observedGeneration"] = 3
    assert node_class_state(cls)[0] is True
    assert node_class_state(None) == (False, False, "")


def test_observe_pods_counts_pending_and_unready_and_skips_finished_and_deleting() -> None:
    def pod(name: str, node: str | None, phase: str, ready: bool = True, deleting: bool = False) -> dict:
        meta = {"name": name, "namespace": "ns", **({"deletionTimestamp": "x"} if deleting else {})}
        return {"metadata": meta, "spec": {"nodeName": node} if node else {},
                "status": {"phase": phase, "conditions": [{"type": "Ready", "status": str(ready)}]}}
    pods = [pod("ok", "n1", "Running"), pod("pending", None, "Pending"), pod("starting", "n1", "Pending", False),
            pod("unready", "n1", "Running", False), pod("done", "n1", "Succeeded", False),
            pod("going", "n1", "Running", False, deleting=True)]
    assert observe_pods(pods) == (1, 2, ["ns/pending", "ns/starting", "ns/unready"])


def test_record_round_trip() -> None:
    patch = node_pool_patch(_pool(), LABEL, "fleet-t", "dev")
    assert record_of({"metadata": patch["metadata"]})["id"] == "fleet-t"
