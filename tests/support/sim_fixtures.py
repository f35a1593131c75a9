"""Simulator fixtures (owned by the simulator area): an in-process Kubernetes API emulator per test.

`sim`: a fresh Simulator (no EC2, time_scale 0.01, ready_delay 2.0) on a free port, with a real kube-scheduler's
timing (backoff, event requeue, bind delay: simulator/scheduler_timing.py) and jittered kubelets, so races a real
cluster has show here too. At time_scale 0.01 that costs nothing measurable (tests/simulator, e2e provisioning,
termination, disruption, drift, interruption: within the machine's noise of SchedulerTiming.instant()); a test
that needs a pod bound the instant a node fits builds its own Simulator(scheduler_timing=SchedulerTiming.instant()).
`sim_ec2`: the same, wired to the session `moto_endpoint` (EC2 instances register Nodes), reading instance states at
the simulator's own pace (every 0.25 s, a quarter of the time at most). At 0.05 s an idle one cost 0.25 cores, half
of it in moto; at 0.25 s, 0.09 (2026-11-30): tests wait in real time, so this was paid through most of the e2e run.
`k8s`: a kubernetes ApiClient for `sim`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from simulator.server import Simulator


@pytest.fixture
def sim() -> Iterator[Simulator]:
    with Simulator(time_scale=0.01, ready_delay=2.0) as s:
        yield s


@pytest.fixture
def sim_ec2(moto_endpoint: str) -> Iterator[Simulator]:
    with Simulator(time_scale=0.01, ready_delay=2.0, ec2_endpoint=moto_endpoint) as s:
        yield s


@pytest.fixture
def k8s(sim: Simulator) -> Iterator[Any]:
    api = sim.api_client()
    try:
        yield api
    finally:
        api.close()
