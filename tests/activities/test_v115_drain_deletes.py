"""The drain activity deletes the pods due at the grace-period deadline in its own rounds, from any tier (Karpenter
v1.15, kubernetes-sigs/karpenter#3063), and leaves every other pod to the Eviction API and its PDBs.

Real parts: the simulator over HTTP (Eviction API, PodDisruptionBudgets, pod deletion with a grace period)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kubernetes import client as kclient
from support.sim_objects import node, pdb, pod
from temporalio.testing import ActivityEnvironment

from activities.kube import KubeActivities
from contracts.termination import DrainInput
from gateways.kube import KubeClient
from simulator.server import Simulator

DAEMONSET = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "ds-uid"}


def _deleting(k8s: Any, name: str) -> bool:
    """Deleted: gone already, or terminating."""
    try:
        got = kclient.CoreV1Api(k8s).read_namespaced_pod(name, "default")
    except kclient.ApiException as exc:
        return exc.status == 404
    return got.metadata.deletion_timestamp is not None


async def test_a_later_tier_pod_due_is_deleted_while_a_pdb_still_holds_tier_one(sim: Simulator, k8s: Any) -> None:
    """Deadline in 120 s. Tier 1 (grace 30 s, a PDB allows no eviction) is not due: refused, never deleted. The
    DaemonSet tier's pod (grace 600 s) cannot finish by the deadline: deleted now, before tier 1 has left."""
    sim.load_objects([node("v115-drain-1"), pod("web-v115", "v115-drain-1", labels={"app": "web-v115"}),
                      pod("agent-v115", "v115-drain-1", owner=DAEMONSET, grace=600),
                      pdb("web-v115", {"app": "web-v115"}, minAvailable=1)])
    acts = KubeActivities(KubeClient(k8s), poll_min=0.05, poll_max=0.1)
    now = datetime.now(UTC)
    inp = DrainInput(node_name="v115-drain-1", reason="Drifted", deadline=now + timedelta(seconds=120),
                     return_by=now + timedelta(seconds=0.5), deadline_deletes=True)
    result = await ActivityEnvironment().run(acts.drain, inp)
    assert not result.drained and result.deleted == 1
    assert _deleting(k8s, "agent-v115")
    assert not _deleting(k8s, "web-v115")
    assert {p.name: p.status for p in result.pods}.get("web-v115") == "Blocked"


async def test_without_deadline_deletes_the_drain_only_evicts(sim: Simulator, k8s: Any) -> None:
    """Executions before the change (`deadline_deletes` False) keep the deadline's deletions in the workflow."""
    sim.load_objects([node("v115-drain-2"), pod("agent-v115-2", "v115-drain-2", owner=DAEMONSET, grace=600),
                      pod("web-v115-2", "v115-drain-2", labels={"app": "web-v115-2"}),
                      pdb("web-v115-2", {"app": "web-v115-2"}, minAvailable=1)])
    acts = KubeActivities(KubeClient(k8s), poll_min=0.05, poll_max=0.1)
    now = datetime.now(UTC)
    inp = DrainInput(node_name="v115-drain-2", reason="Drifted", deadline=now + timedelta(seconds=120),
                     return_by=now + timedelta(seconds=0.5))
    result = await ActivityEnvironment().run(acts.drain, inp)
    assert not result.drained and result.deleted == 0
    assert not _deleting(k8s, "agent-v115-2")
