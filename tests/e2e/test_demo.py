"""`nodeflow demo --headless` end to end, shortened: the real embedded stack (Temporal dev server, moto, the
simulator, the in-process worker and planner schedule) on the bundled 30-node scenario, in eu-west-1: a region other
than the default, so the one run also checks that the scenario, the simulated EC2 world and the worker's discovered
instance types and prices follow `--region` (a second run, in eu-west-1 alone, cost the suite 45 CPU-s until
2026-11-30).

The first planner passes start Expiration (batch pool) and Emptiness (ci pool); the crawler Deployment is scaled up at
20 s, the spot interruption is injected at 30 s and the memory class gets a new AMI at 40 s, whose rollout is the
run's Drift (consolidation usually takes the general pool's drifted nodes first). The run ends once each moment has
reached its milestone (`--until-moments`, bounded by DURATION, instead of a fixed 75 s that a loaded machine could
cut short): the expired batch nodes' pods and the scale-up's pods running on nodes the provisioner launched, the
interrupted node's termination begun and the new AMI's first Drift disruption started; the settle then lets what is
in flight finish. Consolidation usually follows but is not asserted (the full 180 s run covers every method).
(`--moments-speed 2` would bring the AMI while the memory pool's consolidation holds its budget: its Drift then
started 46 s later instead of 12-18 s, so it saves nothing here.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# one demo run serves all four tests: keep them on one xdist worker (`make test` uses --dist loadgroup; under
# pytest 9.2 tests/support/xdist_groups.py makes the group hold)
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("demo")]

ROOT = Path(__file__).resolve().parents[2]
DURATION = 120  # a bound: --until-moments ends the run when the moments are done (53-58 s alone)
SETTLE = 60
REGION = "eu-west-1"  # not the default: the scenario's zones rewritten, the region's types and prices discovered
ZONES = {"eu-west-1a", "eu-west-1b", "eu-west-1c"}  # moto's (AWS's) eu-west-1 zones
REPORT_KEYS = {"commandsByMethod", "nodesTerminated", "costPerHourBefore", "costPerHourAfter", "pdbViolations",
               "leakedInstances", "stuckFinalizers", "podsPendingAtEnd", "nodesLaunched"}


# session scope: its tests share one xdist worker, but other modules' tests may run between them there, and a
# module-scoped fixture would then run the two-minute demo again
@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    work = tmp_path_factory.mktemp("demo")
    report = work / "report.json"
    env = dict(os.environ, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
               AWS_DEFAULT_REGION="us-east-1")  # --region wins over the environment
    proc = subprocess.run(
        [sys.executable, "-m", "starter.cli", "demo", "--headless", "--region", REGION, "--duration", str(DURATION),
         "--until-moments", "--settle", str(SETTLE), "--report", str(report), "--workdir", str(work / "stack")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=280)
    return proc, report


def test_demo_exits_zero_and_writes_the_report(demo_run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    proc, report = demo_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(report.read_text())
    assert set(data) >= REPORT_KEYS
    assert json.loads(proc.stdout) == data  # the same summary is printed
    assert set(data["commandsByMethod"]) == {"Emptiness", "Drift", "MultiNodeConsolidation",
                                             "SingleNodeConsolidation", "Expiration", "Interruption"}
    assert "injected a spot interruption warning for node spot-" in proc.stderr
    assert "scaled Deployment crawler from 8 to 12 at" in proc.stderr


def test_demo_is_safe(demo_run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    data = json.loads(demo_run[1].read_text())
    assert data["pdbViolations"] == 0
    assert data["leakedInstances"] == 0
    assert data["stuckFinalizers"] == 0


def test_demo_runs_the_early_methods_and_saves_money(demo_run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    data = json.loads(demo_run[1].read_text())
    by_method = data["commandsByMethod"]
    for method in ("Expiration", "Emptiness", "Drift", "Interruption"):
        assert by_method[method] >= 1, (method, data)
    # the batch pool's three nodes expire and the ci pool's three empty nodes go (all in the first pass)
    assert by_method["Expiration"] == 3, data
    assert data["terminatedByReason"].get("Expired") == 3, data
    # at least those three: a node that other moves left empty later in the run also goes as Empty
    assert data["terminatedByReason"].get("Empty", 0) >= 3, data
    assert data["disruptionOutcomes"]["Emptiness"].get("Succeeded", 0) >= 1, data
    assert data["nodesTerminated"] >= 3 + 3 + 1 + 1, data
    assert data["costPerHourAfter"] < data["costPerHourBefore"], data


def test_demo_places_every_pending_pod_on_new_capacity(demo_run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    """The scale-up's pods and the expired batch nodes' pods run on nodes the provisioner launched; none pending."""
    data = json.loads(demo_run[1].read_text())
    assert data["podsPendingAtEnd"] == 0, data
    scale_up, expiration = data["scaleUp"], data["expiration"]
    assert scale_up["podsAddedRunning"] == 4 and scale_up["allRunningAfterSeconds"] is not None, scale_up
    assert scale_up["newNodes"] >= 1, scale_up  # no spot node had room for another crawler pod
    assert expiration["expiredNodesGone"] == expiration["expiredNodes"] == 3, expiration
    assert expiration["podsOnNewNodes"] == expiration["pods"] == 6 and expiration["newNodes"] >= 1, expiration
    assert data["nodesLaunched"] >= scale_up["newNodes"] + expiration["newNodes"], data


def test_demo_runs_in_the_region_it_is_given(demo_run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    """The scenario, the simulated EC2 world and the worker's discovered instance types are eu-west-1's."""
    report = demo_run[1]
    data = json.loads(report.read_text())
    assert data["region"] == REGION
    by_zone = data["nodesLaunchedByZone"]
    assert data["nodesLaunched"] > 0 and sum(by_zone.values()) == data["nodesLaunched"]
    assert set(by_zone) <= ZONES, by_zone
    work = report.parent / "stack"
    scenario = (work / "demo-cluster.yaml").read_text()
    assert "us-east-1" not in scenario and "eu-west-1a" in scenario  # the bundled scenario's zones rewritten
    assert "instance types of eu-west-1 discovered" in (work / "worker.log").read_text()
