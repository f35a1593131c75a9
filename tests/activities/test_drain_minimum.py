"""Karpenter's MinDrainTime inside the drain activity (`drained_not_before`, docs/semantics.md §9.5): a node drained
sooner is looked at again when the minimum is up, so a pod bound meanwhile (kube-scheduler had not yet seen the
disrupted taint) is evicted before the node counts as drained; the workflow's window (`return_by`) still ends the
activity first when it comes first, undrained.

Real parts: the simulator over HTTP (pods bound to the node while the drain waits, the Eviction API)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from kubernetes import client as kclient
from support.sim_objects import node, pod
from temporalio.testing import ActivityEnvironment

from activities.kube import KubeActivities
from contracts.termination import DrainInput
from gateways.kube import KubeClient
from simulator.server import Simulator


def _exists(k8s: Any, name: str) -> bool:
    try:
        got = kclient.CoreV1Api(k8s).read_namespaced_pod(name, "default")
    except kclient.ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return got.metadata.deletion_timestamp is None


async def test_a_pod_bound_while_the_drain_waits_for_the_minimum_is_evicted(sim: Simulator, k8s: Any) -> None:
    sim.load_objects([node("min-drain-1"), pod("web-min-1", "min-drain-1")])
    acts = KubeActivities(KubeClient(k8s), poll_min=0.05, poll_max=0.1)
    now = datetime.now(UTC)
    inp = DrainInput(node_name="min-drain-1", reason="Drifted", drained_not_before=now + timedelta(seconds=1.5),
                     return_by=now + timedelta(seconds=30))

    async def bind_late() -> None:
        await asyncio.sleep(0.6)  # after web-min-1 was evicted, before the minimum is up
        await asyncio.to_thread(sim.load_objects, [pod("late-min-1", "min-drain-1")])

    started = time.monotonic()
    result, _ = await asyncio.gather(ActivityEnvironment().run(acts.drain, inp), bind_late())
    assert result.drained and result.evicted == 2
    assert time.monotonic() - started >= 1.4
    assert not _exists(k8s, "web-min-1") and not _exists(k8s, "late-min-1")


async def test_the_workflows_window_ends_the_wait_undrained(sim: Simulator, k8s: Any) -> None:
    sim.load_objects([node("min-drain-2")])
    acts = KubeActivities(KubeClient(k8s), poll_min=0.05, poll_max=0.1)
    now = datetime.now(UTC)
    inp = DrainInput(node_name="min-drain-2", reason="Drifted", drained_not_before=now + timedelta(seconds=30),
                     return_by=now + timedelta(seconds=0.5))
    started = time.monotonic()
    result = await ActivityEnvironment().run(acts.drain, inp)
    assert not result.drained and result.pods == []
    assert time.monotonic() - started < 5


async def test_without_a_minimum_an_empty_node_is_drained_at_once(sim: Simulator, k8s: Any) -> None:
    sim.load_objects([node("min-drain-3")])
    acts = KubeActivities(KubeClient(k8s), poll_min=0.05, poll_max=0.1)
    started = time.monotonic()
    result = await ActivityEnvironment().run(acts.drain, DrainInput(node_name="min-drain-3", reason="Drifted"))
    assert result.drained and result.evicted == 0
    assert time.monotonic() - started < 1
