"""The NodeClaim conditions the disruption and termination activities write, against the simulator (and moto for
EC2): DisruptionReason, VolumesDetached, InstanceTerminating (planning/lifecycle/disruption_conditions.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from temporalio.testing import ActivityEnvironment

from activities.candidates import CandidateActivities
from activities.cloud import CloudActivities
from activities.kube import KubeActivities
from bench.clusters import node_objects
from contracts.disruption import NodeRef, TaintInput
from contracts.termination import InstanceInput, VolumesInput
from gateways.kube import KubeClient
from planning.lifecycle import disruption_conditions as ncc
from simulator.server import Simulator

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def cond(obj: dict[str, Any] | None, ctype: str) -> dict[str, Any] | None:
    return next((c for c in ((obj or {}).get("status") or {}).get("conditions") or [] if c["type"] == ctype), None)


async def _no_start(_inp: Any, _tq: str) -> str:
    raise AssertionError("not used")


@pytest.fixture
def kube(sim: Simulator) -> KubeClient:
    sim.load_objects(node_objects("n1", "m5.large"))
    return KubeClient(sim.api_client())


def test_changes_are_idempotent() -> None:
    claim: dict[str, Any] = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    patch = ncc.disruption_reason("Drifted", NOW)(claim)
    assert patch is not None
    written = {"status": patch["status"]}
    assert cond(written, "DisruptionReason") == {"type": "DisruptionReason", "status": "True", "reason": "Drifted",
                                                 "message": "Drifted", "lastTransitionTime": "2026-11-27T12:00:00Z"}
    assert cond(written, "Ready") is not None
    assert ncc.disruption_reason("Drifted", NOW + timedelta(hours=1))(written) is None
    assert ncc.no_disruption_reason()(written) == {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert ncc.no_disruption_reason()(claim) is None


def test_volumes_detached_states() -> None:
    waiting = ncc.volumes_detached(False, False, NOW)({})
    assert waiting is not None and waiting["status"]["conditions"][0]["status"] == "Unknown"
    assert waiting["status"]["conditions"][0]["reason"] == "AwaitingVolumeDetachment"
    late = ncc.volumes_detached(False, True, NOW)({"status": waiting["status"]})
    assert late is not None and late["status"]["conditions"][0]["reason"] == "TerminationGracePeriodElapsed"
    done = ncc.volumes_detached(True, False, NOW)({"status": waiting["status"]})
    assert done is not None and done["status"]["conditions"][0]["status"] == "True"


async def test_taint_writes_disruption_reason_and_untaint_clears_it(kube: KubeClient) -> None:
    acts = CandidateActivities(kube, _no_start)
    ref = NodeRef(name="n1", uid="uid-node-n1", node_claim="n1-claim", node_pool="default")
    env = ActivityEnvironment()
    await env.run(acts.taint_candidates, TaintInput(nodes=[ref], reason="Underutilized"))
    c = cond(kube.get_node_claim("n1-claim"), "DisruptionReason")
    assert c is not None and (c["status"], c["reason"]) == ("True", "Underutilized")
    await env.run(acts.untaint_candidates, TaintInput(nodes=[ref], reason="Underutilized"))
    assert cond(kube.get_node_claim("n1-claim"), "DisruptionReason") is None


async def test_a_candidate_without_claim_is_still_tainted(kube: KubeClient) -> None:
    acts = CandidateActivities(kube, _no_start)
    ref = NodeRef(name="n1", uid="uid-node-n1", node_claim="gone-claim")
    assert await ActivityEnvironment().run(acts.taint_candidates, TaintInput(nodes=[ref], reason="Drifted")) == ["n1"]


async def test_wait_volumes_marks_volumes_detached(kube: KubeClient) -> None:
    acts = KubeActivities(kube, volume_poll=0.05)
    res = await ActivityEnvironment().run(acts.wait_volumes, VolumesInput(node_name="n1", node_claim_name="n1-claim"))
    assert res.detached
    c = cond(kube.get_node_claim("n1-claim"), "VolumesDetached")
    assert c is not None and c["status"] == "True"


async def test_terminate_instance_marks_instance_terminating(sim: Simulator, moto_endpoint: str) -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1", endpoint_url=moto_endpoint)
    iid = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1, InstanceType="m5.large",
                            Placement={"AvailabilityZone": "us-east-1a"})["Instances"][0]["InstanceId"]
    claim, node = node_objects("n2", "m5.large")
    sim.load_objects([claim, node])
    kube = KubeClient(sim.api_client())
    acts = CloudActivities(ec2, poll=0.05, kube=kube)
    res = await ActivityEnvironment().run(acts.terminate_instance, InstanceInput(
        provider_id=f"aws:///us-east-1a/{iid}", node_name="n2", node_claim_name="n2-claim"))
    assert res.terminate_called
    c = cond(kube.get_node_claim("n2-claim"), "InstanceTerminating")
    assert c is not None and c["status"] == "True"
    without_kube = CloudActivities(ec2, poll=0.05)  # older wiring: terminates, writes nothing
    assert (await ActivityEnvironment().run(without_kube.terminate_instance, InstanceInput(
        provider_id=f"aws:///us-east-1a/{iid}", node_name="n2", node_claim_name="n2-claim"))).state == "terminated"


def test_nodepool_drift_is_set_then_cleared_and_leaves_class_drift_alone() -> None:
    drifted = ncc.nodepool_drifted("RequirementsDrifted", NOW)({})
    assert drifted is not None
    c = cond({"status": drifted["status"]}, "Drifted")
    assert c is not None and (c["status"], c["reason"]) == ("True", "RequirementsDrifted")
    assert ncc.nodepool_drifted("RequirementsDrifted", NOW)({"status": drifted["status"]}) is None
    assert ncc.nodepool_drifted(None, NOW)({"status": drifted["status"]}) == {"status": {"conditions": []}}
    ami = {"status": {"conditions": [{"type": "Drifted", "status": "True", "reason": "AMIDrift"}]}}
    assert ncc.nodepool_drifted(None, NOW)(ami) is None  # the class's drift: the NodeClassWorkflow's to clear
    over = ncc.nodepool_drifted("NodePoolDrifted", NOW)(ami)  # NodePool drift first, as Karpenter checks it
    assert over is not None and cond({"status": over["status"]}, "Drifted")["reason"] == "NodePoolDrifted"  # type: ignore[index]


def test_class_drift_does_not_overwrite_nodepool_drift() -> None:
    from activities.nodeclass_drift import drifted_change
    from planning.lifecycle.nodeclass_drift import NodeClassDriftReason

    claim = {"status": {"conditions": [{"type": "Drifted", "status": "True", "reason": "NodePoolDrifted"}]}}
    assert drifted_change(NodeClassDriftReason.AMI, NOW)(claim) is None
