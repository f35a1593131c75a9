"""kube-scheduler's own plugin test cases (tests/planning/data/kube_scheduler_cases.yaml) against the reference
filter (planning/scheduling/node_filters.py) and the planner's simulation (planning/scheduling/simulation.py)."""

from __future__ import annotations

from typing import Any

import pytest
from support.kube_cases import kube_cases, planner_feasible

from planning.scheduling.node_filters import feasible_nodes

CASES = kube_cases()


def _id(case: dict[str, Any]) -> str:
    return case["source"].rsplit("/", 2)[-2] + ":" + case["name"][:80]


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_reference_filter_agrees_with_kube_scheduler(case: dict[str, Any]) -> None:
    got = feasible_nodes(case["pod"], case["nodes"], case["existingPods"],
                         [*case["pvs"], *case["pvcs"], *case["storageClasses"]])
    assert sorted(got) == case["expect"]["feasibleNodes"]


# Where the planner knowingly differs from kube-scheduler (docs/semantics.md §3.5): it reads a PV's zone and
# region labels as requirements on the GA topology labels, which every EKS node carries, so a node without them
# (or with only the beta ones) does not pass, where kube's VolumeZone lets it; and its node selector terms
# (planning/selectors.py, shared with drift) let a term with no expressions match, where kube matches nothing.
PLANNER_DIFFERS = {
    "TestSingleZone/node without labels", "TestSingleZone/beta zone label matched",
    "TestSingleZone/beta region label matched",
    "TestNodeAffinity/Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule "
    "onto the node",
}


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_planner_simulation_agrees_with_kube_scheduler(case: dict[str, Any]) -> None:
    got = sorted(planner_feasible(case))
    if case["name"] in PLANNER_DIFFERS:
        assert got != case["expect"]["feasibleNodes"]
    else:
        assert got == case["expect"]["feasibleNodes"]
