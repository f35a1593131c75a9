"""The planner pass releases disrupted taints that no workflow owns, through the one taint writer.

Real parts: the simulator over HTTP, the Temporal dev server (visibility of in-flight workflows), the activity
run in Temporal's ActivityEnvironment.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from support.sim_objects import node
from temporalio.client import Client
from temporalio.testing import ActivityEnvironment

from activities.planning_runner import PlanningActivities
from api import labels
from api.timestamps import format_seconds
from contracts.disruption import PlanPassInput
from gateways.kube import KubeClient


def _disrupted(added: datetime) -> list[dict[str, Any]]:
    return [{**labels.DISRUPTED_TAINT, "timeAdded": format_seconds(added)}]


def _has_taint(kube: KubeClient, name: str) -> bool:
    taints = (kube.get_node(name) or {}).get("spec", {}).get("taints") or []
    return any(t["key"] == labels.DISRUPTED_TAINT_KEY for t in taints)


async def test_old_unowned_taints_are_released_fresh_and_deleting_ones_kept(sim: Any, k8s: Any,
                                                                          temporal_client: Client) -> None:
    now = datetime.now(UTC)
    sim.load_objects([node("rel-old", taints=_disrupted(now - timedelta(minutes=5))),
                      node("rel-fresh", taints=_disrupted(now)),
                      node("rel-deleting", taints=_disrupted(now - timedelta(minutes=5)),
                           finalizers=[labels.TERMINATION_FINALIZER])])
    kube = KubeClient(k8s)
    assert kube.delete_node("rel-deleting")
    result = await ActivityEnvironment().run(PlanningActivities(kube, temporal_client).plan_pass,
                                             PlanPassInput(at=now))
    assert result.released == ["rel-old"]
    assert not _has_taint(kube, "rel-old")
    assert _has_taint(kube, "rel-fresh") and _has_taint(kube, "rel-deleting")
    assert {"rel-fresh", "rel-deleting"} <= set(result.excluded_nodes)
    assert "rel-old" not in result.excluded_nodes
