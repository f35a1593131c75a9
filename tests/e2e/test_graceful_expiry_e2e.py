"""Soft-then-hard expiration end to end (dev server + simulator + the real worker): a node past its
DisruptionPolicy's gracefulExpireAfter but not its NodePool's expireAfter is disrupted like drift, as a
DisruptionWorkflow with method GracefulExpiration and reason Expiring (validated, tainted, terminated)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from support.disruption_stack import disruption_stack, fresh

from api import labels
from bench.clusters import node_objects, node_pool
from contracts.disruption import DisruptionPhase

pytestmark = pytest.mark.e2e

POLICY = {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": "rotate"},
          "spec": {"nodePools": ["default"], "expiration": {"gracefulExpireAfter": "600h"}}}


async def test_a_node_past_graceful_expiry_is_replaced_with_reason_expiring(temporal_client, sim_ec2,
                                                                            moto_endpoint) -> None:
    objs = fresh([node_pool("default", budgets=[{"nodes": "1"}], consolidate_after="Never"),
                  *node_objects("aged-0", "m5.large"), *node_objects("young-0", "m5.large"), POLICY])
    aged = (datetime.now(UTC) - timedelta(hours=650)).strftime("%Y-%m-%dT%H:%M:%SZ")
    for o in objs:
        if o["kind"] in ("Node", "NodeClaim") and o["metadata"]["name"] in ("aged-0", "aged-0-claim"):
            o["metadata"]["creationTimestamp"] = aged
    sim_ec2.load_objects(objs)
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint) as stack:
        result = await stack.planner_pass()
        assert len(result.started) == 1, result
        handle = stack.client.get_workflow_handle(result.started[0])
        outcome = await stack.outcome(result.started[0], timeout=60)
        desc = await handle.describe()  # after it ran: its first task upserts the search attributes
        assert outcome.outcome == DisruptionPhase.SUCCEEDED, outcome.message
        assert "Expiring" in outcome.message
        assert desc.search_attributes.get("NodeflowReason") == ["Expiring"]
        names = {n["metadata"]["name"] for n in stack.nodes()}
        assert "aged-0" not in names and "young-0" in names
        events = {(e["involvedObject"]["name"], e["reason"], e["message"]) for e in stack.events()}
        assert ("aged-0", "DisruptionTerminating", "Disrupting Node: Expiring") in events
        assert labels.REASON_EXPIRED not in outcome.message
