"""A real `moto_server` process on loopback, standing in for EC2 and SQS."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from devstack.processes import MotoServer
from support.ports import free_port, wait_for_port

REPO = Path(__file__).resolve().parents[2]  # `-m devstack.moto_fleet` runs from the checkout
AWS_TEST_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
}


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
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


@pytest.fixture(scope="session")
def cloud_endpoint() -> Iterator[str]:
    """URL of the devstack's EC2 stand-in (`python -m devstack.moto_indexed`, as the demo and e2e stack run it):
    moto plus a spot price history that varies by type, zone and hour, and the Pricing API (GetProducts,
    DescribeServices, GetAttributeValues) over the bundled price table. Sets the same AWS env vars as
    `moto_endpoint`; pass it as `endpoint_url` to both the `ec2` and the `pricing` boto3 clients."""
    os.environ.update(AWS_TEST_ENV)
    with MotoServer() as moto:  # the default, as devstack/stack.py runs it
        yield moto.endpoint


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
