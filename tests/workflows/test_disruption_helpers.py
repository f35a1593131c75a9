"""Pure pieces of the disruption activities: taints, NodeClaim construction, offerings, in-flight joins, dedupe."""

from __future__ import annotations

from datetime import UTC, datetime

from kubernetes.client import ApiClient

from activities.events import EventActivities, event_body
from activities.planning_runner import (
    node_index,
    orphaned_taints,
    paused_node_pools,
    tainted_nodes,
)
from activities.provisioning import build_nodeclaim, cheapest_offering, narrowed_requirements, nodeclaim_name
from api import labels
from api.catalog import load_default_catalog
from api.nodepool import load_nodepool
from contracts.disruption import EventSpec, LaunchInput, Replacement
from gateways.kube import KubeClient, with_disrupted_taint, without_disrupted_taint

POOL = {
    "apiVersion": "karpenter.sh/v1", "kind": "NodePool",
    "metadata": {"name": "default", "uid": "pool-uid", "annotations": {labels.PAUSED_ANNOTATION: "true"}},
    "spec": {"template": {
        "metadata": {"labels": {"team": "a"}},
        "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                 "requirements": [{"key": labels.CAPACITY_TYPE_LABEL, "operator": "In",
                                   "values": ["spot", "on-demand"]},
                                  {"key": labels.ARCH_LABEL, "operator": "In", "values": ["amd64"]}],
                 "expireAfter": "720h"}}},
}


def test_disrupted_taint_is_added_once_and_replaces_other_effects() -> None:
    other = {"key": "x", "effect": "NoSchedule"}
    stale = {"key": labels.DISRUPTED_TAINT_KEY, "effect": "NoExecute", "value": "v"}
    out = with_disrupted_taint([other, stale], now=datetime(2026, 1, 1, tzinfo=UTC))
    assert out == [other, {"key": labels.DISRUPTED_TAINT_KEY, "effect": "NoSchedule",
                           "timeAdded": "2026-01-01T00:00:00Z"}]
    assert with_disrupted_taint(out) == out  # an existing taint keeps its time
    assert without_disrupted_taint(out) == [other]


def test_nodeclaim_is_owned_narrowed_and_carries_the_template_hash() -> None:
    rep = Replacement(instance_types=["m5.large", "m5.xlarge"], capacity_type="on-demand", price=0.096,
                      zone="us-east-1b")
    inp = LaunchInput(key="disrupt-u1/run-0", node_pool="default", replacement=rep, reason="Drifted")
    name = nodeclaim_name("default", inp.key)
    assert name == nodeclaim_name("default", inp.key) != nodeclaim_name("default", "disrupt-u1/run-1")
    claim = build_nodeclaim(POOL, name, inp)
    assert claim["metadata"]["ownerReferences"][0] == {
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "name": "default", "uid": "pool-uid",
        "blockOwnerDeletion": True}
    assert claim["metadata"]["labels"] == {"team": "a", labels.NODEPOOL_LABEL: "default"}
    assert claim["metadata"]["annotations"][labels.TEMPLATE_HASH_ANNOTATION] == load_nodepool(POOL).template_hash()
    reqs = {q["key"]: q for q in claim["spec"]["requirements"]}
    assert reqs[labels.INSTANCE_TYPE_LABEL]["values"] == ["m5.large", "m5.xlarge"]
    assert reqs[labels.CAPACITY_TYPE_LABEL]["values"] == ["on-demand"]
    assert reqs[labels.ZONE_LABEL]["values"] == ["us-east-1b"]
    assert reqs[labels.ARCH_LABEL]["values"] == ["amd64"]
    assert claim["spec"]["nodeClassRef"]["name"] == "default" and claim["spec"]["expireAfter"] == "720h"


def test_cheapest_available_offering_of_the_allowed_types() -> None:
    catalog = load_default_catalog()
    rep = Replacement(instance_types=["m5.xlarge", "m5.large"], capacity_type="on-demand")
    itype, off = cheapest_offering(catalog, rep, {"us-east-1a"})
    assert itype == "m5.large" and off.zone == "us-east-1a" and off.capacity_type == "on-demand"
    assert cheapest_offering(catalog, Replacement(instance_types=["no-such"], capacity_type="spot"), None) is None
    assert narrowed_requirements([], rep)[0]["key"] == labels.INSTANCE_TYPE_LABEL


def _node(name: str, uid: str, taints=None, pool="default", pid=None) -> dict:
    return {"kind": "Node", "metadata": {"name": name, "uid": uid, "labels": {labels.NODEPOOL_LABEL: pool}},
            "spec": {"taints": taints or [], "providerID": pid}}


def test_node_index_joins_claims_and_finds_tainted_and_paused() -> None:
    objs = [POOL, _node("a", "ua", pid="aws:///us-east-1a/i-1"),
            _node("b", "ub", taints=[{"key": labels.DISRUPTED_TAINT_KEY, "effect": "NoSchedule"}]),
            {"kind": "NodeClaim", "metadata": {"name": "claim-a"}, "status": {"providerID": "aws:///us-east-1a/i-1"}},
            {"kind": "NodeClaim", "metadata": {"name": "claim-b"}, "status": {"nodeName": "b"}}]
    idx = node_index(objs)
    assert idx["a"].node_claim == "claim-a" and idx["b"].node_claim == "claim-b" and idx["a"].uid == "ua"
    assert idx.named_by_uid({"ub", "nope"}) == {"b"} and len(idx) == 2 and "c" not in idx and idx.get("c") is None
    assert tainted_nodes(objs) == {"b"}
    assert paused_node_pools(objs) == {"default"}


def test_events_are_deduplicated_per_window() -> None:
    now = [1000.0]
    acts = EventActivities(KubeClient(ApiClient()), clock=lambda: now[0])  # dedupe needs no API call
    ev = EventSpec(kind="Node", name="a", reason="Unconsolidatable", message="SpotToSpotConsolidation is disabled")
    blocked = EventSpec(kind="NodePool", name="default", reason="DisruptionBlocked", message="No allowed disruptions")
    assert acts.fresh([ev, ev, blocked]) == [ev, blocked]
    now[0] += 120
    assert acts.fresh([ev, blocked]) == [blocked]  # Unconsolidatable waits 15 minutes, DisruptionBlocked 1
    now[0] += 15 * 60
    assert acts.fresh([ev]) == [ev]
    body = event_body(blocked, datetime(2026, 1, 1, tzinfo=UTC))
    assert body["involvedObject"] == {"kind": "NodePool", "name": "default", "apiVersion": "karpenter.sh/v1"}
    assert body["reason"] == "DisruptionBlocked" and body["metadata"]["namespace"] == "default"


def test_leftover_taints_are_released_only_when_unowned_and_old() -> None:
    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def tainted(name: str, added: str | None) -> dict:
        taint = {"key": labels.DISRUPTED_TAINT_KEY, "effect": "NoSchedule"}
        if added:
            taint["timeAdded"] = added
        return _node(name, f"u-{name}", taints=[taint])

    deleting = tainted("deleting", None)
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T11:00:00Z"
    objs = [tainted("old", "2026-01-01T11:58:00Z"), tainted("fresh", "2026-01-01T11:59:30Z"),
            tainted("owned", "2026-01-01T11:00:00Z"), tainted("owned-by-uid", None), tainted("unknown", None),
            deleting, _node("clean", "u-clean")]
    assert orphaned_taints(objs, {"owned"}, {"u-owned-by-uid"}, now) == ["old", "unknown"]


def test_replacements_of_running_disruptions_are_not_candidates():
    from activities.planning_runner import replacement_nodes
    from api.labels import DISRUPTION_ANNOTATION

    def claim(name: str, key: str | None, node: str | None) -> dict:
        ann = {DISRUPTION_ANNOTATION: key} if key else {}
        return {"kind": "NodeClaim", "metadata": {"name": name, "annotations": ann},
                "status": {"nodeName": node} if node else {}}

    objs = [claim("r1", "disrupt-a/run1/0", "node-r1"),  # its disruption still runs: protected
            claim("r2", "disrupt-b/run9/0", "node-r2"),  # its disruption finished: an ordinary node now
            claim("r3", "disrupt-a/run1/1", None),  # not registered yet: nothing to protect
            claim("plain", None, "node-plain"),
            {"kind": "Node", "metadata": {"name": "node-r1"}}]
    assert replacement_nodes(objs, {"disrupt-a", "terminate-x"}) == {"node-r1"}
