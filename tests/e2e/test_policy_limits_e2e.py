"""Cost limits and deprecated pools end to end (dev server + simulator + moto + the real worker's wiring;
docs/semantics.md §15.10-15.11):

- a DisruptionPolicy's `limits.costPerHour` stops a scale-out at the limit: the pods past it stay Pending with a
  FailedScheduling naming the limit, the NodePool gets CostLimitReached, the headroom gauge says what is left, and a
  later batch for the waiting pod launches nothing while the limit holds;
- a deprecated pool launches nothing: the next pool by weight serves the pods, and with no other pool the pod waits
  with a FailedScheduling naming the deprecation.
"""

from __future__ import annotations

from typing import Any

import pytest
from support.disruption_stack import disruption_stack, fresh, replica_set, wait_for
from support.provisioning_batch import provision

from api import labels
from bench.clusters import node_pool
from contracts.provisioning import PodRef, ProvisioningPhase, ProvisioningSettings
from telemetry.metrics import REGISTRY

pytestmark = [pytest.mark.e2e]
FAST = ProvisioningSettings(ready_timeout_seconds=30, ready_poll_seconds=1, ice_backoff_seconds=1, ice_attempts=1)
M5_LARGE = [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
            {"key": labels.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large"]}]  # $0.096/h


def policy(name: str, pools: list[str], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": name},
            "spec": {"nodePools": pools, **spec}}


def pods(stack: Any, app: str) -> list[dict[str, Any]]:
    from kubernetes import client as k8s

    items = k8s.CoreV1Api(stack.api).list_namespaced_pod("default", label_selector=f"app={app}").items
    return stack.api.sanitize_for_serialization(items)


def unschedulable(stack: Any, app: str) -> list[PodRef]:
    return [PodRef(key=f"default/{p['metadata']['name']}", uid=p["metadata"]["uid"]) for p in pods(stack, app)
            if any(c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
                   for c in (p.get("status") or {}).get("conditions") or [])]


def running(stack: Any, app: str) -> int:
    return sum(1 for p in pods(stack, app) if (p.get("status") or {}).get("phase") == "Running")


async def test_a_cost_limit_stops_a_scale_out_with_an_event(temporal_client, sim_ec2, moto_endpoint) -> None:
    """$0.20/h for m5.large nodes ($0.096/h): two of three pods get a node, the third stays Pending."""
    sim_ec2.load_objects(fresh([node_pool("default", requirements=M5_LARGE, consolidate_after="Never"),
                                replica_set("api", 3, "1500m"),
                                policy("budget-cap", ["default"], limits={"costPerHour": "0.20"})]))
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint) as stack:
        refs = await wait_for(lambda: (r := unschedulable(stack, "api")) and len(r) == 3 and r, what="3 pending")
        result = await provision(stack, refs, FAST)
        assert result.outcome == ProvisioningPhase.SUCCEEDED and len(result.launched) == 2, result.message
        (waiting,) = result.unservable
        await wait_for(lambda: running(stack, "api") == 2, what="two api pods running")
        (pending,) = unschedulable(stack, "api")  # past the limit: one stays Pending (kube-scheduler picks which)

        evs = stack.events()
        (on_pool,) = [e for e in evs if e["reason"] == "CostLimitReached"]
        assert on_pool["type"] == "Warning" and on_pool["involvedObject"] == {**on_pool["involvedObject"],
                                                                             "kind": "NodePool", "name": "default"}
        assert "cost limit $0.20/h of DisruptionPolicy budget-cap reached" in on_pool["message"]
        (on_pod,) = [e for e in evs if e["reason"] == "FailedScheduling" and "nodepool" in e["message"]]  # not kube's
        assert on_pod["involvedObject"]["name"] == waiting.split("/")[1]
        assert "nodepool default: cost limit $0.20/h of DisruptionPolicy budget-cap reached" in on_pod["message"]
        headroom = REGISTRY.get_sample_value("nodeflow_cost_limit_headroom_dollars_per_hour", {"policy": "budget-cap"})
        assert headroom == pytest.approx(0.20 - 2 * 0.096)

        # a later batch for the waiting pod: the two running nodes now count, nothing launches
        again = await provision(stack, [pending], FAST)
        assert again.launched == [] and again.unservable == [pending.key], again.message
        assert len(stack.node_claims()) == 2


async def test_a_deprecated_pool_launches_nothing(temporal_client, sim_ec2, moto_endpoint) -> None:
    """`old` (weight 50) is deprecated: the web pods go to `new`; the `legacy` pods, which only `old` serves, wait
    with an Event naming the deprecation."""
    old = node_pool("old", requirements=M5_LARGE, consolidate_after="Never")
    old["spec"]["weight"] = 50
    new = node_pool("new", requirements=M5_LARGE, consolidate_after="Never")
    new["spec"]["template"]["metadata"] = {"labels": {"generation": "new"}}
    old["spec"]["template"]["metadata"] = {"labels": {"generation": "old"}}
    legacy = replica_set("legacy", 1, "500m")
    legacy["spec"]["template"]["spec"]["nodeSelector"] = {"generation": "old"}
    sim_ec2.load_objects(fresh([old, new, replica_set("web", 2, "500m"), legacy,
                                policy("retire-old", ["old"], provisioning={"deprecated": True})]))
    before = REGISTRY.get_sample_value("nodeflow_provisioning_blocked_total",
                                       {"nodepool": "old", "reason": "Deprecated"}) or 0.0
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint) as stack:
        refs = await wait_for(lambda: (r := unschedulable(stack, "web") + unschedulable(stack, "legacy"))
                              and len(r) == 3 and r, what="3 pending")
        result = await provision(stack, refs, FAST)
        assert result.outcome == ProvisioningPhase.SUCCEEDED and len(result.launched) == 1, result.message
        await wait_for(lambda: running(stack, "web") == 2, what="the web pods running")
        assert {c["metadata"]["labels"][labels.NODEPOOL_LABEL] for c in stack.node_claims()} == {"new"}
        (waiting,) = result.unservable
        assert waiting.startswith("default/legacy-")
        (on_pod,) = [e for e in stack.events() if e["reason"] == "FailedScheduling" and "nodepool" in e["message"]]
        assert "nodepool old: deprecated by DisruptionPolicy retire-old" in on_pod["message"]
        assert REGISTRY.get_sample_value("nodeflow_provisioning_blocked_total",
                                         {"nodepool": "old", "reason": "Deprecated"}) == before + 1
