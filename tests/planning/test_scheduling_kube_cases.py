"""kube-scheduler's own plugin test cases (tests/planning/data/kube_scheduler_cases.yaml) against the reference
filter (planning/scheduling_check.py) and the planner's simulation (planning/scheduling.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from planning.scheduling_check import feasible_nodes

CASES: list[dict[str, Any]] = yaml.safe_load(
    (Path(__file__).parent / "data" / "kube_scheduler_cases.yaml").read_text())


def _id(case: dict[str, Any]) -> str:
    return case["source"].rsplit("/", 2)[-2] + ":" + case["name"][:80]


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_reference_filter_agrees_with_kube_scheduler(case: dict[str, Any]) -> None:
    got = feasible_nodes(case["pod"], case["nodes"], case["existingPods"],
                         [*case["pvs"], *case["pvcs"], *case["storageClasses"]])
    assert sorted(got) == case["expect"]["feasibleNodes"]
