"""Capacity nodeflow launches stays until its pods land, in a world whose kube-scheduler is slow.

The trial on a real control plane: a node launched for pending pods was consolidated as Empty before
kube-scheduler bound them, because a real scheduler retries an unschedulable pod only after its backoff, a cluster
event or its unschedulable-queue flush. Here the simulator's scheduler retries a pod that failed only
`RETRY` simulated seconds later (SchedulerTiming.slow), well past the pool's consolidateAfter, and the worker runs
as in production (watch cache, controllers, the pending-pod intake). Each test fails on the code before the fix:

- provisioning: the planner's passes while the pods wait keep the new node (the pending pods fit only there), the
  next provisioning pass nominates it, and the pods bind on it when the scheduler retries;
- instance loss: the node that replaces a vanished instance is kept until the recreated pods bind;
- manual deletion under a PDB: the deleted node's pods get new capacity, Ready while the node still drains.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

import pytest
from kubernetes import client as k8s
from support.disruption_stack import disruption_stack, fresh, replica_set, wait_for
from support.provisioning_batch import pending, provision

from api import labels
from bench.clusters import node_objects, node_pool
from contracts.provisioning import ProvisioningSettings
from planning.disruption.nomination import NOMINATED
from simulator.pods import pod_healthy
from simulator.scheduler_timing import SchedulerTiming
from simulator.server import Simulator

pytestmark = [pytest.mark.e2e]
TIME_SCALE = 0.1
RETRY = 150.0  # simulated seconds: the scheduler retries a failed pod 15 s later, past consolidateAfter (1 s)
WORKER = {"watch": True, "provisioning": True, "min_drain_seconds": 0.5, "batch_idle_seconds": 0.5,
          "batch_max_seconds": 2.0}
FAST = ProvisioningSettings(ready_timeout_seconds=30, ready_poll_seconds=1, ice_backoff_seconds=1, ice_attempts=2)
ON_DEMAND = [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
             {"key": labels.ARCH_LABEL, "operator": "In", "values": ["amd64"]}]


@pytest.fixture
def moto_endpoint(own_moto_endpoint: str) -> str:
    """This module's scenarios run against a moto of their own (support/moto_fixtures.py `own_moto_endpoint`)."""
    return own_moto_endpoint


def _slow_world(moto_endpoint: str, retry: float = RETRY) -> Simulator:
    return Simulator(time_scale=TIME_SCALE, ready_delay=10.0, ec2_endpoint=moto_endpoint,
                     scheduler_timing=SchedulerTiming.slow(retry), pod_start_delay=1.0)


def _pods(api: Any, app: str) -> list[dict[str, Any]]:
    items = k8s.CoreV1Api(api).list_namespaced_pod("default", label_selector=f"app={app}").items
    return api.sanitize_for_serialization(items)


def _unbound(api: Any, app: str) -> list[str]:
    return [p["metadata"]["name"] for p in _pods(api, app) if not (p.get("spec") or {}).get("nodeName")]


def _healthy(api: Any, app: str) -> int:
    """`app`'s pods a PodDisruptionBudget counts as healthy (the simulator's own rule: Running, Ready, not deleting)."""
    return sum(1 for p in _pods(api, app) if pod_healthy(p))


def _live_claims(api: Any) -> list[dict[str, Any]]:
    items = k8s.CustomObjectsApi(api).list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims")["items"]
    return [c for c in items if not c["metadata"].get("deletionTimestamp")]


def _initialized(claim: dict[str, Any]) -> bool:
    return any(c.get("type") == "Initialized" and c.get("status") == "True"
               for c in (claim.get("status") or {}).get("conditions") or [])


def _unique(name: str) -> str:
    """A node name no other test's instance in the session's shared moto is tagged with (names like `old` repeat
    across tests, and a stranger's instance must not stand for this test's node)."""
    return f"{name}-{uuid.uuid4().hex[:6]}"


def _world(stack: Any) -> str:
    """Claims (name, deleting, node, instance type, created, conditions), nodes (provider ID, Ready), instances
    (state, NodeClaim tag), where each pod is and every Event: a failing wait's whole explanation, printed in full
    (pytest shortens an assertion's message), e.g. two replacements each holding one pod (a batch split, or a
    second launch for pods the first was nominated for) or a pod on a node no claim accounts for."""
    claims = k8s.CustomObjectsApi(stack.api).list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims")["items"]
    world = {
        "claims": [(c["metadata"]["name"], bool(c["metadata"].get("deletionTimestamp")),
                    (c.get("status") or {}).get("nodeName"), (c.get("status") or {}).get("providerID"),
                    (c["metadata"].get("labels") or {}).get(labels.INSTANCE_TYPE_LABEL),
                    c["metadata"].get("creationTimestamp"),
                    [(x["type"], x["status"]) for x in (c.get("status") or {}).get("conditions") or []])
                   for c in claims],
        "nodes": [(n["metadata"]["name"], (n.get("spec") or {}).get("providerID"), bool(n["metadata"].get(
                   "deletionTimestamp")), [(x["type"], x["status"]) for x in (n.get("status") or {}).get(
                       "conditions") or [] if x["type"] == "Ready"]) for n in stack.nodes()],
        "instances": [(i["InstanceId"], i["State"]["Name"], i.get("PrivateDnsName"), i.get("LaunchTime"),
                       {t["Key"]: t["Value"] for t in i.get("Tags") or []}.get(labels.NODECLAIM_TAG))
                      for r in stack.ec2.describe_instances()["Reservations"] for i in r["Instances"]],
        "pods": [(p["metadata"]["name"], (p.get("spec") or {}).get("nodeName"), (p.get("status") or {}).get("phase"))
                 for p in stack.api.sanitize_for_serialization(
                     k8s.CoreV1Api(stack.api).list_namespaced_pod("default").items)],
        "events": [(e.get("lastTimestamp") or e.get("eventTime"), e["involvedObject"].get("kind"),
                    e["involvedObject"].get("name"), e["reason"], e["message"]) for e in stack.events()],
    }
    return json.dumps(world, indent=1, default=str)


async def _passes_keep(stack: Any, node: str, app: str, passes: int = 2, want: str = "") -> list[str]:
    """Planner passes while `app`'s pods are still unbound: none may disrupt `node`. At least `passes`, then more
    (while the pods wait) until an Event on the node containing `want` says why it was kept (a pass records its
    Events in an activity of its own, and the node may still be under consolidateAfter at the first). Returns the
    messages of those Events (DisruptionBlocked / Unconsolidatable)."""
    reasons: list[str] = []
    for i in range(passes + 6):
        if _unbound(stack.api, app) == []:
            assert i >= passes, "the pods bound before the pass: the test proves nothing"
            break
        result = await stack.planner_pass()
        assert not result.started, f"the node launched for pending pods was disrupted: {result.started}"
        await asyncio.sleep(0.5)
        reasons = _kept_reasons(stack, node)
        if i + 1 >= passes and any(want in r for r in reasons):
            break
    return reasons


def _kept_reasons(stack: Any, node: str) -> list[str]:
    return [e["message"] for e in stack.events() if e["involvedObject"].get("name") == node
            and e["involvedObject"].get("kind") == "Node" and e["reason"] in ("DisruptionBlocked", "Unconsolidatable")]


async def test_a_node_launched_for_pending_pods_is_kept_until_they_bind(temporal_client, moto_endpoint) -> None:
    with _slow_world(moto_endpoint, retry=2 * RETRY) as sim:  # two provisioning passes and three planner passes
        sim.load_objects(fresh([node_pool("default", requirements=ON_DEMAND, consolidate_after="1s"),
                                replica_set("web", 3, "1")]))
        async with disruption_stack(temporal_client, sim, moto_endpoint, worker={"watch": True}) as stack:
            created = time.monotonic()
            refs = await wait_for(lambda: (r := pending(stack, "web")) and len(r) == 3 and r, what="3 pending")
            await provision(stack, refs, FAST)
            (claim,) = await wait_for(lambda: [c for c in _live_claims(stack.api) if _initialized(c)] or None,
                                      what="the launched claim initialized")
            node = claim["status"]["nodeName"]
            reasons = await _passes_keep(stack, node, "web", want="Pending pod default/web-")
            assert any(r.startswith("Pending pod default/web-") for r in reasons), reasons
            again = await provision(stack, refs, FAST)  # the next batch of the same pods
            assert again.launched == []
            nominated = (await asyncio.to_thread(lambda: _live_claims(stack.api)))[0]
            assert labels.NOMINATED_UNTIL_ANNOTATION in nominated["metadata"]["annotations"]
            assert NOMINATED.capitalize() in await _passes_keep(stack, node, "web", passes=1,
                                                                want=NOMINATED.capitalize())
            await wait_for(lambda: not _unbound(stack.api, "web"), timeout=40, what="the pods bound by the retry")
            waited = time.monotonic() - created
            assert {p["spec"]["nodeName"] for p in _pods(stack.api, "web")} == {node}
            assert len(_live_claims(stack.api)) == 1, "a second node was launched"
            print(f"pods pending {waited:.1f} s (scheduler retry {2 * RETRY * TIME_SCALE:.0f} s); node kept")


async def test_the_node_replacing_a_vanished_instance_is_kept_until_its_pods_bind(temporal_client,
                                                                                 moto_endpoint) -> None:
    with _slow_world(moto_endpoint) as sim:
        sim.load_objects(fresh([node_pool("default", requirements=ON_DEMAND, consolidate_after="1s"),
                                *node_objects(_unique("first"), "m5.xlarge"), replica_set("api", 2, "1")]))
        async with disruption_stack(temporal_client, sim, moto_endpoint, worker=WORKER) as stack:
            await wait_for(lambda: not _unbound(stack.api, "api"), timeout=20, what="api bound on the first node")
            (first,) = _live_claims(stack.api)
            iid = first["status"]["providerID"].rsplit("/", 1)[-1]
            stack.ec2.terminate_instances(InstanceIds=[iid])  # the instance vanishes under the node
            try:
                (second,) = await wait_for(
                    lambda: [c for c in _live_claims(stack.api) if c["metadata"]["name"] != first["metadata"]["name"]
                             and _initialized(c)] or None, timeout=90, what="the replacing node initialized")
            except TimeoutError as exc:  # one CI run timed out here (60 s): say what the cluster held
                pytest.fail(f"{exc}: {_world(stack)}")
            await _passes_keep(stack, second["status"]["nodeName"], "api")
            await wait_for(lambda: not _unbound(stack.api, "api"), timeout=40, what="the recreated pods bound")
            where = {p["spec"]["nodeName"] for p in _pods(stack.api, "api")}
            if where != {second["status"]["nodeName"]}:
                pytest.fail(f"the recreated pods are on {where}, not only on {second['status']['nodeName']}: "
                            f"{_world(stack)}")


async def test_a_node_deleted_under_a_pdb_gets_capacity_while_it_drains(temporal_client, moto_endpoint) -> None:
    pool = node_pool("default", requirements=ON_DEMAND, consolidate_after="1s")
    pool["spec"]["template"]["spec"]["terminationGracePeriod"] = "1h"
    blocking = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "db",
                "namespace": "default"}, "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "db"}}}}
    with _slow_world(moto_endpoint) as sim:
        claim, node_obj = node_objects(_unique("old"), "m5.xlarge")
        node_obj["metadata"]["finalizers"] = [labels.TERMINATION_FINALIZER]  # as registration leaves it
        sim.load_objects(fresh([pool, claim, node_obj, replica_set("db", 2, "1"), blocking]))
        async with disruption_stack(temporal_client, sim, moto_endpoint, worker=WORKER) as stack:
            # Running and Ready, not only bound: the Eviction API lets a Pending pod go without asking its PDB (as
            # kube-apiserver does), and a drain that starts within the pods' start delay evicts one (a CI run did)
            await wait_for(lambda: _healthy(stack.api, "db") == 2, timeout=20, what="db Ready on the old node")
            (old,) = _live_claims(stack.api)
            node = old["status"]["nodeName"]
            deleted = time.monotonic()
            k8s.CoreV1Api(stack.api).delete_node(node)
            (new,) = await wait_for(
                lambda: [c for c in _live_claims(stack.api) if c["metadata"]["name"] != old["metadata"]["name"]
                         and _initialized(c)] or None, timeout=60, what="replacement capacity while it drains")
            ready_after = time.monotonic() - deleted
            still = k8s.CoreV1Api(stack.api).read_node(node)
            assert still.metadata.deletion_timestamp is not None, "the PDB-blocked node should still be draining"
            assert {p["spec"]["nodeName"] for p in _pods(stack.api, "db")} == {node}, "the PDB holds its pods"
            for _ in range(2):  # the new node stays empty until the deadline: it is kept for the drained pods
                result = await stack.planner_pass()
                assert not result.started, f"the capacity launched for the drained pods was disrupted: {result}"
                await asyncio.sleep(1.0)
            assert any(c["metadata"]["name"] == new["metadata"]["name"] for c in _live_claims(stack.api))
            print(f"manual delete under a PDB -> replacement initialized in {ready_after:.1f} s "
                  f"({new['metadata']['name']}); the node still drains")
