"""bench.fleet at a tiny scale: it runs end to end and prints the figures it promises."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_fleet_bench_prints_its_figures() -> None:
    out = subprocess.run([sys.executable, "-m", "bench.fleet", "--clusters", "2", "--stages", "2", "--bake", "1",
                          "--pods", "3", "--timeout", "120"], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    figures = json.loads(out.stdout[out.stdout.index("{"):])
    assert figures["phase"] == "Succeeded" and figures["partial"] is True
    assert [s["clusters"] for s in figures["stageSeconds"]] == [1, 1]
    assert all(s["seconds"] >= 1 for s in figures["stageSeconds"]), "a stage never ends before its bake"
    assert figures["historyEventsPerCluster"] > 0 and figures["activitiesPerCluster"] >= 2  # apply + observe
    assert figures["fleetWorker"]["rssMiB"] > 0
