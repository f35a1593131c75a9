"""worker.py as a process: its modules load with the cyclic collector off (257 collections, 0.3-0.46 CPU-s of a
start, before), and main() turns it back on first, with what was alive after the imports frozen."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import gc, json, runpy, sys
sys.argv = ["worker.py", "--help"]
try:
    runpy.run_path("worker.py", run_name="__main__")
except SystemExit:
    pass
print(json.dumps({"enabled": gc.isenabled(), "frozen": gc.get_freeze_count(),
                  "young": gc.get_stats()[0]["collections"]}))
"""


def test_the_worker_loads_without_collections_and_collects_once_started() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         check=True)
    state = json.loads(out.stdout.strip().splitlines()[-1])
    assert state["enabled"] and state["frozen"] > 50_000, state
    assert state["young"] < 60, state  # with the collector on during the imports: about 257 (here 21)
