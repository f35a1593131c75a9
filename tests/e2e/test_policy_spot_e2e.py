"""Spot fallback and return end to end (dev server + simulator + moto + the real worker's wiring; docs/semantics.md
§15.5): with spot m5.large out of capacity the pool's pod launches on-demand and the NodeClaim records the fallback;
once spot is back and `spot.returnAfter` has passed, `nodeflow plan` shows the SpotReturn and the planner replaces
the node with spot."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from support.disruption_stack import disruption_stack, fresh, replica_set, wait_for
from support.provisioning_batch import pending, provision

from api import labels
from api.policy_controls import SPOT_FALLBACK_ANNOTATION
from api.timestamps import parse_time
from bench.clusters import node_pool
from contracts.disruption import DisruptionPhase
from contracts.provisioning import ProvisioningPhase, ProvisioningSettings
from simulator.ec2 import IceInjector
from starter.cli import run
from telemetry.metrics import REGISTRY

pytestmark = [pytest.mark.e2e]
FAST = ProvisioningSettings(ready_timeout_seconds=30, ready_poll_seconds=1, ice_backoff_seconds=1, ice_attempts=1)
REQS = [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["spot", "on-demand"]},
        {"key": labels.ARCH_LABEL, "operator": "In", "values": ["amd64"]},
        {"key": labels.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large"]}]
RETURN_AFTER = timedelta(seconds=4)  # past the 3 s the refusal is remembered (offerings ttl below)
POLICY = {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": "spot-back"},
          "spec": {"nodePools": ["default"], "spot": {"returnAfter": "4s", "maxOnDemandFraction": "100%"}}}
QUICK_DRAIN = {"min_drain_seconds": 0.5}  # Karpenter's 5 s MinDrainTime (docs/semantics.md §9.5), shortened


def fallbacks() -> float:
    return REGISTRY.get_sample_value("nodeflow_spot_fallbacks_total", {"nodepool": "default"}) or 0.0


def live_nodes(stack: Any) -> list[dict[str, Any]]:
    return [n for n in stack.nodes() if not n["metadata"].get("deletionTimestamp")]


async def test_spot_falls_back_to_on_demand_under_ice_and_returns(temporal_client, sim_ec2, moto_endpoint,
                                                                   capsys) -> None:
    sim_ec2.load_objects(fresh([node_pool("default", requirements=REQS, consolidate_after="Never"),
                                replica_set("web", 1, "1500m"), POLICY]))
    before = fallbacks()
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=QUICK_DRAIN) as stack:
        stack.deps.offerings.ttl_seconds = 3  # EC2's refusals are remembered 3 s here, not 3 min
        ice = IceInjector().install(stack.ec2)
        ice.exhaust_spot("m5.large")
        refs = await wait_for(lambda: pending(stack, "web"), what="the web pod pending")

        first = await provision(stack, refs, FAST)  # spot is planned and refused in every zone
        assert first.outcome == ProvisioningPhase.FAILED and first.no_capacity == ["default"], first.message
        second = await provision(stack, refs, FAST)  # planned on what EC2 refused: on-demand
        assert second.outcome == ProvisioningPhase.SUCCEEDED, second.message
        (launched,) = second.launched
        assert launched.capacity_type == "on-demand"
        (claim,) = [c for c in stack.node_claims() if c["metadata"]["name"] == launched.node_claim]
        since = parse_time(claim["metadata"]["annotations"][SPOT_FALLBACK_ANNOTATION])
        assert since is not None and fallbacks() == before + 1
        assert any(e["reason"] == "SpotFallback" and e["involvedObject"]["name"] == launched.node_claim
                   for e in stack.events())

        ice.restore()
        await wait_for(lambda: not stack.deps.offerings.marked() and datetime.now(UTC) > since + RETURN_AFTER,
                       timeout=30, what="spot offered again and returnAfter passed")
        assert run(["plan", "--kubeconfig", sim_ec2.kubeconfig_path, "-o", "json"]) == 0
        (cmd,) = json.loads(capsys.readouterr().out)["commands"]
        assert (cmd["method"], cmd["reason"]) == ("SpotReturn", "SpotFallback")
        assert [r["capacityType"] for r in cmd["replacements"]] == ["spot"]

        result = await stack.planner_pass()
        (started,) = result.started
        outcome = await stack.outcome(started, timeout=60)
        assert outcome.outcome == DisruptionPhase.SUCCEEDED, (outcome.message, await stack.failures(started))
        nodes = await wait_for(lambda: [n for n in live_nodes(stack) if n["metadata"]["labels"].get(
            labels.CAPACITY_TYPE_LABEL) == "spot"], what="a spot node")
        assert [n["metadata"]["labels"][labels.CAPACITY_TYPE_LABEL] for n in live_nodes(stack)] == ["spot"]
        assert nodes[0]["metadata"]["labels"][labels.INSTANCE_TYPE_LABEL] == "m5.large"


async def test_at_max_on_demand_fraction_the_pod_stays_pending_and_says_why(temporal_client, sim_ec2,
                                                                            moto_endpoint) -> None:
    capped = {**POLICY, "spec": {"nodePools": ["default"], "spot": {"maxOnDemandFraction": "0%"}}}
    sim_ec2.load_objects(fresh([node_pool("default", requirements=REQS, consolidate_after="Never"),
                                replica_set("capped", 1, "1500m"), capped]))
    before = REGISTRY.get_sample_value("nodeflow_spot_fallbacks_capped_total", {"nodepool": "default"}) or 0.0
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint) as stack:
        ice = IceInjector().install(stack.ec2)
        ice.exhaust_spot("m5.large")
        refs = await wait_for(lambda: pending(stack, "capped"), what="the pod pending")
        first = await provision(stack, refs, FAST)
        assert first.outcome == ProvisioningPhase.FAILED, first.message
        second = await provision(stack, refs, FAST)  # on-demand would be the fallback: 1 of 1 nodes is above 0%
        assert second.launched == [] and "1 no NodePool serves" in second.message, second.message
        # the first batch's refused spot claim is deleted as that batch fails; under load it may still be going
        await wait_for(lambda: stack.node_claims() == [], timeout=30, what="the refused spot claim gone")
        assert pending(stack, "capped") == refs
        (name,) = [r.key.split("/")[1] for r in refs]
        events = await wait_for(lambda: [e for e in stack.events() if e["involvedObject"]["name"] == name
                                         and e["reason"] == "FailedScheduling"], what="FailedScheduling on the pod")
        assert any("spot.maxOnDemandFraction 0%" in e["message"] for e in events), [e["message"] for e in events]
        after = REGISTRY.get_sample_value("nodeflow_spot_fallbacks_capped_total", {"nodepool": "default"})
        assert after == before + 1


async def test_zone_balance_spreads_one_batch_over_the_zones(temporal_client, sim_ec2, moto_endpoint) -> None:
    on_demand = [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]}, *REQS[1:]]
    balanced = {**POLICY, "spec": {"nodePools": ["default"], "provisioning": {"zoneBalance": 1}}}
    sim_ec2.load_objects(fresh([node_pool("default", requirements=on_demand, consolidate_after="Never"),
                                replica_set("wide", 3, "1500m"), balanced]))  # one pod per m5.large
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint) as stack:
        refs = await wait_for(lambda: len(pending(stack, "wide")) == 3 and pending(stack, "wide"),
                              what="three pods pending")
        result = await provision(stack, refs, FAST)
        assert result.outcome == ProvisioningPhase.SUCCEEDED, result.message
        # the same price everywhere: without zoneBalance all three would take the first zone
        assert sorted(r.zone for r in result.launched) == ["us-east-1a", "us-east-1b", "us-east-1c"]
