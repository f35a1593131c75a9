"""Two worker loops on one emulated cluster with leader election on (runtime/leader.py, runtime/worker_loop.py): both
serve Temporal tasks, only the Lease's holder runs the NodeClaim lifecycle controllers, and when it stops the other
takes over: within the lease duration when the leader vanished without a word, at its next retry when it released."""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import replace
from typing import Any

import pytest
from temporalio.client import Client

from runtime.cloud_clients import ec2_client
from runtime.leader import ElectionSettings
from runtime.settings import Deps, Settings
from runtime.worker_loop import run_worker

ELECTION = ElectionSettings(namespace="default", lease_duration_seconds=3, renew_deadline_seconds=2.5,
                            retry_period_seconds=0.3)
LEADER_ONLY = ("nodeclaim-lifecycle", "nodeclaim-gc", "nodepool-status", "karpenter-state")
QUIET = {"watch": False, "provisioning": False, "lifecycle": True, "cluster_cache": False, "activity_threads": 2,
         "max_concurrent_activities": 4, "io_threads": 4}


class Replica:
    """One worker loop, as one pod of the Deployment."""

    def __init__(self, client: Client, sim: Any, moto_endpoint: str, queue: str, election: ElectionSettings) -> None:
        """`client` is this replica's own connection: the SDK refuses two workers of one queue on one client."""
        settings = Settings(task_queue=queue, leader_election=election, **QUIET)
        settings.ami_id = sim.world.ec2.image_id()
        self.api = sim.api_client()
        self.deps = Deps(kube_api=self.api, ec2=ec2_client("us-east-1", moto_endpoint), settings=settings)
        self.stop = asyncio.Event()
        self.task = asyncio.create_task(run_worker(client, self.deps, self.stop))

    @property
    def leads(self) -> bool:
        elector = self.deps._cache.get("leader_elector")
        return elector is not None and elector.is_leader

    @classmethod
    async def start(cls, client: Client, sim: Any, moto_endpoint: str, queue: str,
                    election: ElectionSettings) -> Replica:
        own = await Client.connect(client.service_client.config.target_host, namespace=client.namespace)
        return cls(own, sim, moto_endpoint, queue, election)

    async def halt(self) -> None:
        self.stop.set()
        await asyncio.wait_for(self.task, 30)
        self.api.close()


def _controllers() -> dict[str, int]:
    """How many of each leader-only controller task run in this process (all replicas)."""
    names = [t.get_name() for t in asyncio.all_tasks() if not t.done()]
    return {n: names.count(n) for n in LEADER_ONLY}


async def _until(cond: Any, timeout: float) -> float:
    start = time.monotonic()
    while not cond():
        assert time.monotonic() - start < timeout, f"not within {timeout} s: {_controllers()}"
        await asyncio.sleep(0.05)
    return time.monotonic() - start


@pytest.mark.timeout(120)
async def test_one_replica_runs_the_controllers_and_the_other_takes_over(temporal_client: Client, sim_ec2: Any,
                                                                         moto_endpoint: str) -> None:
    queue = f"leader-{uuid.uuid4().hex[:8]}"
    one_each = dict.fromkeys(LEADER_ONLY, 1)
    # a: a leader that vanishes without releasing its lease (as a SIGKILLed pod)
    a = await Replica.start(temporal_client, sim_ec2, moto_endpoint, queue, replace(ELECTION, release_on_stop=False))
    replicas = [a]
    try:
        await _until(lambda: a.leads and _controllers() == one_each, 20)
        b = await Replica.start(temporal_client, sim_ec2, moto_endpoint, queue, ELECTION)
        replicas.append(b)
        await asyncio.sleep(ELECTION.lease_duration_seconds + 0.5)  # b keeps trying past a lease: a renews, b waits
        assert a.leads and not b.leads and _controllers() == one_each
        halting = asyncio.create_task(a.halt())  # timed from the stop: the Temporal worker's shutdown runs meanwhile
        crashed = await _until(lambda: b.leads and _controllers() == one_each, ELECTION.lease_duration_seconds + 5)
        await halting
        # c: a new pod; b stops gracefully and hands the lease back, c takes over at its next retry
        c = await Replica.start(temporal_client, sim_ec2, moto_endpoint, queue, ELECTION)
        replicas.append(c)
        await asyncio.sleep(1)
        assert b.leads and not c.leads and _controllers() == one_each
        halting = asyncio.create_task(b.halt())
        released = await _until(lambda: c.leads and _controllers() == one_each, ELECTION.lease_duration_seconds + 5)
        await halting
        print(f"takeover: {crashed:.2f} s after a leader vanished, {released:.2f} s after one released its lease")
        assert released < ELECTION.lease_duration_seconds  # the release, not the lease's expiry, let c in
    finally:
        for replica in replicas:
            if not replica.task.done():
                await replica.halt()
    assert _controllers() == dict.fromkeys(LEADER_ONLY, 0)
