"""activities/provisioning_planner.py: the Events that explain a provisioning decision (pure: decision in, Event
bodies out), and the no-capacity message."""

from __future__ import annotations

from datetime import UTC, datetime

from activities.provisioning_planner import explanation_events, no_capacity_specs, to_plan
from api import events
from contracts.provisioning import LaunchFailedInput, PodRef
from planning.provisioning.provisioner import Exclusion, PoolExclusion, ProvisioningDecision, Unservable

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def _decision() -> ProvisioningDecision:
    mars = Unservable("shop/mars-0", "uid-mars-0", [
        PoolExclusion("gpu", Exclusion.TAINT, "taint gpu=true:NoSchedule is not tolerated"),
        PoolExclusion("default", Exclusion.REQUIREMENT,
                      "nodeSelector topology.kubernetes.io/zone=mars-1a is not satisfied by any instance type, "
                      "zone or label of the pool")])
    big = [Unservable(f"shop/big-{i}", f"uid-big-{i}", [PoolExclusion("default", Exclusion.LIMITS,
                                                                      "limits cpu=4 reached")]) for i in range(2)]
    return ProvisioningDecision(unservable=[mars, *big], pools_at_limit={"default": "limits cpu=4 reached"})


def test_a_pod_no_pool_serves_gets_a_warning_naming_each_pool_and_what_excludes_it() -> None:
    bodies = explanation_events(_decision(), "provision-abc", NOW)
    (mars,) = [b for b in bodies if b["involvedObject"]["name"] == "mars-0"]
    assert (mars["reason"], mars["type"]) == ("FailedScheduling", "Warning")
    assert mars["involvedObject"] == {"kind": "Pod", "name": "mars-0", "namespace": "shop", "uid": "uid-mars-0",
                                      "apiVersion": "v1"}
    assert mars["metadata"]["namespace"] == "shop"
    assert mars["message"] == (
        "Failed to schedule pod, no NodePool can serve it: nodepool gpu: taint gpu=true:NoSchedule is not tolerated; "
        "nodepool default: nodeSelector topology.kubernetes.io/zone=mars-1a is not satisfied by any instance type, "
        "zone or label of the pool")


def test_a_pool_at_its_limits_gets_one_warning_counting_the_pods_it_cannot_launch_for() -> None:
    bodies = explanation_events(_decision(), "provision-abc", NOW)
    (pool,) = [b for b in bodies if b["involvedObject"]["kind"] == "NodePool"]
    assert (pool["reason"], pool["type"], pool["involvedObject"]["name"]) == ("NodePoolLimitsReached", "Warning",
                                                                              "default")
    assert pool["message"] == "NodePool default cannot launch for 2 pending pod(s): limits cpu=4 reached"
    assert [b["involvedObject"]["name"] for b in bodies if b["reason"] == "FailedScheduling"] == [
        "mars-0", "big-0", "big-1"]
    assert all("limits cpu=4 reached" in b["message"] for b in bodies if b["involvedObject"]["name"] != "mars-0")


def test_events_are_named_by_batch_and_content_so_a_retry_records_each_once() -> None:
    names = [b["metadata"]["name"] for b in explanation_events(_decision(), "provision-abc", NOW)]
    assert len(set(names)) == len(names)
    assert names == [b["metadata"]["name"] for b in explanation_events(_decision(), "provision-abc", NOW)]
    other = [b["metadata"]["name"] for b in explanation_events(_decision(), "provision-def", NOW)]
    assert not set(names) & set(other)


def test_nothing_to_explain_records_nothing_and_the_plan_launches_nothing() -> None:
    assert explanation_events(ProvisioningDecision(), "provision-abc", NOW) == []
    plan = to_plan(_decision(), batch=4)
    assert plan.launches == [] and plan.unservable == ["shop/mars-0", "shop/big-0", "shop/big-1"]
    assert plan.pools_at_limit == ["default"] and plan.gone == 1


def test_no_capacity_says_whether_the_batch_retries_and_names_the_offerings() -> None:
    offerings = [f"m5.large/us-east-1{z}" for z in "abcdefgh"]
    retry = events.insufficient_capacity(offerings[:2], 30.0)
    assert retry == ("InsufficientInstanceCapacity for every offering (m5.large/us-east-1a, m5.large/us-east-1b); "
                     "retrying in 30s")
    last = events.insufficient_capacity(offerings, None)
    assert last.endswith("and 2 more); giving up for this batch") and "us-east-1g" not in last


def test_no_capacity_warns_the_pool_and_each_pod_of_the_launch_v115() -> None:
    """Karpenter v1.15 (kubernetes-sigs/karpenter#3143): InsufficientCapacityError on every pod the failed NodeClaim
    was for, naming it and the cloud's answer, besides nodeflow's Event on the NodePool."""
    inp = LaunchFailedInput(node_pool="gpu", offerings=["g5.xlarge/us-east-1a"], retry_seconds=None, batch_id="b",
                            pods=[PodRef(key="ml/train-0", uid="u0"), PodRef(key="ml/train-1", uid="u1"),
                                  PodRef(key="ml/train-0", uid="u0")],
                            node_claim="gpu-abc12", error="InsufficientInstanceCapacity for every offering: "
                                                          "g5.xlarge/us-east-1a")
    pool, *pods = no_capacity_specs(inp)
    assert (pool.kind, pool.name, pool.reason, pool.type) == ("NodePool", "gpu", "InsufficientCapacityError",
                                                              "Warning")
    assert [(p.kind, p.namespace, p.name, p.uid, p.reason, p.type) for p in pods] == [
        ("Pod", "ml", "train-0", "u0", "InsufficientCapacityError", "Warning"),
        ("Pod", "ml", "train-1", "u1", "InsufficientCapacityError", "Warning")]
    assert pods[0].message == ("NodeClaim gpu-abc12, nominated for this pod failed to launch: "
                               "InsufficientInstanceCapacity for every offering: g5.xlarge/us-east-1a")


def test_no_pods_no_pod_events_and_a_long_error_is_cut() -> None:
    assert [s.kind for s in no_capacity_specs(LaunchFailedInput(node_pool="gpu"))] == ["NodePool"]
    message = events.pod_insufficient_capacity("", "x" * 1000)
    assert message.startswith("The NodeClaim, nominated for this pod failed to launch: xxx") and message.endswith("...")
    assert len(message) < 500


def test_a_pods_insufficient_capacity_is_news_for_each_nodeclaim() -> None:
    """Keyed by message: the next ICE round's NodeClaim gets its own Event on the same pod."""
    spec = events.spec_of("InsufficientCapacityError", "Pod")
    assert spec.type == "Warning" and spec.by_message
