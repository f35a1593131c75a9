"""The worker's unavailable offerings end to end (dev server + simulator + moto + the real worker's wiring): ICE on
m5.large moves the first launch to m5.xlarge and marks m5.large in every zone; the next batch's plan no longer names
m5.large and its launch never asks EC2 for it; the marks are counted by reason."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from support.disruption_stack import disruption_stack, fresh, replica_set, wait_for
from support.provisioning_batch import pending, provision

from api import labels
from bench.clusters import node_pool
from contracts.provisioning import ProvisioningPhase, ProvisioningSettings
from simulator.ec2 import IceInjector
from telemetry.metrics import REGISTRY

pytestmark = [pytest.mark.e2e]  # no shared fixture: any xdist worker (the "demo" group is for test_demo.py)
FAST = ProvisioningSettings(ready_timeout_seconds=30, ready_poll_seconds=1, ice_backoff_seconds=1, ice_attempts=2)
REQS = [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
        {"key": labels.ARCH_LABEL, "operator": "In", "values": ["amd64"]},
        {"key": labels.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large", "m5.xlarge"]}]


def marked(reason: str) -> float:
    return REGISTRY.get_sample_value("nodeflow_offerings_marked_unavailable_total", {"reason": reason}) or 0.0


def ice_answers() -> float:
    """RunInstances answers the gateway counted as no capacity (docs/reliability.md#the-clouds-own-failures)."""
    return REGISTRY.get_sample_value("nodeflow_cloud_api_errors_total",
                                     {"operation": "run_instances", "kind": "insufficient_capacity"}) or 0.0


def claim_types(claim: dict[str, Any]) -> list[str]:
    (req,) = [r for r in claim["spec"]["requirements"] if r["key"] == labels.INSTANCE_TYPE_LABEL]
    return req["values"]


async def test_ice_marks_the_offering_for_the_next_plan_and_launch(temporal_client, sim_ec2, moto_endpoint) -> None:
    web_b = replica_set("web-b", 1, "1500m")  # another zone: it cannot join the first node
    web_b["spec"]["template"]["spec"]["nodeSelector"] = {labels.ZONE_LABEL: "us-east-1b"}
    web_a = replica_set("web-a", 1, "1500m")
    web_a["spec"]["template"]["spec"]["nodeSelector"] = {labels.ZONE_LABEL: "us-east-1a"}
    sim_ec2.load_objects(fresh([node_pool("default", requirements=REQS, consolidate_after="Never"), web_a]))
    before, before_ice = marked("InsufficientInstanceCapacity"), ice_answers()
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint) as stack:
        ice = IceInjector().install(stack.ec2)
        ice.exhaust("m5.large")  # every zone
        refs = await wait_for(lambda: pending(stack, "web-a"), what="the web-a pod pending")
        first = await provision(stack, refs, FAST)
        assert first.outcome == ProvisioningPhase.SUCCEEDED, first.message
        assert [r.instance_type for r in first.launched] == ["m5.xlarge"]
        assert ice.refused == [("m5.large", "us-east-1a")]  # the pod is pinned to 1a: one refusal, then m5.xlarge
        assert marked("InsufficientInstanceCapacity") == before + 1

        ice.exhaust("m5.large", "us-east-1b")  # EC2 would refuse 1b too; the cache does not know that yet
        await asyncio.to_thread(sim_ec2.load_objects, [web_b])
        refs = await wait_for(lambda: pending(stack, "web-b"), what="the web-b pod pending")
        second = await provision(stack, refs, FAST)
        assert second.outcome == ProvisioningPhase.SUCCEEDED, second.message
        (launched,) = second.launched
        (claim,) = [c for c in stack.node_claims() if c["metadata"]["name"] == launched.node_claim]
        # 1b was never marked: the plan still offers m5.large there, EC2 refuses it once, and it is marked
        assert claim_types(claim)[0] == "m5.large" and launched.instance_type == "m5.xlarge"
        assert ice.refused == [("m5.large", "us-east-1a"), ("m5.large", "us-east-1b")]

        third_rs = replica_set("web-c", 1, "1500m")
        third_rs["spec"]["template"]["spec"]["nodeSelector"] = {labels.ZONE_LABEL: "us-east-1a"}
        third_rs["spec"]["template"]["spec"]["affinity"] = {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{
                "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web-a"]}]},
                "topologyKey": labels.HOSTNAME_LABEL}]}}
        await asyncio.to_thread(sim_ec2.load_objects, [third_rs])
        refs = await wait_for(lambda: pending(stack, "web-c"), what="the web-c pod pending")
        third = await provision(stack, refs, FAST)
        assert third.outcome == ProvisioningPhase.SUCCEEDED, third.message
        (launched,) = third.launched
        (claim,) = [c for c in stack.node_claims() if c["metadata"]["name"] == launched.node_claim]
        assert claim_types(claim) == ["m5.xlarge"]  # the plan avoids the marked offering of 1a
        assert ice.refused == [("m5.large", "us-east-1a"), ("m5.large", "us-east-1b")]  # EC2 not asked again
        assert marked("InsufficientInstanceCapacity") == before + 2
        assert ice_answers() == before_ice + 2  # each refusal counted once, and none retried by the gateway
