"""Benchmark: discovering every instance type of a region (gateways/instance_types.py) and what it holds.

Without --endpoint it starts the devstack's EC2 stand-in (moto with spot price history and the Pricing API) on
loopback, as the demo starts it (devstack/stack.py). Per region it prints JSON: types (and how many have an
available, priced offering) and offerings in the catalog, seconds per call (DescribeInstanceTypes,
DescribeInstanceTypeOfferings, GetProducts, DescribeSpotPriceHistory), then two whole refreshes of
`InstanceTypeProvider` (what the worker runs): one untraced, first, for its wall time and resident memory (the
process's peak RSS during it, from VmHWM reset through /proc/self/clear_refs, and what stays), one under tracemalloc for
the peak Python memory and what the catalog keeps (tracemalloc slows allocation, so its seconds are separate), and
the seconds to compute allocatable and labels for every type. Each region is measured in a process of its own (one
region's freed heap would hide the next one's resident memory). moto's answer times dominate the calls; AWS answers
DescribeInstanceTypes in pages of 100. The machine's load average is printed before and after.

    .venv/bin/python -m bench.instance_discovery [--region eu-west-1 --region us-east-1] [--endpoint URL]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import boto3

from api import price_table
from api.allocatable import node_resources
from api.instance_types.build import build_catalog
from devstack.moto_data import describe_instance_type_items, region_offerings
from devstack.processes import MotoServer
from gateways.instance_discovery import describe_instance_types, describe_offerings, on_demand_prices, spot_prices
from gateways.instance_types import InstanceTypeProvider


def _timed(fn: Any, *args: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn(*args)
    return out, round(time.perf_counter() - t0, 3)


def _status_kib(field: str) -> int:
    """A /proc/self/status figure in KiB (VmRSS now, VmHWM the peak since the last reset); 0 where there is none."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _reset_peak_rss() -> bool:
    """Reset the process's peak RSS (VmHWM) to its current RSS (Linux: '5' to clear_refs); False where it cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        return False
    return True


def offline_catalog(region: str = "us-east-1") -> Any:
    """A region's catalog as discovery builds it, from the data moto ships (AWS's DescribeInstanceTypes and
    DescribeInstanceTypeOfferings answers) and the bundled price table, without a server: for planner benchmarks
    with every type of a region (spot at the on-demand price, as before any spot history is read)."""
    items = list(describe_instance_type_items().values())
    offered = region_offerings(region)
    zones: dict[str, set[str]] = {}
    for o in offered:
        zones.setdefault(o["InstanceType"], set()).add(o["Location"])
    return build_catalog(region, items, zones, price_table.region_prices(region), {})


def _untraced_refresh(ec2: Any, pricing: Any) -> tuple[Any, dict[str, Any]]:
    """A whole refresh, first thing in the process (no earlier call's freed heap to reuse): its wall seconds, the
    process's peak RSS over the RSS before it, and the RSS it keeps."""
    rss_before = _status_kib("VmRSS")
    peak_reset = _reset_peak_rss()
    t0 = time.perf_counter()
    catalog = InstanceTypeProvider(ec2, pricing).catalog()
    refresh = time.perf_counter() - t0
    return catalog, {
        "refreshSeconds": round(refresh, 3), "rssBeforeMiB": round(rss_before / 1024, 1),
        "refreshPeakRssMiB": round((_status_kib("VmHWM") - rss_before) / 1024, 1) if peak_reset else None,
        "refreshKeptRssMiB": round((_status_kib("VmRSS") - rss_before) / 1024, 1)}


def measure(endpoint: str, region: str) -> dict[str, Any]:
    ec2 = boto3.client("ec2", region_name=region, endpoint_url=endpoint)
    pricing = boto3.client("pricing", region_name="us-east-1", endpoint_url=endpoint)
    catalog, untraced = _untraced_refresh(ec2, pricing)
    del catalog
    calls = {}
    _, calls["describeInstanceTypes"] = _timed(describe_instance_types, ec2)
    _, calls["describeInstanceTypeOfferings"] = _timed(describe_offerings, ec2)
    _, calls["getProducts"] = _timed(on_demand_prices, pricing, region)
    _, calls["describeSpotPriceHistory"] = _timed(spot_prices, ec2)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    catalog = InstanceTypeProvider(ec2, pricing).catalog()
    traced = time.perf_counter() - t0
    kept, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    t0 = time.perf_counter()
    for it in catalog.instance_types:
        node_resources(it)
        _ = it.labels
    alloc = time.perf_counter() - t0
    return {"region": region, "types": len(catalog.instance_types),
            "typesAvailable": sum(1 for it in catalog.instance_types if any(o.available for o in it.offerings)),
            "offerings": sum(len(it.offerings) for it in catalog.instance_types),
            "zones": sorted({o.zone for it in catalog.instance_types for o in it.offerings}),
            **untraced, "callSeconds": calls, "tracedRefreshSeconds": round(traced, 3),
            "refreshPeakMiB": round((peak - before) / 2**20, 1), "catalogKeptMiB": round((kept - before) / 2**20, 1),
            "allocatableAndLabelsAllTypesSeconds": round(alloc, 3), "onDemandPrices": catalog.metadata.get(
                "onDemandPrices")}


def _measure_apart(endpoint: str, region: str) -> dict[str, Any]:
    """`measure` in a process of its own, so that one region's resident memory is not another's freed heap."""
    out = subprocess.run([sys.executable, "-m", "bench.instance_discovery", "--region", region, "--endpoint", endpoint,
                          "--in-process"], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parent.parent)
    return json.loads(out.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--region", action="append", help="repeatable (default: eu-west-1 and us-east-1)")
    parser.add_argument("--endpoint", help="an EC2 endpoint serving the Pricing API too (default: start one)")
    parser.add_argument("--in-process", action="store_true", help="measure here, not in a process per region")
    args = parser.parse_args()
    regions = args.region or ["eu-west-1", "us-east-1"]
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    if args.in_process and args.endpoint:
        for region in regions:
            print(json.dumps(measure(args.endpoint, region)), flush=True)
        return
    print(json.dumps({"loadAverage": [round(x, 2) for x in os.getloadavg()], "at": "start"}), flush=True)
    with contextlib.ExitStack() as stack:
        endpoint = args.endpoint
        if endpoint is None:  # the stand-in as devstack/stack.py starts it
            work = stack.enter_context(tempfile.TemporaryDirectory(prefix="nodeflow-bench-"))
            endpoint = stack.enter_context(MotoServer(log_path=Path(work) / "moto.log")).endpoint
        for region in regions:
            print(json.dumps(_measure_apart(endpoint, region)), flush=True)
    print(json.dumps({"loadAverage": [round(x, 2) for x in os.getloadavg()], "at": "end"}))


if __name__ == "__main__":
    main()
