"""kube-scheduler's own plugin test cases (tests/planning/data/kube_scheduler_cases.yaml), read once a process, and
the planner's answer to one case. The planning and simulator tests and the differential test share them; each read
of the 1.7 MB file costs ~0.3 s of CPU, and each test process collected it three times before."""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

from api.snapshot import Snapshot
from api.yaml_load import safe_load
from planning.cluster import Cluster
from planning.scheduling.simulation import Scheduler

CASES_FILE = Path(__file__).resolve().parents[1] / "planning" / "data" / "kube_scheduler_cases.yaml"


@cache
def kube_cases() -> list[dict[str, Any]]:
    """The cases, parsed once; [] where the file is absent. Tests must not change them (the planner's answer
    copies what it reads)."""
    return safe_load(CASES_FILE.read_text()) if CASES_FILE.exists() else []


def planner_feasible(case: dict[str, Any]) -> list[str]:
    """The existing nodes the planner's simulation lets the pod go on (any rung of its relaxation ladder)."""
    objs = [*case["nodes"], *case["existingPods"], *case["pvs"], *case["pvcs"], *case["storageClasses"], case["pod"]]
    cluster = Cluster.from_snapshot(Snapshot.from_objects(copy.deepcopy(objs)))
    sched = Scheduler(cluster)
    (pod,) = cluster.pending
    state = sched.new_state()
    return [n.name for n in sched.dest if any(sched.fits(v, n, state) for v in sched.variants(pod))]
