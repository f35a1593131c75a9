"""Capacity reservations resolved by the node-class activity against the stand-in EC2 (devstack/moto_reservations.py)
and the simulator: terms by tags resolve into `status.capacityReservations` with EC2's count, a term that matches
nothing leaves the list empty without failing the class, a capacity block within 40 minutes of its end has
its NodeClaims deleted with a `CapacityBlockExpiring` Event, and `CapacityReservationsReady` is True once every
term is answered, left as it was when EC2 refuses (docs/semantics.md §16.4)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from support.nodeclass_world import AwsWorld, create, events, node_class

from activities.nodeclass import NodeClassActivities
from api.capacity_reservations import RESERVATION_ID_LABEL
from contracts.nodeclass import NodeClassInput
from gateways.kube import KubeClient

END = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=2)


def _reserve(world: AwsWorld, itype: str, block: bool = False) -> str:
    tags = [{"Key": "team", "Value": world.tag}]
    if block:
        tags.append({"Key": "nodeflow.dev/reservation-type", "Value": "capacity-block"})
    return str(world.ec2.create_capacity_reservation(
        InstanceType=itype, InstancePlatform="Linux/UNIX", AvailabilityZone="us-east-1b", InstanceCount=3,
        EndDate=END, EndDateType="limited", InstanceMatchCriteria="targeted",
        TagSpecifications=[{"ResourceType": "capacity-reservation", "Tags": tags}],
    )["CapacityReservation"]["CapacityReservationId"])


def _spec(world: AwsWorld, terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {"amiFamily": "AL2023", "amiSelectorTerms": [{"id": world.images["amd64-a"]}],
            "subnetSelectorTerms": [{"id": world.subnets["b"]}],
            "securityGroupSelectorTerms": [{"id": world.groups["named"]}], "instanceProfile": "given-profile",
            "capacityReservationSelectorTerms": terms}


def _resolve(kube: KubeClient, world: AwsWorld, spec: dict[str, Any], at: datetime) -> dict[str, Any]:
    if kube.get_node_class("default") is None:
        create(kube, node_class("default", spec))
    acts = NodeClassActivities(kube, world.ec2, world.ssm, world.iam, cluster_name="demo", clock=lambda: at)
    (outcome,) = acts.reconcile_all(NodeClassInput(names=["default"])).classes
    assert outcome.ready, outcome.message
    obj = kube.get_node_class("default")
    assert obj is not None
    return obj


def test_tag_terms_resolve_every_matching_reservation_with_ec2s_count(kube: KubeClient, world: AwsWorld) -> None:
    default = _reserve(world, "m5.large")
    block = _reserve(world, "p5.48xlarge", block=True)
    obj = _resolve(kube, world, _spec(world, [{"tags": {"team": world.tag}}, {"id": default}]), datetime.now(UTC))
    got = {r["id"]: r for r in obj["status"]["capacityReservations"]}
    assert sorted(got) == sorted([default, block])
    assert (got[default]["instanceType"], got[default]["availabilityZone"], got[default]["reservationType"],
            got[default]["state"], got[default]["availableInstanceCount"]) == (
        "m5.large", "us-east-1b", "default", "active", 3)
    assert got[block]["reservationType"] == "capacity-block" and got[block]["state"] == "active"
    assert datetime.fromisoformat(got[block]["endTime"].replace("Z", "+00:00")) == END


def test_a_term_that_matches_nothing_leaves_the_list_empty(kube: KubeClient, world: AwsWorld) -> None:
    obj = _resolve(kube, world, _spec(world, [{"tags": {"team": "nobody-" + world.tag}},
                                              {"id": "cr-0000000000000dead"}]), datetime.now(UTC))
    assert obj["status"]["capacityReservations"] == []


def test_an_expiring_capacity_block_deletes_its_nodeclaims(kube: KubeClient, world: AwsWorld) -> None:
    block = _reserve(world, "p5.48xlarge", block=True)
    other = _reserve(world, "m5.large")
    for name, rid in (("in-block", block), ("in-default", other)):
        kube.create_node_claim({"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {
            "name": name, "labels": {RESERVATION_ID_LABEL: rid, "karpenter.sh/nodepool": "default"}},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                     "requirements": []}})
    spec = _spec(world, [{"tags": {"team": world.tag}}])
    early = _resolve(kube, world, spec, END - timedelta(minutes=41))
    assert {r["state"] for r in early["status"]["capacityReservations"]} == {"active"}
    assert {c["metadata"]["name"] for c in kube.list_node_claims()} >= {"in-block", "in-default"}
    late = _resolve(kube, world, spec, END - timedelta(minutes=39))
    states = {r["id"]: r["state"] for r in late["status"]["capacityReservations"]}
    assert states == {block: "expiring", other: "active"}
    left = {c["metadata"]["name"]: c for c in kube.list_node_claims()}
    assert "in-block" not in left or left["in-block"]["metadata"].get("deletionTimestamp")
    assert "in-default" in left and not left["in-default"]["metadata"].get("deletionTimestamp")
    (event,) = [e for e in events(kube, "NodeClaim", "in-block") if e["reason"] == "CapacityBlockExpiring"]
    assert event["type"] == "Warning" and block in event["message"]


def _conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in obj["status"]["conditions"]}


class _Refused:
    """The part of a botocore HTTP response the client reads when a before-call hook answers instead of EC2."""

    status_code = 400
    headers: dict[str, str] = {}


def _refuse_reservations(world: AwsWorld) -> None:
    """EC2 answers DescribeCapacityReservations with an error (botocore before-call hook, as simulator/ice.py)."""
    def refuse(**_: Any) -> tuple[Any, dict[str, Any]]:
        return _Refused(), {"Error": {"Code": "InternalError", "Message": "An internal error has occurred"},
                               "ResponseMetadata": {"HTTPStatusCode": 400}}
    world.ec2.meta.events.register("before-call.ec2.DescribeCapacityReservations", refuse)


def test_capacity_reservations_ready_once_every_term_is_answered(kube: KubeClient, world: AwsWorld) -> None:
    _reserve(world, "m5.large")
    first_at = datetime.now(UTC).replace(microsecond=0)
    obj = _resolve(kube, world, _spec(world, [{"tags": {"team": world.tag}}]), first_at)
    crr = _conditions(obj)["CapacityReservationsReady"]
    assert (crr["status"], crr["reason"]) == ("True", "CapacityReservationsReady")
    assert [c["type"] for c in obj["status"]["conditions"]][-2:] == ["CapacityReservationsReady", "Ready"]
    again = _resolve(kube, world, _spec(world, [{"tags": {"team": world.tag}}]), first_at + timedelta(minutes=5))
    assert _conditions(again)["CapacityReservationsReady"]["lastTransitionTime"] == crr["lastTransitionTime"]
    # EC2 refuses the reservations: the class's status is not written (Karpenter leaves the condition as it was)
    _refuse_reservations(world)
    acts = NodeClassActivities(kube, world.ec2, world.ssm, world.iam, cluster_name="demo",
                               clock=lambda: first_at + timedelta(minutes=10))
    with pytest.raises(Exception, match="InternalError"):
        acts.reconcile_all(NodeClassInput(names=["default"]))
    after = kube.get_node_class("default") or {}
    assert _conditions(after)["CapacityReservationsReady"] == _conditions(again)["CapacityReservationsReady"]
    assert after["status"]["capacityReservations"] == again["status"]["capacityReservations"]


def test_a_class_without_terms_is_capacity_reservations_ready_too(kube: KubeClient, world: AwsWorld) -> None:
    spec = {k: v for k, v in _spec(world, []).items() if k != "capacityReservationSelectorTerms"}
    obj = _resolve(kube, world, spec, datetime.now(UTC))
    assert _conditions(obj)["CapacityReservationsReady"]["status"] == "True"
    assert obj["status"].get("capacityReservations") in (None, [])
