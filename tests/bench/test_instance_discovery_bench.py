"""bench/instance_discovery.py end to end for one region: against the EC2 stand-in as the demo starts it (the
session's `cloud_endpoint`, started once for every test that discovers, rather than a second one per run), it
measures the region in a process of its own and prints the load average around a JSON line of the documented shape
(every type of the region, a wall time and resident memory for the refresh). Timings are not checked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_one_region_prints_discovery_time_and_memory_between_load_averages(cloud_endpoint: str) -> None:
    out = subprocess.run([sys.executable, "-m", "bench.instance_discovery", "--region", "eu-west-1",
                          "--endpoint", cloud_endpoint], cwd=ROOT, capture_output=True, text=True, timeout=600,
                         check=True)
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert [line.get("at") for line in lines] == ["start", None, "end"]
    assert all(len(lines[i]["loadAverage"]) == 3 for i in (0, 2))
    region = lines[1]
    assert region["region"] == "eu-west-1" and region["zones"] == ["eu-west-1a", "eu-west-1b", "eu-west-1c"]
    assert region["types"] > 1000 and 0 < region["typesAvailable"] <= region["types"]
    assert region["onDemandPrices"] == "pricing-api"
    assert region["refreshSeconds"] > 0 and region["refreshPeakRssMiB"] > 0 and region["refreshPeakMiB"] > 0
    assert set(region["callSeconds"]) == {"describeInstanceTypes", "describeInstanceTypeOfferings", "getProducts",
                                          "describeSpotPriceHistory"}
