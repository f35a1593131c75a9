"""A NodeClaim no Node joined counts as capacity on its way only within liveness's TTLs (a claim whose
Node never registered held a pending pod for ever with "nothing to launch: ... 1 launching NodeClaims")."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from planning_factory import AT, node_and_claim, nodepool, pod, snapshot, ts

from api import labels as L
from planning.lifecycle.liveness import LAUNCH_TTL, REGISTRATION_TTL, still_launching
from planning.provisioning.provisioner import decide
from planning.provisioning.spot_sizing import size_interrupted

SPOT_OR_OD = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["spot", "on-demand"]},
              {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]}]


def _claim(name: str, created: datetime, registered: str | None = "Unknown", launched: bool = True) -> dict[str, Any]:
    """A claim the launch recorded (Launched=True at creation) whose Node has not joined."""
    claim = node_and_claim(name, "m5.xlarge", created=created)[1]
    conds = [{"type": "Launched", "status": "True" if launched else "Unknown", "lastTransitionTime": ts(created)}]
    if registered is not None:
        conds.append({"type": "Registered", "status": registered, "lastTransitionTime": ts(created)})
    claim["status"] = {"providerID": f"aws:///us-east-1a/i-{name}", "conditions": conds}
    claim["spec"]["requirements"] = [{"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.xlarge"]}]
    return claim


def _plan(claim: dict[str, Any]) -> Any:
    return decide(snapshot(nodepool(), claim, pod("web-0", None, cpu="1")), at=AT)


def test_a_claim_within_the_registration_ttl_takes_the_pod() -> None:
    decision = _plan(_claim("young", AT - REGISTRATION_TTL + timedelta(seconds=1)))
    assert decision.nominated == {"default/web-0": "<launching:young>"} and decision.launches == []


def test_a_claim_past_the_registration_ttl_is_no_capacity() -> None:
    decision = _plan(_claim("stuck", AT - REGISTRATION_TTL))
    assert decision.nominated == {}
    (launch,) = decision.launches
    assert launch.pods == ["default/web-0"]


def test_the_ttl_runs_from_registered_transition_else_creation() -> None:
    claim = _claim("c", AT - timedelta(hours=1))
    claim["status"]["conditions"][1]["lastTransitionTime"] = ts(AT - timedelta(minutes=1))  # e.g. a hook reset it
    assert still_launching(claim, AT)
    del claim["status"]["conditions"][1]  # no Registered condition: it started Unknown at creation
    assert not still_launching(claim, AT)


def test_a_claim_never_launched_past_the_launch_ttl_is_no_capacity() -> None:
    assert still_launching(_claim("c", AT - LAUNCH_TTL + timedelta(seconds=1), launched=False), AT)
    assert not still_launching(_claim("c", AT - LAUNCH_TTL, launched=False), AT)


def test_registered_or_failed_or_deleting_claims_without_a_node_are_no_capacity() -> None:
    now = AT - timedelta(minutes=1)
    assert not still_launching(_claim("gone", now, registered="True"), AT)  # its Node is gone
    assert not still_launching(_claim("multi", now, registered="False"), AT)  # MultipleNodesFound: final
    deleting = _claim("del", now)
    deleting["metadata"]["deletionTimestamp"] = ts(AT)
    assert not still_launching(deleting, AT)
    for claim in (_claim("gone", now, registered="True"), deleting):
        assert _plan(claim).nominated == {}


def test_spot_sizing_does_not_count_an_expired_claim_as_room() -> None:
    def sized(claim: dict[str, Any]) -> Any:
        doomed = node_and_claim("doomed", "m5.large", capacity_type="spot")
        return size_interrupted(snapshot(nodepool(requirements=SPOT_OR_OD), *doomed, claim,
                                         pod("web-1", "doomed", "1", "1Gi")), "doomed", at=AT)

    assert sized(_claim("fresh", AT)).placed == {"default/web-1": "<launching:fresh>"}
    stale = sized(_claim("stale", AT - REGISTRATION_TTL - timedelta(minutes=1)))
    assert stale.placed == {} and [launch.pods for launch in stale.launches] == [["default/web-1"]]


def test_spot_sizing_never_counts_the_dying_nodes_own_claim_as_room() -> None:
    """The interrupted node's claim has not recorded its Node yet and the Node has no providerID, so no link
    joins them but the Node's owner reference: shown as launching, it must still not take the node's own pods."""
    node, own = node_and_claim("doomed", "m5.2xlarge", capacity_type="spot", created=AT)
    node["spec"].pop("providerID")
    node["metadata"]["ownerReferences"] = [{"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
                                            "name": own["metadata"]["name"], "uid": own["metadata"]["uid"]}]
    own["status"] = {"providerID": "aws:///us-east-1a/i-doomed", "conditions": [
        {"type": "Launched", "status": "True", "lastTransitionTime": ts(AT)}]}
    own["spec"]["requirements"] = [{"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.2xlarge"]}]
    sizing = size_interrupted(snapshot(nodepool(requirements=SPOT_OR_OD), node, own,
                                       pod("web-1", "doomed", "1", "1Gi")), "doomed", at=AT)
    assert sizing.placed == {} and [launch.pods for launch in sizing.launches] == [["default/web-1"]]
