"""A real `moto_server` process on loopback, standing in for EC2 and SQS."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from devstack.processes import MotoServer
from simulator.ec2 import LISTED_STATES
from support.ports import free_port, wait_for_port

REPO = Path(__file__).resolve().parents[2]  # `-m devstack.moto_fleet` runs from the checkout
AWS_TEST_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
}
_CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
# the regions simulated worlds run in here (tests/e2e/test_region_e2e.py, the demo's): a world polls its own
LEFTOVER_REGIONS = ("us-east-1", "eu-west-1")


@pytest.fixture(scope="session")
def _moto_server() -> Iterator[str]:
    """URL of a moto_server shared by the tests of one process; AWS env vars point boto3 at fake creds. It is moto
    as shipped but for instant CreateFleet, which answers as EC2 does (devstack/moto_fleet.py)."""
    os.environ.update(AWS_TEST_ENV)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "devstack.moto_fleet", "-H", "127.0.0.1", "-p", str(port)],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc=proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.kill()  # its state is in memory only; SIGTERM made moto tear it down for 3-5 s
        proc.wait(timeout=10)


@pytest.fixture
def moto_endpoint(_moto_server: str) -> Iterator[str]:
    """The process's moto_server (`_moto_server`), left by each test with no instance running (`end_leftovers`)."""
    yield _moto_server
    end_leftovers(_moto_server)


@pytest.fixture(scope="session")
def _cloud_server() -> Iterator[str]:
    """URL of the devstack's EC2 stand-in (`python -m devstack.moto_indexed`, as the demo and e2e stack run it):
    moto plus a spot price history that varies by type, zone and hour, and the Pricing API (GetProducts,
    DescribeServices, GetAttributeValues) over the bundled price table. Sets the same AWS env vars as
    `moto_endpoint`; pass it as `endpoint_url` to both the `ec2` and the `pricing` boto3 clients."""
    os.environ.update(AWS_TEST_ENV)
    with MotoServer() as moto:  # the default, as devstack/stack.py runs it
        yield moto.endpoint


@pytest.fixture
def cloud_endpoint(_cloud_server: str) -> Iterator[str]:
    """The process's EC2 stand-in (`_cloud_server`), left by each test with no instance running (`end_leftovers`)."""
    yield _cloud_server
    end_leftovers(_cloud_server)


def end_leftovers(endpoint: str, regions: tuple[str, ...] = LEFTOVER_REGIONS) -> int:
    """Terminate every instance a test left running in `regions` of a shared stand-in; returns how many.

    Every simulated world lists all of its region's instances each poll (a kubelet boots on any instance), and moto
    answers DescribeInstanceStatus in ~0.7 ms of CPU per live instance against nothing for a terminated one: the
    20-40 instances earlier tests left running in each process's moto cost every later world's poll ~25 ms there,
    four polls a second, and as much again parsing the answer (docs/benchmarks.md, Test suite).
    """
    ended = 0
    for region in regions:
        ec2 = _client(endpoint, region)
        live = [s["InstanceId"] for page in ec2.get_paginator("describe_instance_status").paginate(
                    IncludeAllInstances=True, Filters=[{"Name": "instance-state-name", "Values": list(LISTED_STATES)}])
                for s in page.get("InstanceStatuses", [])]
        for start in range(0, len(live), 500):
            ec2.terminate_instances(InstanceIds=live[start:start + 500])
        ended += len(live)
    return ended


@functools.cache
def _client(endpoint: str, region: str) -> Any:
    return boto3.client("ec2", endpoint_url=endpoint, region_name=region, **_CREDENTIALS)


@pytest.fixture(scope="module")
def own_moto_endpoint() -> Iterator[str]:
    """A moto_server for one test module alone, for tests whose scenario must not meet what other modules left in
    the session's shared one (the nomination e2e: after the NodeClaim lifecycle e2e in the same process, the
    simulator once never saw an instance those tests terminated, and a deleted node lost its PDB's hold)."""
    os.environ.update(AWS_TEST_ENV)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "devstack.moto_fleet", "-H", "127.0.0.1", "-p", str(port)],
                            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc=proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.kill()
        proc.wait(timeout=10)
