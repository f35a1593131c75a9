"""A DisruptionPolicy's calendar end to end (dev server + simulator + the real worker): while today is excluded, a
live planner pass starts no drift, the NodePool gets a DisruptionBlocked Event and `nodeflow plan --kubeconfig` says
why; once the policy is gone the next pass starts the drift."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from e2e.termination_helpers import QUICK_WORKER
from kubernetes import client as k8s
from support.disruption_stack import disruption_stack, fresh

from api import labels
from bench.clusters import node_objects, node_pool
from contracts.disruption import DisruptionPhase
from starter.cli import run

pytestmark = pytest.mark.e2e


def _policy() -> dict:
    today = datetime.now(UTC).date()
    return {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": "change-freeze"},
            "spec": {"nodePools": ["default"], "calendar": {"timeZone": "UTC", "exclusions": [
                {"from": (today - timedelta(days=1)).isoformat(), "to": (today + timedelta(days=1)).isoformat()}]}}}


async def test_calendar_exclusion_blocks_a_live_drift_and_the_plan_says_why(temporal_client, sim_ec2, moto_endpoint,
                                                                            capsys) -> None:
    objs = [node_pool("default", budgets=[{"nodes": "1"}], consolidate_after="Never")]
    objs += node_objects("old-0", "m5.large", annotations={labels.TEMPLATE_HASH_ANNOTATION: "stale-template"})
    objs.append(_policy())  # old-0 is empty: its drift is a plain delete, quick to carry out once allowed
    sim_ec2.load_objects(fresh(objs))
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, worker=QUICK_WORKER) as stack:
        result = await stack.planner_pass()
        assert result.started == [] and result.blocked == 1
        events = [(e["involvedObject"]["kind"], e["reason"], e["message"]) for e in stack.events()]
        assert any(kind == "NodePool" and reason == "DisruptionBlocked" and message.startswith("calendar exclusion")
                   and "(DisruptionPolicy change-freeze)" in message for kind, reason, message in events), events

        assert run(["plan", "--kubeconfig", sim_ec2.kubeconfig_path, "-o", "json"]) == 0
        plan = json.loads(capsys.readouterr().out)
        assert plan["commands"] == []
        (blocked,) = plan["blocked"]
        assert blocked["node"] == "old-0" and blocked["reason"].startswith("calendar exclusion ")
        assert blocked["reason"].endswith("(DisruptionPolicy change-freeze)")
        assert plan["disruptionPolicies"][0]["policy"] == "change-freeze"

        k8s.CustomObjectsApi(stack.api).delete_cluster_custom_object("nodeflow.dev", "v1alpha1",
                                                                     "disruptionpolicies", "change-freeze")
        result = await stack.planner_pass()
        assert len(result.started) == 1
        outcome = await stack.outcome(result.started[0], timeout=60)
        assert outcome.outcome == DisruptionPhase.SUCCEEDED, outcome.message
        assert not any(n["metadata"]["name"] == "old-0" for n in stack.nodes())
