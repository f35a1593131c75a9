"""Expiry jitter end to end (docs/semantics.md §15.12): two nodes launched together, 54 minutes ago, in a
pool whose NodePool expires nodes after 1h. Without jitter neither has expired. With `expiration.jitter: 20%` each
expires earlier by 12 min x a share fixed by its NodeClaim's name: the live planner expires the node whose share
has come (more than half of the 12 minutes) and leaves the other, and does the same on every pass."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from support.disruption_stack import disruption_stack

from bench.clusters import node_objects, node_pool
from planning.policies.expiry_jitter import node_share

pytestmark = pytest.mark.e2e
POLICY = {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": "spread"},
          "spec": {"nodePools": ["default"], "expiration": {"jitter": "20%"}}}


def _names(tag: str) -> tuple[str, str]:
    """A node whose share is well past half (expires 54 min in) and one well before it (does not)."""
    early = late = None
    for i in range(200):
        name = f"j{tag}-{i}"
        share = node_share(f"{name}-claim")
        early = early or (name if share > 0.7 else None)
        late = late or (name if share < 0.3 else None)
        if early and late:
            return early, late
    raise AssertionError("no names found")


def _cluster(tag: str, created: datetime, jitter: bool) -> tuple[list[dict[str, Any]], dict[str, str]]:
    pool = node_pool("default", consolidate_after="Never")
    pool["spec"]["template"]["spec"]["expireAfter"] = "1h"
    objs, uids = [pool], {}
    stamp = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    for name in _names(tag):
        for obj in node_objects(name, "m5.large"):
            obj["metadata"]["creationTimestamp"] = stamp
            if obj["kind"] == "NodeClaim":  # Karpenter copies the pool's expireAfter into each claim at launch
                obj["spec"]["expireAfter"] = "1h"
            if obj["kind"] == "Node":
                obj["metadata"]["uid"] = uids[name] = f"uid-{name}-{uuid.uuid4().hex[:8]}"
            objs.append(obj)
    return objs + ([POLICY] if jitter else []), uids


@pytest.mark.parametrize("jitter", [False, True], ids=["without", "with-jitter"])
async def test_jitter_expires_only_the_node_whose_share_has_come(temporal_client: Any, sim_ec2: Any,
                                                                 moto_endpoint: str, jitter: bool) -> None:
    tag = uuid.uuid4().hex[:6]
    early, late = _names(tag)
    objs, uids = _cluster(tag, datetime.now(UTC) - timedelta(minutes=54), jitter)
    sim_ec2.load_objects(objs)
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint) as stack:
        first = await stack.planner_pass()
        second = await stack.planner_pass()  # the same instant on every pass: nothing new, nothing undone
    expected = [f"terminate-{uids[early]}"] if jitter else []
    assert first.terminations == expected, (first, node_share(f"{early}-claim"), node_share(f"{late}-claim"))
    assert f"terminate-{uids[late]}" not in second.terminations
