"""The FleetRollout document: what it accepts, what it refuses, and its one-id-per-change rule."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError

from api.fleet import OnFailure, load_fleet_rollout, record_of, rollout_id_ok

DOC: dict[str, Any] = {
    "apiVersion": "nodeflow.dev/v1alpha1", "kind": "FleetRollout", "metadata": {"name": "al2023-nov"},
    "spec": {
        "change": {"nodeClass": {"name": "default", "amiSelectorTerms": [{"alias": "al2023@v20261120"}]}},
        "stages": [
            {"name": "dev", "clusters": [{"name": "dev-1", "nodePools": ["general"]}], "bakeTime": "10m"},
            {"name": "prod-eu", "bakeTime": "1h", "timeout": "2h", "clusters": [
                {"name": "prod-eu-1", "nodePools": ["general", "batch"]},
                {"name": "prod-eu-2", "taskQueue": "nf-eu2", "nodePools": ["general"]}]},
        ],
        "gates": {"prometheus": {"url": "http://prometheus.monitoring:9090", "query": "sum(up{job='api'}) >= 3"}},
        "maxClustersInFlight": 2,
        "onFailure": "Skip",
    },
}


def _doc(**spec: Any) -> dict[str, Any]:
    out = copy.deepcopy(DOC)
    out["spec"].update(spec)
    return out


def test_the_example_loads_with_defaults_filled() -> None:
    r = load_fleet_rollout(DOC)
    assert r.spec.on_failure is OnFailure.SKIP and r.spec.max_clusters_in_flight == 2
    assert [c.queue for s in r.spec.stages for c in s.clusters] == ["nodeflow-dev-1", "nodeflow-prod-eu-1", "nf-eu2"]
    assert r.spec.stages[0].bake.total_seconds() == 600 and r.spec.stages[0].time_limit is None
    assert r.spec.gates.pods_ready is True and r.spec.worker_timeout == "2m"
    assert r.targets() == [("dev-1", "general"), ("prod-eu-1", "general"), ("prod-eu-1", "batch"),
                           ("prod-eu-2", "general")]


def test_the_id_is_the_changes_not_the_documents() -> None:
    a = load_fleet_rollout(DOC)
    renamed = copy.deepcopy(DOC)
    renamed["metadata"]["name"] = "another-name"
    renamed["spec"]["stages"] = renamed["spec"]["stages"][:1]
    assert load_fleet_rollout(renamed).rollout_id == a.rollout_id and rollout_id_ok(a.rollout_id)
    other = _doc(change={"nodeClass": {"name": "default", "amiSelectorTerms": [{"alias": "al2023@v20261201"}]}})
    assert load_fleet_rollout(other).rollout_id != a.rollout_id


@pytest.mark.parametrize(("spec", "words"), [
    ({"change": {}}, "exactly one of 'nodeClass' and 'nodePoolTemplate'"),
    ({"change": {"nodeClass": {"name": "x", "amiSelectorTerms": [{}]},
                 "nodePoolTemplate": {"patch": {"metadata": {}}}}}, "exactly one"),
    ({"stages": []}, "at least 1"),
    ({"stages": [{"name": "a", "clusters": [{"name": "c", "nodePools": ["p"]}]},
                 {"name": "b", "clusters": [{"name": "c", "nodePools": ["p"]}]}]}, "cluster 'c' appears twice"),
    ({"stages": [{"name": "a", "clusters": [{"name": "Bad_Name", "nodePools": ["p"]}]}]}, "pattern"),
    ({"stages": [{"name": "a", "bakeTime": "1d", "clusters": [{"name": "c", "nodePools": ["p"]}]}]}, "duration"),
    ({"maxClustersInFlight": 0}, "greater than or equal to 1"),
    ({"onFailure": "Ignore"}, "Halt"),
    ({"gates": {"prometheus": {"url": "prometheus:9090", "query": "up"}}}, "pattern"),
    ({"stagez": []}, "stagez"),
])
def test_bad_documents_are_refused_naming_the_problem(spec: dict[str, Any], words: str) -> None:
    with pytest.raises(ValidationError) as err:
        load_fleet_rollout(_doc(**spec))
    assert words in str(err.value)


def test_record_of_reads_only_a_json_object() -> None:
    assert record_of({"metadata": {"annotations": {"nodeflow.dev/fleet-rollout": '{"id": "fleet-1"}'}}}) == {
        "id": "fleet-1"}
    assert record_of({"metadata": {"annotations": {"nodeflow.dev/fleet-rollout": "not json"}}}) is None
    assert record_of({"metadata": {}}) is None
