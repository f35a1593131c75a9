"""A planner pass end to end: expired nodes go straight to termination (reason Expired, no budget, no
replacement), while the same pass leaves healthy nodes alone."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from support.disruption_stack import disruption_stack, wait_for

from bench.clusters import node_objects, node_pool
from contracts import search_attributes as sa
from workflows.termination import TerminationWorkflow

pytestmark = pytest.mark.e2e


async def test_expired_nodes_are_terminated_without_budget(temporal_client, sim_ec2, moto_endpoint) -> None:
    now = datetime.now(UTC)
    old = (now - timedelta(hours=721)).strftime("%Y-%m-%dT%H:%M:%SZ")
    young = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    objs = [node_pool("default", budgets=[{"nodes": "0"}], consolidate_after="Never")]
    for name, created in (("expired-a", old), ("expired-b", old), ("young-c", young)):
        for o in node_objects(name, "m5.large"):
            o["metadata"]["creationTimestamp"] = created
            if o["kind"] == "Node":  # unique uids: the session's dev server may hold other tests' workflows
                o["metadata"]["uid"] = f"uid-{name}-{uuid.uuid4().hex[:8]}"
            objs.append(o)
    uids = {o["metadata"]["name"]: o["metadata"]["uid"] for o in objs if o["kind"] == "Node"}
    sim_ec2.load_objects(objs)

    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint) as stack:
        result = await stack.planner_pass()
        assert result.started == []  # budget 0 blocks voluntary disruption, never expiration
        assert sorted(result.terminations) == sorted(f"terminate-{uids[n]}" for n in ("expired-a", "expired-b"))
        blocked = [e for e in stack.events() if e["reason"] == "DisruptionBlocked"
                   and e["involvedObject"] == {"kind": "NodePool", "name": "default", "apiVersion": "karpenter.sh/v1"}]
        assert any("due to blocking budget" in e["message"] for e in blocked)
        for wid in result.terminations:
            handle = temporal_client.get_workflow_handle_for(TerminationWorkflow.run, wid)
            desc = await handle.describe()
            assert desc.typed_search_attributes.get(sa.REASON) == "Expired"
            await handle.result()
        await wait_for(lambda: [n["metadata"]["name"] for n in stack.nodes()] == ["young-c"],
                       what="expired nodes gone")
