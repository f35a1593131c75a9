"""activities/launch_controls.py: the NodePool Warnings and metrics of a plan that cost limits or deprecation hold."""

from __future__ import annotations

from typing import Any

from activities.launch_controls import blocked_pods, pool_warnings, record_metrics
from api import labels as L
from planning.provisioning.provisioner import decide
from telemetry import metrics
from tests.planning.planning_factory import nodepool, pod, snapshot

ONLY_M5XL = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
             {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.xlarge"]}]


def _policy(name: str, pools: list[str], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": name},
            "spec": {"nodePools": pools, **spec}}


def test_a_capped_scale_out_warns_its_pool_counts_its_pods_and_sets_the_headroom():
    objs = [nodepool("capped", requirements=ONLY_M5XL), nodepool("old", weight=9, requirements=ONLY_M5XL),
            *[pod(f"web-{i}", None, cpu="3") for i in range(4)],
            _policy("cap", ["capped"], limits={"costPerHour": "0.40"}),
            _policy("retire", ["old"], provisioning={"deprecated": True})]
    decision = decide(snapshot(*objs))
    assert len(decision.launches) == 2
    ((pool, reason, message),) = pool_warnings(decision)
    assert (pool, reason) == ("capped", "CostLimitReached") and message.endswith("2 pod(s) wait")
    assert blocked_pods(decision) == {("old", "Deprecated"): 2}  # by the first pool by weight that refused them
    before = metrics.PROVISIONING_BLOCKED.labels(nodepool="old", reason="Deprecated")._value.get()
    record_metrics(decision)
    assert metrics.PROVISIONING_BLOCKED.labels(nodepool="old", reason="Deprecated")._value.get() == before + 2
    assert metrics.COST_LIMIT_HEADROOM.labels(policy="cap")._value.get() == decision.cost_limits[0]["headroom"]
