"""Replacement capacity stays until the pods it was launched for land, in a world whose kube-scheduler is slow.

The same world as tests/e2e/test_nomination_e2e.py: the simulator's scheduler retries a pod that found no node only
`RETRY` simulated seconds later (SchedulerTiming.slow), well past the pool's consolidateAfter (1 s), and the worker
runs as in production (watch cache, controllers, the pending-pod intake). Two more of the trial's scenarios (issue
#32), with the planner's passes driven by the test:

- spot pre-spin: a spot warning through SQS pre-spins a replacement; it is Ready (and empty) while the spot node
  drains, and the evicted pods' replacements wait for the scheduler's retry: no pass may disrupt it meanwhile
  (kept by its nomination, or by the pending-pod rule without it);
- spot pre-spin under a PDB: the pods stay on the draining node until the warning's deadline, the Ready replacement
  is kept for them by the room reserved for the pods of deleting nodes;
- drift replacement: a drifted node's DisruptionWorkflow launches a replacement, waits for it and terminates the old
  node; passes during and after must leave the replacement alone until the ReplicaSet's pods bind on it. A guard:
  it passes without the fix too (the running disruption protects its replacement, and the pods, evicted only once
  it is Ready, bind at their first try).

Each asserts that the pods end Running on the launched capacity and that nothing else was launched. The spot tests
fail on the code before the fix (a pass disrupts the pre-spun node).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from e2e.interruption_helpers import intake_worker, new_queue, spot_warning
from kubernetes import client as k8s
from support.disruption_stack import disruption_stack, fresh, replica_set, wait_for

from api import labels
from bench.clusters import node_objects, node_pool
from simulator.scheduler_timing import SchedulerTiming
from simulator.server import Simulator

pytestmark = [pytest.mark.e2e]
TIME_SCALE = 0.1
RETRY = 150.0  # simulated seconds: the scheduler retries a failed pod 15 s later, past consolidateAfter (1 s)
SPOT_NOTICE = 120.0  # seconds from a spot warning's time to its deadline (EC2's two minutes)
WORKER = {"watch": True, "provisioning": True, "min_drain_seconds": 0.5, "batch_idle_seconds": 0.5,
          "batch_max_seconds": 2.0}


def _requirements(capacity_type: str) -> list[dict[str, Any]]:
    return [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": [capacity_type]},
            {"key": labels.ARCH_LABEL, "operator": "In", "values": ["amd64"]}]


@pytest.fixture
def moto_endpoint(own_moto_endpoint: str) -> str:
    """These scenarios run against a moto of their own (support/moto_fixtures.py `own_moto_endpoint`)."""
    return own_moto_endpoint


def _slow_world(moto_endpoint: str) -> Simulator:
    return Simulator(time_scale=TIME_SCALE, ready_delay=10.0, ec2_endpoint=moto_endpoint,
                     scheduler_timing=SchedulerTiming.slow(RETRY), pod_start_delay=1.0)


def _pods(api: Any, app: str) -> list[dict[str, Any]]:
    items = k8s.CoreV1Api(api).list_namespaced_pod("default", label_selector=f"app={app}").items
    return [p for p in api.sanitize_for_serialization(items) if not p["metadata"].get("deletionTimestamp")]


def _live_claims(api: Any) -> list[dict[str, Any]]:
    items = k8s.CustomObjectsApi(api).list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims")["items"]
    return [c for c in items if not c["metadata"].get("deletionTimestamp")]


def _initialized_other(api: Any, old: str) -> list[dict[str, Any]] | None:
    """The initialized NodeClaims other than `old`, or None."""
    return [c for c in _live_claims(api) if c["metadata"]["name"] != old and any(
        x.get("type") == "Initialized" and x.get("status") == "True"
        for x in (c.get("status") or {}).get("conditions") or [])] or None


def _running_on(api: Any, app: str, node: str, count: int) -> bool:
    pods = _pods(api, app)
    return len(pods) == count and all((p.get("spec") or {}).get("nodeName") == node
                                      and (p.get("status") or {}).get("phase") == "Running" for p in pods)


@dataclass
class PendingClock:
    """Samples `app`'s pods: when each live pod was first seen unbound and first seen bound (monotonic), so the
    test can report how long the pods waited for the scheduler's retry."""

    api: Any
    app: str
    unbound: dict[str, float] = field(default_factory=dict)
    bound: dict[str, float] = field(default_factory=dict)

    def sample(self) -> None:
        now = time.monotonic()
        for p in _pods(self.api, self.app):
            name = p["metadata"]["name"]
            if not (p.get("spec") or {}).get("nodeName"):
                self.unbound.setdefault(name, now)
            elif name in self.unbound:
                self.bound.setdefault(name, now)

    def longest(self) -> float:
        """The longest time a pod seen pending waited until it was seen bound (0 when none was seen pending)."""
        return max((self.bound.get(n, time.monotonic()) - t for n, t in self.unbound.items()), default=0.0)

    @contextlib.asynccontextmanager
    async def running(self, interval: float = 0.1) -> AsyncIterator[PendingClock]:
        async def loop() -> None:
            while True:
                await asyncio.to_thread(self.sample)
                await asyncio.sleep(interval)

        task = asyncio.create_task(loop())
        try:
            yield self
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def _passes_spare(stack: Any, node: str, app: str, passes: int, pause: float = 0.5) -> int:
    """Planner passes while `node` holds none of `app`'s pods (an Empty candidate past consolidateAfter): none may
    start a disruption. Returns how many passes ran before the pods arrived (0: the test proved nothing)."""
    ran = 0
    for _ in range(passes):
        pods = await asyncio.to_thread(_pods, stack.api, app)
        if any((p.get("spec") or {}).get("nodeName") == node for p in pods):
            break
        result = await stack.planner_pass()
        assert not result.started, f"a pass disrupted capacity launched for pods before they bound: {result.started}"
        ran += 1
        await asyncio.sleep(pause)
    return ran


def _kept_because(stack: Any, node: str) -> set[str]:
    """The rules that kept `node`, from the Events the passes put on it: a pending pod's room, the room reserved
    for a deleting node's pods, or a nomination (docs/semantics.md §3.1, §3.4, §9.7)."""
    rules = {"pending pod ": "pending pod", "holds the room planned": "reserved room", "nominated": "nominated"}
    return {rule for e in stack.events() if e["involvedObject"].get("name") == node
            and e["reason"] in ("DisruptionBlocked", "Unconsolidatable")
            for text, rule in rules.items() if text in e["message"].lower()}


async def _only_claim(stack: Any, name: str, old: str) -> None:
    """Once the `old` NodeClaim is deleted, `name` is the only one left: nothing else was launched (or kept)."""
    live = await wait_for(lambda: (n := [c["metadata"]["name"] for c in _live_claims(stack.api)]) and old not in n
                          and n, timeout=15, what=f"{old} deleted")
    assert live == [name], f"a node other than the replacement was launched or kept: {live}"


async def _passes_after(stack: Any, passes: int) -> int:
    """Planner passes once the disruption is over, whether or not the pods have bound yet: none may start one (the
    replacement is the only node and was sized for these pods, so no consolidation is worth it either)."""
    for _ in range(passes):
        result = await stack.planner_pass()
        assert not result.started, f"a pass after the disruption disrupted its replacement: {result.started}"
        await asyncio.sleep(0.5)
    return passes


@contextlib.asynccontextmanager
async def _spot_stack(client: Any, moto_endpoint: str, *extra: dict[str, Any]) -> AsyncIterator[tuple[Any, Any]]:
    """The slow world with a spot m5.xlarge `spot-a` running the ReplicaSet `web` (2 pods of 1 CPU), the worker
    (watch, provisioning) whose passes the test drives, and the interruption intake on its own queue. Yields the
    stack and a function that sends a spot warning for `spot-a` dated `age` seconds ago."""
    with _slow_world(moto_endpoint) as sim:
        # budget 2 nodes (a 20-node pool's 10 %): the draining spot node does not use up the budget by itself
        sim.load_objects(fresh([node_pool("default", requirements=_requirements("spot"), consolidate_after="1s",
                                          budgets=[{"nodes": "2"}]),
                                *node_objects("spot-a", "m5.xlarge", capacity_type="spot"),
                                replica_set("web", 2, "1"), *extra]))
        sqs, url = new_queue(moto_endpoint)
        async with (disruption_stack(client, sim, moto_endpoint, worker=WORKER) as stack,
                    intake_worker(client, sim, moto_endpoint, sqs, url, min_drain=0.5)):
            await wait_for(lambda: _running_on(stack.api, "web", "spot-a", 2), timeout=20, what="web on spot-a")
            (old,) = _live_claims(stack.api)
            instance = old["status"]["providerID"].rsplit("/")[-1]

            def warn(age: float = 0.0) -> None:
                at = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=age)
                sqs.send_message(QueueUrl=url, MessageBody=spot_warning(instance, time_=at))

            yield stack, warn


async def test_a_prespun_spot_replacement_is_kept_until_the_evicted_pods_bind(temporal_client,
                                                                              moto_endpoint) -> None:
    """The drain evicts the pods at once; their replacements wait for the scheduler's retry while the pre-spun
    node is Ready and empty."""
    async with _spot_stack(temporal_client, moto_endpoint) as (stack, warn):
        warned = time.monotonic()
        async with PendingClock(stack.api, "web").running() as clock:
            warn()
            (new,) = await wait_for(lambda: _initialized_other(stack.api, "spot-a-claim"), timeout=30,
                                    what="the pre-spun replacement initialized")
            ready_after = time.monotonic() - warned
            node = new["status"]["nodeName"]
            ran = await _passes_spare(stack, node, "web", passes=4, pause=1.0)
            assert ran >= 2, f"the pods bound after {ran} pass(es): the test proves nothing"
            await wait_for(lambda: _running_on(stack.api, "web", node, 2), timeout=40,
                           what="the evicted pods' replacements Running on the pre-spun node")
        await _only_claim(stack, new["metadata"]["name"], "spot-a-claim")
        assert clock.unbound, "no pod was ever pending: the scheduler's retry was not exercised"
        why = _kept_because(stack, node)
        assert why, "no Event on the pre-spun node says why the passes kept it"
        print(f"spot pre-spin: replacement initialized {ready_after:.1f} s after the warning; {ran} passes kept "
              f"it ({sorted(why)}); pods pending {clock.longest():.1f} s (scheduler retry {RETRY * TIME_SCALE:.0f} s)")


async def test_a_prespun_spot_replacement_is_kept_while_a_pdb_holds_the_pods(temporal_client,
                                                                             moto_endpoint) -> None:
    """A PDB allows no eviction, so the pods stay on the draining spot node until the warning's deadline (the
    warning is dated so that it falls 12 s ahead): the pre-spun node is Ready and empty all that time, kept for
    the pods of the deleting node, and takes them when the deadline evicts them."""
    blocking = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}}
    async with _spot_stack(temporal_client, moto_endpoint, blocking) as (stack, warn):
        warned = time.monotonic()
        warn(age=SPOT_NOTICE - 12.0)
        (new,) = await wait_for(lambda: _initialized_other(stack.api, "spot-a-claim"), timeout=30,
                                what="the pre-spun replacement initialized")
        ready_after = time.monotonic() - warned
        node = new["status"]["nodeName"]
        ran = await _passes_spare(stack, node, "web", passes=4, pause=1.0)
        assert ran >= 2, f"the pods moved after {ran} pass(es): the test proves nothing"
        await wait_for(lambda: _running_on(stack.api, "web", node, 2), timeout=30,
                       what="the pods Running on the pre-spun node after the deadline")
        moved_after = time.monotonic() - warned
        await _only_claim(stack, new["metadata"]["name"], "spot-a-claim")
        why = _kept_because(stack, node)
        assert why, "no Event on the pre-spun node says why the passes kept it"
        print(f"spot pre-spin under a PDB: replacement initialized {ready_after:.1f} s after the warning; {ran} passes "
              f"kept it ({sorted(why)}); pods Running there {moved_after:.1f} s after the warning")


async def test_a_drift_replacement_is_kept_until_the_pods_bind(temporal_client, moto_endpoint) -> None:
    pool = node_pool("default", requirements=_requirements("on-demand"), consolidate_after="1s",
                     budgets=[{"nodes": "1"}])
    with _slow_world(moto_endpoint) as sim:
        sim.load_objects(fresh([pool, *node_objects("old-0", "m5.xlarge", annotations={
            labels.TEMPLATE_HASH_ANNOTATION: "stale-template"}), replica_set("api", 2, "1")]))
        async with disruption_stack(temporal_client, sim, moto_endpoint, worker=WORKER) as stack:
            await wait_for(lambda: _running_on(stack.api, "api", "old-0", 2), timeout=20, what="api on old-0")
            (old,) = _live_claims(stack.api)
            async with PendingClock(stack.api, "api").running() as clock:
                started = time.monotonic()
                result = await stack.planner_pass()
                assert len(result.started) == 1, result
                (new,) = await wait_for(lambda: _initialized_other(stack.api, old["metadata"]["name"]), timeout=30,
                                        what="the drift replacement initialized")
                ready_after = time.monotonic() - started
                node = new["status"]["nodeName"]
                during = await _passes_spare(stack, node, "api", passes=2)
                outcome = await stack.outcome(result.started[0])
                after = await _passes_after(stack, passes=2)
                await wait_for(lambda: _running_on(stack.api, "api", node, 2), timeout=40,
                               what="the ReplicaSet's pods Running on the replacement")
            assert outcome.outcome.value == "Succeeded", outcome
            await _only_claim(stack, new["metadata"]["name"], old["metadata"]["name"])
            print(f"drift: replacement initialized {ready_after:.1f} s after the pass; {during} passes during the "
                  f"disruption, {after} after it; pods pending {clock.longest():.1f} s "
                  f"(scheduler retry {RETRY * TIME_SCALE:.0f} s)")
