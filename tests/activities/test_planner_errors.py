"""A planner pass that raises is counted by exception class (the planner-failing alert reads it); a stale cluster
cache is not an error there, it has its own skipped counter."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import kubernetes.client as kclient
import pytest
from support.ports import free_port
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.planning_runner import PlanningActivities
from contracts.disruption import PlanPassInput
from contracts.errors import ErrorType
from gateways.kube import KubeClient
from runtime.cluster_cache import ClusterCache
from runtime.cluster_view import ClusterView
from telemetry.metrics import REGISTRY


def errors() -> dict[str, float]:
    return {s.labels["error"]: s.value for m in REGISTRY.collect() if m.name == "nodeflow_planner_pass_errors"
            for s in m.samples if s.name.endswith("_total")}


async def test_a_pass_that_cannot_reach_the_api_server_is_counted() -> None:
    config = kclient.Configuration()
    config.host = f"http://127.0.0.1:{free_port()}"  # nothing listens: every LIST is refused
    config.retries = 0
    api = kclient.ApiClient(config)
    try:
        before = errors()
        with pytest.raises(Exception) as err:
            await ActivityEnvironment().run(PlanningActivities(KubeClient(api)).plan_pass,
                                            PlanPassInput(at=datetime.now(UTC)))
        after = errors()
    finally:
        api.close()
    name = type(err.value).__name__
    assert after[name] == before.get(name, 0.0) + 1
    assert sum(after.values()) == sum(before.values()) + 1


async def test_a_stale_cache_is_not_counted_as_an_error(k8s: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import activities.planning_runner as runner

    monkeypatch.setattr(runner, "CACHE_WAIT_SECONDS", 0.1)
    view = ClusterView(ClusterCache(k8s))  # never started: not synced
    before = errors()
    with pytest.raises(ApplicationError) as err:
        await ActivityEnvironment().run(PlanningActivities(KubeClient(k8s), cluster=view).plan_pass,
                                        PlanPassInput(at=datetime.now(UTC)))
    assert err.value.type == ErrorType.CLUSTER_CACHE_NOT_READY
    assert errors() == before
