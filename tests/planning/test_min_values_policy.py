"""Karpenter's `--min-values-policy` (planning/scheduling/min_values.py; docs/semantics.md §17.2): Strict plans and
launches no node whose types cannot meet `minValues`; BestEffort plans it with the types there are, and its
NodeClaim gets `minValues` lowered to what they carry and the relaxed annotation."""

from __future__ import annotations

import pytest

from api import labels as L
from api.instance_types import labels as T
from planning.provisioning import fleet
from planning.provisioning.provisioner import decide
from planning.scheduling.min_values import (
    RELAXED_ANNOTATION,
    MinValuesPolicy,
    configured,
    min_values_policy,
    parse,
    relax_nodeclaim,
    relaxed,
    shortfalls,
)
from tests.planning.planning_factory import nodepool, pod, snapshot

OD = {"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]}
FAMILIES = {"m5.large": "m5", "m5.xlarge": "m5", "c5.xlarge": "c5"}


def _pool(min_values: int) -> dict:
    return nodepool(requirements=[OD, {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": list(FAMILIES)},
                                  {"key": T.FAMILY, "operator": "Exists", "minValues": min_values}])


def test_strict_plans_nothing_and_best_effort_plans_the_node_with_the_types_there_are() -> None:
    pending = pod("p-1", None, "1", "1Gi", phase="Pending")
    assert configured() is MinValuesPolicy.STRICT  # the default, as Karpenter's
    strict = decide(snapshot(_pool(3), pending))
    assert strict.launches == [] and [u.pod for u in strict.unservable] == ["default/p-1"]
    with min_values_policy(MinValuesPolicy.BEST_EFFORT):
        (launch,) = decide(snapshot(_pool(3), pending)).launches
    assert sorted(launch.replacement.instance_types) == sorted(FAMILIES)  # both families: all there is
    assert configured() is MinValuesPolicy.STRICT  # the block restores the process's policy


def test_best_effort_changes_nothing_when_min_values_are_met() -> None:
    pending = pod("p-1", None, "1", "1Gi", phase="Pending")
    (strict,) = decide(snapshot(_pool(2), pending)).launches
    with min_values_policy(MinValuesPolicy.BEST_EFFORT):
        (relaxed_launch,) = decide(snapshot(_pool(2), pending)).launches
    assert strict.replacement == relaxed_launch.replacement


def test_shortfalls_and_relaxed_requirements_lower_only_what_is_short() -> None:
    reqs = [{"key": T.FAMILY, "operator": "Exists", "minValues": 3},
            {"key": T.CPU, "operator": "Exists", "minValues": 2},
            {"key": L.ZONE_LABEL, "operator": "In", "values": ["us-east-1a", "us-east-1b"], "minValues": 2},
            {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]}]
    values = {T.FAMILY: {"m5", "c5"}, T.CPU: {"2", "4"}, L.ZONE_LABEL: set()}
    short = shortfalls(reqs, lambda k: values.get(k, set()))
    assert short == {T.FAMILY: 2, L.ZONE_LABEL: 0}
    out = relaxed(reqs, short)
    assert out[0]["minValues"] == 2 and out[1]["minValues"] == 2 and "minValues" not in out[2]
    assert out[3] == reqs[3] and reqs[0]["minValues"] == 3  # the input is not changed


def test_relax_nodeclaim_lowers_and_annotates_only_when_short() -> None:
    claim = {"metadata": {"name": "c"}, "spec": {"requirements": [
        {"key": T.FAMILY, "operator": "Exists", "minValues": 3}]}}
    assert relax_nodeclaim(claim, lambda k: {"m5", "c5"}) is True
    assert claim["spec"]["requirements"][0]["minValues"] == 2
    assert claim["metadata"]["annotations"] == {RELAXED_ANNOTATION: "true"}
    met = {"metadata": {"name": "d"}, "spec": {"requirements": [
        {"key": T.FAMILY, "operator": "Exists", "minValues": 2}]}}
    assert relax_nodeclaim(met, lambda k: {"m5", "c5"}) is False and "annotations" not in met["metadata"]


def test_a_non_strict_truncation_keeps_the_cut_types() -> None:
    families = {f"m{i}.large": "m" for i in range(64)}
    mins = fleet.min_values([{"key": T.FAMILY, "operator": "Exists", "minValues": 2}])
    with pytest.raises(fleet.MinValuesNotMet):
        fleet.truncate(list(families), mins, lambda t, k: families[t])
    assert len(fleet.truncate(list(families), mins, lambda t, k: families[t], strict=False)) == 60


def test_the_policy_names_are_karpenters() -> None:
    assert parse("Strict") is MinValuesPolicy.STRICT and parse("BestEffort") is MinValuesPolicy.BEST_EFFORT
    with pytest.raises(ValueError, match="not Strict or BestEffort"):
        parse("bestEffort")
