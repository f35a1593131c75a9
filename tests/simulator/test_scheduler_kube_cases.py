"""kube-scheduler's own plugin test cases (tests/planning/data/kube_scheduler_cases.yaml, each naming the kubernetes
test it restates) run against the emulator's filter chain (simulator/scheduling_filters.py): the same cases the
planner's simulation is held to, so the emulator that plays the world agrees with kube-scheduler on each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from simulator.scheduling_filters import feasible_nodes

CASES_FILE = Path(__file__).resolve().parents[1] / "planning" / "data" / "kube_scheduler_cases.yaml"
CASES: list[dict[str, Any]] = yaml.safe_load(CASES_FILE.read_text()) if CASES_FILE.exists() else []


def test_the_case_file_is_there_and_covers_every_filter_plugin() -> None:
    sources = {c["source"].split("plugins/")[-1].split("/")[0] for c in CASES}
    assert {"podtopologyspread", "interpodaffinity", "nodeports", "noderesources", "nodeaffinity", "volumebinding",
            "volumezone"} <= sources, sources


@pytest.mark.parametrize("case", CASES, ids=[f"{c['source'].split('plugins/')[-1]}::{c['name']}" for c in CASES])
def test_the_emulator_filters_as_kube_scheduler_does(case: dict[str, Any]) -> None:
    got = feasible_nodes(case["pod"], case["nodes"], case.get("existingPods") or (), case.get("pvs") or (),
                         case.get("pvcs") or (), case.get("storageClasses") or (), case.get("namespaces") or ())
    assert sorted(got) == sorted(case["expect"]["feasibleNodes"]), case.get("note", "")
