"""Validations are counted by typed verdict (nodeflow_disruption_validations_total), never by message text.

Real parts: the simulator over HTTP and the Temporal dev server (visibility), the activity in Temporal's
ActivityEnvironment on its own task queue.
"""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime
from typing import Any

from support.disruption_fakes import command
from support.sim_objects import node
from temporalio.client import Client
from temporalio.testing import ActivityEnvironment

from activities.planning_runner import PlanningActivities
from api import labels
from api.timestamps import format_seconds
from contracts.disruption import ValidateInput
from gateways.kube import KubeClient
from planning.disruption.validation import Mismatch, Verdict
from telemetry import metrics

METHOD = "SingleNodeConsolidation"


def _count(result: Verdict) -> float:
    return metrics.REGISTRY.get_sample_value("nodeflow_disruption_validations_total",
                                             {"method": METHOD, "result": result.value}) or 0.0


def _decisions(decision: str) -> float:
    """karpenter_voluntary_disruption_decisions_total of this test's commands: Karpenter counts one once validated."""
    return metrics.REGISTRY.get_sample_value("karpenter_voluntary_disruption_decisions_total", {
        "decision": decision, "reason": "underutilized", "consolidation_type": "single"}) or 0.0


def test_every_mismatch_has_a_verdict() -> None:
    assert {Verdict.of(m) for m in Mismatch} <= set(Verdict) and Verdict.VALID not in {Verdict.of(m) for m in Mismatch}


async def test_a_gone_and_an_in_flight_candidate_count_under_their_own_result(sim: Any, k8s: Any,
                                                                           temporal_client: Client) -> None:
    taint = [{**labels.DISRUPTED_TAINT, "timeAdded": format_seconds(datetime.now(UTC))}]
    sim.load_objects([node("vv-busy", taints=taint, uid="uid-busy")])
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, task_queue=f"verdicts-{uuid.uuid4().hex[:8]}")
    acts = PlanningActivities(KubeClient(k8s), temporal_client)
    before = {v: _count(v) for v in (Verdict.CANDIDATE_GONE, Verdict.CANDIDATE_IN_FLIGHT)}
    decided = _decisions("replace")

    gone = command(n=1, method=METHOD)
    gone.nodes[0].name = "vv-gone"
    verdict = await env.run(acts.validate_command, ValidateInput(command=gone, at=datetime.now(UTC),
                                                                 own_workflow_id="disrupt-vv-gone"))
    assert not verdict.valid and verdict.reason == "candidate vv-gone is gone"

    busy = command(n=1, method=METHOD)
    busy.nodes[0].name, busy.nodes[0].uid = "vv-busy", "uid-busy"
    verdict = await env.run(acts.validate_command, ValidateInput(command=busy, at=datetime.now(UTC),
                                                                 own_workflow_id="disrupt-vv-busy"))
    assert not verdict.valid and "already being disrupted" in verdict.reason
    assert _count(Verdict.CANDIDATE_GONE) == before[Verdict.CANDIDATE_GONE] + 1
    assert _count(Verdict.CANDIDATE_IN_FLIGHT) == before[Verdict.CANDIDATE_IN_FLIGHT] + 1
    assert _decisions("replace") == decided  # a command thrown away at validation is no decision of Karpenter's


async def test_a_replacement_no_longer_needed_comes_back_as_the_delete(sim: Any, k8s: Any,
                                                                      temporal_client: Client) -> None:
    """A command planned as a replace whose candidate's pods now fit on the other node: valid, counted as
    `valid_without_replacement`, and handed back as the delete of the same candidate with its pods placed on x."""
    from tests.planning.planning_factory import node_and_claim, nodepool, pod

    objs = [nodepool(), *node_and_claim("vr-x", "m5.2xlarge"), pod("vr-big", "vr-x", cpu="4", memory="1Gi"),
            *node_and_claim("vr-a", "m5.2xlarge"), pod("vr-wa", "vr-a", cpu="3", memory="1Gi")]
    sim.load_objects(objs)
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, task_queue=f"verdicts-{uuid.uuid4().hex[:8]}")
    acts = PlanningActivities(KubeClient(k8s), temporal_client)
    before = _count(Verdict.REPLACEMENT_NOT_NEEDED)
    decided = _decisions("replace"), _decisions("delete")

    ours = command(n=1, method=METHOD)
    a = next(o for o in objs if o["kind"] == "Node" and o["metadata"]["name"] == "vr-a")
    ours.nodes[0].name, ours.nodes[0].uid = "vr-a", a["metadata"]["uid"]
    ours.placements = {"": ["default/vr-wa"]}
    verdict = await env.run(acts.validate_command, ValidateInput(command=ours, at=datetime.now(UTC),
                                                                 own_workflow_id="disrupt-vr-a"))
    assert verdict.valid and verdict.reason == Mismatch.REPLACEMENT_NOT_NEEDED.value
    assert verdict.command is not None
    assert verdict.command.replacements == [] and verdict.command.decision == "delete"
    assert [n.name for n in verdict.command.nodes] == ["vr-a"]
    assert verdict.command.placements == {"vr-x": ["default/vr-wa"]} and verdict.command.pods == 1
    assert _count(Verdict.REPLACEMENT_NOT_NEEDED) == before + 1
    assert (_decisions("replace"), _decisions("delete")) == (decided[0], decided[1] + 1)  # counted as carried out
