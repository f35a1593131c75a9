"""The NodeClassWorkflow's activity sets each NodeClaim's Drifted condition from its resolved EC2NodeClass, as
Karpenter's drift controller does (moto + simulator): AMIDrift, SubnetDrift, SecurityGroupDrift, nothing for a
current claim, a Drifted condition of another reason left alone, and the condition cleared once the claim is
current again."""

from __future__ import annotations

from typing import Any

from support.nodeclass_world import AwsWorld, create, node_class, node_pool

from activities.nodeclass import NodeClassActivities
from activities.nodeclass_drift import drifted_change
from api.ec2nodeclass import launch_annotations, load_ec2nodeclass
from contracts.nodeclass import NodeClassInput
from gateways.kube import KubeClient
from planning.lifecycle.nodeclass_drift import NodeClassDriftReason


def _spec(world: AwsWorld) -> dict[str, Any]:
    return {"amiFamily": "AL2023", "amiSelectorTerms": [{"tags": {"team": world.tag}}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": world.tag}}], "role": world.role}


def _claim(kube: KubeClient, world: AwsWorld, name: str, image: str, subnet: str, groups: list[str],
           extra_conditions: list[dict[str, Any]] = ()) -> None:
    nc = load_ec2nodeclass(kube.get_node_class("nodes") or {})
    kube.custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", {
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "web", "kubernetes.io/arch": "amd64"},
                     "annotations": launch_annotations(nc, subnet, groups)},
        "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "nodes"},
                 "requirements": []}})
    conditions = [{"type": "Launched", "status": "True", "reason": "Launched",
                   "lastTransitionTime": "2026-11-22T18:00:00Z"}, *extra_conditions]
    kube.patch_node_claim_status(name, {"status": {"imageID": image, "conditions": conditions}})


def _drifted(kube: KubeClient) -> dict[str, dict[str, Any] | None]:
    out = {}
    for c in kube.list_node_claims():
        conds = (c.get("status") or {}).get("conditions") or []
        out[c["metadata"]["name"]] = next((x for x in conds if x["type"] == "Drifted"), None)
    return out


def test_the_resolution_sets_and_clears_drifted_on_the_claims(kube: KubeClient, world: AwsWorld) -> None:
    create(kube, node_class("nodes", _spec(world)))
    create(kube, node_pool("web", "nodes"))
    acts = NodeClassActivities(kube, world.ec2, world.ssm, world.iam, cluster_name="demo")
    acts.reconcile_all(NodeClassInput())
    current, old = world.images["amd64-b"], world.images["amd64-a"]
    tagged, big = [world.groups["tagged"]], world.subnets["big-a"]
    _claim(kube, world, "current", current, big, tagged)
    _claim(kube, world, "old-image", old, big, tagged)
    _claim(kube, world, "gone-subnet", current, world.subnets["untagged"], tagged)
    _claim(kube, world, "extra-group", current, big, [*tagged, world.groups["named"]])
    pool_drift = {"type": "Drifted", "status": "True", "reason": "NodePoolDrifted",
                  "lastTransitionTime": "2026-11-22T18:30:00Z"}
    _claim(kube, world, "pool-drifted", current, big, tagged, [pool_drift])

    result = acts.reconcile_all(NodeClassInput())
    seen = _drifted(kube)
    assert {k: (v or {}).get("reason") for k, v in seen.items()} == {
        "current": None, "old-image": "AMIDrift", "gone-subnet": "SubnetDrift",
        "extra-group": "SecurityGroupDrift", "pool-drifted": "NodePoolDrifted"}
    assert seen["old-image"]["status"] == "True" and seen["old-image"]["lastTransitionTime"]
    assert result.drifted == {"AMIDrift": 1, "SubnetDrift": 1, "SecurityGroupDrift": 1}

    # The next run changes nothing (same transition time); a claim current again is cleared.
    kube.patch_node_claim_status("old-image", {"status": {"imageID": current}})
    acts.reconcile_all(NodeClassInput())
    after = _drifted(kube)
    assert after["old-image"] is None
    assert after["gone-subnet"]["lastTransitionTime"] == seen["gone-subnet"]["lastTransitionTime"]
    assert after["pool-drifted"] == pool_drift  # not ours to clear


def test_drifted_change_keeps_the_transition_time_when_only_the_reason_changes() -> None:
    from datetime import UTC, datetime

    obj = {"status": {"conditions": [{"type": "Drifted", "status": "True", "reason": "SubnetDrift",
                                      "lastTransitionTime": "2026-11-22T18:00:00Z"}]}}
    body = drifted_change(NodeClassDriftReason.AMI, datetime(2026, 11, 23, tzinfo=UTC))(obj)
    assert body == {"status": {"conditions": [{"type": "Drifted", "status": "True", "reason": "AMIDrift",
                                               "message": "AMIDrift",
                                               "lastTransitionTime": "2026-11-22T18:00:00Z"}]}}
    assert drifted_change(NodeClassDriftReason.SUBNET, datetime.now(UTC))(obj) is None
