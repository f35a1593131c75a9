"""`nodeflow demo --headless --region eu-west-1`, shortened (the demo in a region other than
us-east-1): the real embedded stack with its AWS side, scenario and simulated EC2 world in eu-west-1's zones (from
EC2's DescribeAvailabilityZones) and the worker planning on eu-west-1's discovered instance types and prices. The
scripted moments come twice as soon (`--moments-speed 2`): the crawler scale-up at 10 s needs new spot nodes, so
launches happen (the settle waits for pending pods and what is in flight), the spot interruption follows at 15 s
and the new AMI at 20 s; 24 s of demo (was 40, and 60 before that) holds all three."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e]  # no shared fixture: any xdist worker (the "demo" group is for test_demo.py)

ROOT = Path(__file__).resolve().parents[2]
REGION = "eu-west-1"
ZONES = {"eu-west-1a", "eu-west-1b", "eu-west-1c"}  # moto's (AWS's) eu-west-1 zones
SAFETY = ("pdbViolations", "leakedInstances", "stuckFinalizers", "podsPendingAtEnd")


def test_the_demo_runs_in_eu_west_1(tmp_path: Path) -> None:
    report, work = tmp_path / "report.json", tmp_path / "stack"
    env = dict(os.environ, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
               AWS_DEFAULT_REGION="us-east-1")  # --region wins over the environment
    proc = subprocess.run(
        [sys.executable, "-m", "starter.cli", "demo", "--headless", "--region", REGION, "--duration", "24",
         "--moments-speed", "2", "--settle", "60", "--report", str(report), "--workdir", str(work)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(report.read_text())
    assert {key: data[key] for key in SAFETY} == dict.fromkeys(SAFETY, 0)
    assert data["region"] == REGION
    by_zone = data["nodesLaunchedByZone"]
    assert data["nodesLaunched"] > 0 and sum(by_zone.values()) == data["nodesLaunched"]
    assert set(by_zone) <= ZONES, by_zone
    assert "scaled Deployment crawler from 8 to 12 at" in proc.stderr
    scenario = (work / "demo-cluster.yaml").read_text()
    assert "us-east-1" not in scenario and "eu-west-1a" in scenario  # the bundled scenario's zones rewritten
    assert "instance types of eu-west-1 discovered" in (work / "worker.log").read_text()
