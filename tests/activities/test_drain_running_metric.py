"""The drain activity shows its node in nodeflow_drain_started_timestamp_seconds while the drain runs (also
between two activity calls of one termination) and removes it once the node is drained.

Real parts: the simulator over HTTP (Eviction API and PodDisruptionBudgets)."""

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
from telemetry.metrics import REGISTRY

METRIC = "nodeflow_drain_started_timestamp_seconds"


def started(node_name: str) -> float | None:
    return REGISTRY.get_sample_value(METRIC, {"node": node_name, "reason": "Drifted"})


async def test_a_blocked_drain_is_shown_until_it_finishes(sim: Simulator, k8s: Any) -> None:
    sim.load_objects([node("drain-metric-1"), pod("web-1", "drain-metric-1", labels={"app": "web"}),
                      pdb("web", {"app": "web"}, minAvailable=1)])
    acts = KubeActivities(KubeClient(k8s), poll_min=0.05, poll_max=0.1)
    began = datetime.now(UTC) - timedelta(minutes=5)
    blocked = DrainInput(node_name="drain-metric-1", reason="Drifted", started_at=began,
                         return_by=datetime.now(UTC) + timedelta(seconds=0.5))
    assert started("drain-metric-1") is None
    result = await ActivityEnvironment().run(acts.drain, blocked)
    assert not result.drained
    # The termination's start, not the activity's: the series stays between the workflow's drain calls.
    assert started("drain-metric-1") == began.timestamp()
    kclient.PolicyV1Api(k8s).delete_namespaced_pod_disruption_budget("web", "default")
    done = await ActivityEnvironment().run(acts.drain, blocked.model_copy(
        update={"return_by": datetime.now(UTC) + timedelta(seconds=20)}))
    assert done.drained
    assert started("drain-metric-1") is None
