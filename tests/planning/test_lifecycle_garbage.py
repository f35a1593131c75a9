"""planning/lifecycle/garbage.py against docs/karpenter-reference.md §8: an instance no claim
accounts for is an orphan once 30 s old; a registered claim whose instance is gone is deleted unless its Node is
Ready (unregistered claims are left to liveness)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from api.labels import NODECLAIM_TAG, NODECLAIM_UID_TAG
from planning.lifecycle.garbage import INSTANCE_GRACE, claims_without_instance, orphan_instances

NOW = datetime(2026, 11, 27, 4, 30, 0, tzinfo=UTC)


def claim(name: str = "default-abc", uid: str = "uid-1", *, iid: str | None = None, registered: bool = True,
          node: str = "", deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": uid, "creationTimestamp": "2026-11-27T04:00:00Z"}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-27T04:29:00Z"
        meta["finalizers"] = ["karpenter.sh/termination"]
    status: dict[str, Any] = {"conditions": [
        {"type": "Launched", "status": "True", "reason": "Launched", "message": "",
         "lastTransitionTime": "2026-11-27T04:00:10Z"},
        {"type": "Registered", "status": "True" if registered else "Unknown",
         "reason": "Registered" if registered else "NodeNotFound", "message": "",
         "lastTransitionTime": "2026-11-27T04:01:00Z"}]}
    if iid:
        status["providerID"] = f"aws:///us-east-1a/{iid}"
    if node:
        status["nodeName"] = node
    return {"metadata": meta, "status": status}


def instance(iid: str = "i-0aaa", *, age: timedelta = timedelta(minutes=5), state: str = "running",
             tags: dict[str, str] | None = None) -> dict[str, Any]:
    """As boto3's describe_instances returns one: LaunchTime an aware datetime."""
    all_tags = {"karpenter.sh/nodepool": "default", "eks:eks-cluster-name": "c1", **(tags or {})}
    return {"InstanceId": iid, "State": {"Name": state}, "LaunchTime": NOW - age,
            "Placement": {"AvailabilityZone": "us-east-1a"},
            "Tags": [{"Key": k, "Value": v} for k, v in all_tags.items()]}


def ids(instances: list) -> list[str]:
    return [i["InstanceId"] for i in instances]


# --- orphan instances ----------------------------------------------------------------------------------------

def test_grace_is_30_seconds() -> None:
    assert timedelta(seconds=30) == INSTANCE_GRACE


def test_instance_without_claim_older_than_grace_is_orphan() -> None:
    assert ids(orphan_instances([instance(age=timedelta(seconds=31))], [], NOW)) == ["i-0aaa"]


def test_instance_at_the_grace_boundary_is_orphan() -> None:
    assert ids(orphan_instances([instance(age=INSTANCE_GRACE)], [], NOW)) == ["i-0aaa"]


def test_instance_younger_than_grace_is_not_orphan() -> None:
    assert orphan_instances([instance(age=timedelta(seconds=29))], [], NOW) == []


def test_instance_named_by_a_claims_provider_id_is_not_orphan() -> None:
    assert orphan_instances([instance("i-0aaa")], [claim(iid="i-0aaa")], NOW) == []


def test_instance_whose_claim_exists_by_tag_with_matching_uid_is_not_orphan() -> None:
    """The claim's launch record is not written yet (no providerID): its instance is still its own."""
    inst = instance(tags={NODECLAIM_TAG: "default-abc", NODECLAIM_UID_TAG: "uid-1"})
    assert orphan_instances([inst], [claim(registered=False)], NOW) == []


def test_instance_tagged_for_a_claim_by_name_only_is_not_orphan() -> None:
    inst = instance(tags={NODECLAIM_TAG: "default-abc"})
    assert orphan_instances([inst], [claim(registered=False)], NOW) == []


def test_instance_tagged_for_a_recreated_claim_of_the_same_name_is_orphan() -> None:
    inst = instance(tags={NODECLAIM_TAG: "default-abc", NODECLAIM_UID_TAG: "uid-old"})
    assert ids(orphan_instances([inst], [claim(uid="uid-new", registered=False)], NOW)) == ["i-0aaa"]


def test_instance_tagged_for_a_claim_that_is_gone_is_orphan() -> None:
    inst = instance(tags={NODECLAIM_TAG: "default-gone", NODECLAIM_UID_TAG: "uid-9"})
    assert ids(orphan_instances([inst], [claim(iid="i-0bbb")], NOW)) == ["i-0aaa"]


@pytest.mark.parametrize("state", ["shutting-down", "terminated"])
def test_shutting_down_or_terminated_instance_is_never_orphan(state: str) -> None:
    assert orphan_instances([instance(state=state, age=timedelta(hours=1))], [], NOW) == []


@pytest.mark.parametrize("state", ["pending", "running", "stopping", "stopped"])
def test_live_states_can_be_orphans(state: str) -> None:
    assert ids(orphan_instances([instance(state=state)], [], NOW)) == ["i-0aaa"]


def test_only_the_unclaimed_instances_are_returned() -> None:
    insts = [instance("i-0aaa"), instance("i-0bbb"), instance("i-0ccc", age=timedelta(seconds=5)),
             instance("i-0ddd", state="terminated")]
    assert ids(orphan_instances(insts, [claim(iid="i-0aaa")], NOW)) == ["i-0bbb"]


def test_custom_grace() -> None:
    inst = instance(age=timedelta(seconds=45))
    assert orphan_instances([inst], [], NOW, grace=timedelta(minutes=1)) == []


# --- claims without an instance ------------------------------------------------------------------------------

def test_registered_claim_without_live_instance_and_node_not_ready_is_deleted() -> None:
    c = claim(iid="i-0aaa", node="ip-1")
    assert claims_without_instance([c], live_ids=set(), ready_nodes=set()) == [c]


def test_registered_claim_with_live_instance_is_kept() -> None:
    assert claims_without_instance([claim(iid="i-0aaa", node="ip-1")], {"i-0aaa"}, set()) == []


def test_ready_node_keeps_the_claim() -> None:
    assert claims_without_instance([claim(iid="i-0aaa", node="ip-1")], set(), {"ip-1"}) == []


def test_another_ready_node_does_not_keep_the_claim() -> None:
    c = claim(iid="i-0aaa", node="ip-1")
    assert claims_without_instance([c], set(), {"ip-2"}) == [c]


def test_unregistered_claim_is_left_to_liveness() -> None:
    assert claims_without_instance([claim(iid="i-0aaa", registered=False)], set(), set()) == []


def test_deleting_claim_is_kept() -> None:
    assert claims_without_instance([claim(iid="i-0aaa", node="ip-1", deleting=True)], set(), set()) == []


def test_claim_without_provider_id_is_kept() -> None:
    assert claims_without_instance([claim(node="ip-1")], set(), set()) == []
