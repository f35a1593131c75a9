"""The spot pre-spin sized from the interrupted node's pods (planning/provisioning/spot_sizing.py)."""

from __future__ import annotations

from planning_factory import AT, node_and_claim, nodepool, pod, snapshot, ts

from api import labels as L
from api.catalog import load_default_catalog
from planning.provisioning.spot_sizing import size_interrupted

SPOT_OR_OD = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["spot", "on-demand"]},
              {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]}]
CATALOG = load_default_catalog()


def spot_node(name: str, itype: str) -> list[dict]:
    return node_and_claim(name, itype, capacity_type="spot")


def cores(itype: str) -> float:
    it = CATALOG.get(itype)
    assert it is not None
    return it.cpu_cores


def test_a_large_node_with_small_pods_gets_a_small_replacement() -> None:
    snap = snapshot(nodepool(requirements=SPOT_OR_OD), spot_node("big", "m5.4xlarge"),
                    pod("web-1", "big", "250m", "256Mi"), pod("web-2", "big", "250m", "256Mi"))
    sizing = size_interrupted(snap, "big")
    (launch,) = sizing.launches
    assert sorted(launch.pods) == ["default/web-1", "default/web-2"] and sizing.placed == {}
    assert launch.replacement.capacity_type == "spot" and launch.node_pool == "default"
    assert cores(launch.replacement.instance_types[0]) <= 2 < cores("m5.4xlarge")


def test_pods_that_fit_on_other_nodes_need_no_replacement() -> None:
    snap = snapshot(nodepool(requirements=SPOT_OR_OD), spot_node("doomed", "m5.xlarge"),
                    node_and_claim("roomy", "m5.2xlarge"), pod("web-1", "doomed", "1", "1Gi"),
                    pod("web-2", "doomed", "1", "1Gi"), pod("db-1", "roomy", "2", "4Gi"))
    sizing = size_interrupted(snap, "doomed")
    assert sizing.launches == [] and sizing.placed == {"default/web-1": "roomy", "default/web-2": "roomy"}
    assert sizing.pods == 2


def test_a_nodeclaim_still_launching_takes_the_pods_first() -> None:
    claim = node_and_claim("coming", "m5.xlarge")[1]
    claim["status"] = {}
    claim["spec"]["requirements"] = [{"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.xlarge"]}]
    claim["metadata"]["creationTimestamp"] = ts(AT)
    snap = snapshot(nodepool(requirements=SPOT_OR_OD), spot_node("doomed", "m5.large"), claim,
                    pod("web-1", "doomed", "1", "1Gi"))
    sizing = size_interrupted(snap, "doomed", at=AT)
    assert sizing.launches == [] and sizing.placed == {"default/web-1": "<launching:coming>"}


def test_the_reclaimed_type_is_not_bought_again_on_spot() -> None:
    snap = snapshot(nodepool(requirements=SPOT_OR_OD), spot_node("doomed", "m5.large"),
                    pod("web-1", "doomed", "1500m", "6Gi"))
    (launch,) = size_interrupted(snap, "doomed").launches
    assert launch.replacement.capacity_type == "spot" and "m5.large" not in launch.replacement.instance_types
    on_demand = snapshot(nodepool(requirements=SPOT_OR_OD), node_and_claim("od", "m5.large"),
                         pod("web-1", "od", "1500m", "6Gi"))
    (other,) = size_interrupted(on_demand, "od").launches
    assert "m5.large" in other.replacement.instance_types  # only a spot node's type is left out


def test_pods_that_cannot_share_a_node_get_a_node_each() -> None:
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": L.HOSTNAME_LABEL, "labelSelector": {"matchLabels": {"app": "zk"}}}]}}
    snap = snapshot(nodepool(requirements=SPOT_OR_OD), spot_node("doomed", "m5.2xlarge"),
                    *[pod(f"zk-{i}", "doomed", "500m", "1Gi", labels={"app": "zk"}, affinity=anti) for i in range(2)])
    sizing = size_interrupted(snap, "doomed")
    assert len(sizing.launches) == 2 and all(len(launch.pods) == 1 for launch in sizing.launches)


def test_evicted_pods_still_count_but_finished_and_daemon_pods_do_not() -> None:
    evicting = pod("web-1", "doomed", "1", "1Gi")
    evicting["metadata"]["deletionTimestamp"] = ts(AT)
    snap = snapshot(nodepool(requirements=SPOT_OR_OD), spot_node("doomed", "m5.xlarge"), evicting,
                    pod("job-1", "doomed", "2", "1Gi", phase="Succeeded"),
                    pod("logs-1", "doomed", "100m", "128Mi", owner="DaemonSet"))
    (launch,) = size_interrupted(snap, "doomed").launches
    assert launch.pods == ["default/web-1"]


def test_an_empty_node_needs_nothing_and_an_unknown_node_is_not_found() -> None:
    snap = snapshot(nodepool(requirements=SPOT_OR_OD), spot_node("idle", "m5.large"))
    sizing = size_interrupted(snap, "idle")
    assert sizing.found and sizing.launches == [] and sizing.pods == 0
    assert not size_interrupted(snap, "nope").found


def test_other_pending_pods_take_free_room_first() -> None:
    """A replacement pre-spun for another node a moment ago is not free while the pods it is for wait."""
    claim = node_and_claim("prespun", "m5.large", created=AT)[1]  # launched a moment ago: within its liveness TTLs
    claim["status"] = {}
    claim["spec"]["requirements"] = [{"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large"]}]
    waiting = pod("other-1", None, "1500m", "4Gi", phase="Pending")
    snap = snapshot(nodepool(requirements=SPOT_OR_OD), spot_node("doomed", "m5.large"), claim, waiting,
                    pod("web-1", "doomed", "1500m", "4Gi"))
    (launch,) = size_interrupted(snap, "doomed").launches
    assert launch.pods == ["default/web-1"]
    alone = snapshot(nodepool(requirements=SPOT_OR_OD), spot_node("doomed", "m5.large"), claim,
                     pod("web-1", "doomed", "1500m", "4Gi"))
    assert size_interrupted(alone, "doomed", at=AT).launches == []  # nominated to the launching claim


def test_an_evicted_pod_with_a_pending_successor_counts_once() -> None:
    evicted = pod("web-1", "doomed", "1500m", "4Gi")
    evicted["metadata"]["deletionTimestamp"] = ts(AT)
    successor = pod("web-2", None, "1500m", "4Gi", phase="Pending")  # same ReplicaSet (owner from the name)
    snap = snapshot(nodepool(requirements=SPOT_OR_OD), spot_node("doomed", "m5.large"), evicted, successor)
    (launch,) = size_interrupted(snap, "doomed").launches
    assert launch.pods == ["default/web-2"]


def test_pods_of_other_nodes_being_drained_take_free_room_first() -> None:
    """Two spot warnings at once: the first node's pre-spun claim is for its own pods, not the second node's."""
    claim = node_and_claim("prespun", "m5.large", created=AT)[1]  # launched a moment ago: within its liveness TTLs
    claim["status"] = {}
    claim["spec"]["requirements"] = [{"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large"]}]
    first = spot_node("first", "m5.large")
    first[0]["spec"]["taints"] = [{"key": L.DISRUPTED_TAINT_KEY, "effect": "NoSchedule"}]
    snap = snapshot(nodepool(requirements=SPOT_OR_OD), first, pod("a-1", "first", "1500m", "4Gi"),
                    spot_node("second", "m5.large"), pod("b-1", "second", "1500m", "4Gi"), claim)
    (launch,) = size_interrupted(snap, "second").launches
    assert launch.pods == ["default/b-1"]
    untainted = snapshot(nodepool(requirements=SPOT_OR_OD), spot_node("first", "m5.large"),
                         pod("a-1", "first", "1500m", "4Gi"), spot_node("second", "m5.large"),
                         pod("b-1", "second", "1500m", "4Gi"), claim)
    assert size_interrupted(untainted, "second", at=AT).launches == []  # nothing says the first node is going


def test_a_prespin_still_launching_is_kept_for_the_node_it_replaces() -> None:
    """Before the other node's termination tainted it, its pre-spin is already launching: not free room."""
    from contracts.interruption import prespin_workflow_id
    from planning.provisioning.spot_sizing import PRESPIN_KEY_PREFIX

    assert prespin_workflow_id("uid-x").startswith(PRESPIN_KEY_PREFIX)
    claim = node_and_claim("prespun", "m5.large", created=AT)[1]  # launched a moment ago: within its liveness TTLs
    claim["status"] = {}
    claim["spec"]["requirements"] = [{"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large"]}]
    claim["metadata"]["annotations"] = {L.DISRUPTION_ANNOTATION: prespin_workflow_id("uid-first")}
    snap = snapshot(nodepool(requirements=SPOT_OR_OD), spot_node("first", "m5.large"),
                    pod("a-1", "first", "1500m", "4Gi"), spot_node("second", "m5.large"),
                    pod("b-1", "second", "1500m", "4Gi"), claim)
    (launch,) = size_interrupted(snap, "second").launches
    assert launch.pods == ["default/b-1"]
