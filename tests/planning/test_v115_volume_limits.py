"""Volume attachment limits in the simulation (v1.15, kubernetes-sigs/karpenter#3202; kube NodeVolumeLimits): an
existing node takes no more attachable volumes than its CSINode (else its instance type) allows, a new node of a
type no more than the type's EBS limit; docs/semantics.md §3.5."""

from __future__ import annotations

from typing import Any

from planning_factory import AT, node_and_claim, nodepool, pod, snapshot

from api import labels as L
from planning.cluster import Cluster
from planning.planner.plan import plan
from planning.scheduling.simulation import Scheduler, SimResult
from planning.scheduling.volume_topology import (
    EBS_DRIVER,
    Volumes,
    attachments,
    csinode_limits,
    instance_type_limits,
    within_limits,
)

REQ = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
       {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.xlarge"]}]
GP3 = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "gp3"},
       "provisioner": EBS_DRIVER, "volumeBindingMode": "WaitForFirstConsumer"}
LOCAL = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local"},
         "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"}


def _claim(name: str, sc: str = "gp3") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default"},
            "spec": {"storageClassName": sc, "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"phase": "Pending"}}


def _with_volume(name: str, node: str, claim: str) -> dict[str, Any]:
    p = pod(name, node, "100m", "64Mi")
    p["spec"]["volumes"] = [{"name": "d", "persistentVolumeClaim": {"claimName": claim}}]
    return p


def _csinode(node: str, count: int) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": node},
            "spec": {"drivers": [{"name": EBS_DRIVER, "nodeID": f"i-{node}", "allocatable": {"count": count}}]}}


def _simulate(*objs: Any, max_new: int = 1) -> SimResult:
    cluster = Cluster.from_snapshot(snapshot(nodepool(requirements=REQ), GP3, LOCAL, *objs))
    a = cluster.by_name["a"]
    return Scheduler(cluster).simulate([a], [p for p in a.pods if p.reschedulable], max_new=max_new)


def test_a_node_at_its_csinode_limit_refuses_another_volume_pod():
    def world(limit: int) -> SimResult:
        return _simulate(*node_and_claim("a"), *node_and_claim("b"), _csinode("b", limit),
                         _claim("data-1"), _claim("data-2"), _with_volume("x-1", "a", "data-1"),
                         _with_volume("y-1", "b", "data-2"))
    assert {p.name: to for p, to in world(1).placements} == {"x-1": "new-0"}
    assert {p.name: to for p, to in world(2).placements} == {"x-1": "b"}


def test_a_pod_without_an_attachable_volume_is_not_held_back():
    local_pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "local-1"},
                "spec": {"storageClassName": "local", "capacity": {"storage": "10Gi"}},
                "status": {"phase": "Available"}}
    sim = _simulate(*node_and_claim("a"), *node_and_claim("b"), _csinode("b", 1), local_pv, _claim("data-1", "local"),
                    _claim("data-2"), _with_volume("x-1", "a", "data-1"), _with_volume("y-1", "b", "data-2"))
    assert {p.name: to for p, to in sim.placements} == {"x-1": "b"}


def test_a_new_node_of_a_type_gets_at_most_its_limit():
    pods = [_with_volume(f"x-{i}", "a", f"data-{i}") for i in range(30)]
    sim = _simulate(*node_and_claim("a", "m5.4xlarge"), *(_claim(f"data-{i}") for i in range(30)), *pods, max_new=2)
    assert sim.all_scheduled and len(sim.new_nodes) == 2  # 30 small pods fit one m5.xlarge but for the volumes
    assert sorted(len(nn.attached) for nn in sim.new_nodes) == [4, 26]
    one = _simulate(*node_and_claim("a", "m5.4xlarge"), *(_claim(f"data-{i}") for i in range(30)), *pods, max_new=1)
    assert one.too_many_new


def test_limits_by_hypervisor_csinode_and_shared_volumes():
    assert instance_type_limits("nitro", False) == {EBS_DRIVER: 26}
    assert instance_type_limits("nitro", True) == {EBS_DRIVER: 25}
    assert instance_type_limits("xen", False) == {EBS_DRIVER: 39}
    assert instance_type_limits(None, False) == {}
    assert csinode_limits(_csinode("b", 17)) == {EBS_DRIVER: 17}
    shared = [(EBS_DRIVER, "default/data"), (EBS_DRIVER, "default/data"), ("efs.csi.aws.com", "fs-1")]
    assert within_limits(shared, {EBS_DRIVER: 1})  # one volume two pods share attaches once; EFS has no limit
    assert not within_limits([*shared, (EBS_DRIVER, "default/other")], {EBS_DRIVER: 1})


def test_a_bound_in_tree_ebs_volume_counts_as_ebs():
    pv = {"kind": "PersistentVolume", "metadata": {"name": "pv-1"},
          "spec": {"awsElasticBlockStore": {"volumeID": "vol-1"}}}
    pvc = {"kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "ns"},
           "spec": {"volumeName": "pv-1"}}
    spec = {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}
    assert attachments("ns", spec, Volumes.from_objects([pv, pvc])) == {(EBS_DRIVER, "pv-1")}


def test_a_csinode_overrides_the_types_limit_only_for_the_drivers_it_lists():
    efs_only = {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "b"},
                "spec": {"drivers": [{"name": "efs.csi.aws.com", "nodeID": "i-b", "allocatable": {"count": 5}}]}}
    cluster = Cluster.from_snapshot(snapshot(nodepool(requirements=REQ), *node_and_claim("a"), *node_and_claim("b"),
                                             _csinode("a", 3), efs_only))
    assert cluster.by_name["a"].volume_limits == {EBS_DRIVER: 3}
    assert cluster.by_name["b"].volume_limits == {EBS_DRIVER: 26, "efs.csi.aws.com": 5}


# ---- why, in `nodeflow plan` and the Unconsolidatable Event -------------------------------------------------------

FULL = f"pod default/x-1: node b has no volume attachment left for driver {EBS_DRIVER} (1 of 1)"


def _a_beside_b(limit: int, *extra: Any) -> list[Any]:
    """a's pod x-1 has an EBS volume; b (same type, room for the pod) already attaches one, its CSINode allows
    `limit`."""
    return [*node_and_claim("a"), *node_and_claim("b"), _csinode("b", limit), _claim("data-1"), _claim("data-2"),
            _with_volume("x-1", "a", "data-1"), _with_volume("y-1", "b", "data-2"), *extra]


def test_a_pod_the_limit_sends_to_a_new_node_is_named_with_the_node_and_count():
    assert _simulate(*_a_beside_b(1)).volume_limited == {"default/x-1": FULL}
    assert _simulate(*_a_beside_b(2)).volume_limited == {}  # b takes it: nothing to explain


def test_the_plan_keeps_karpenters_message_and_adds_the_limit():
    result = plan(snapshot(nodepool(requirements=REQ), GP3, *_a_beside_b(1, _csinode("a", 1))), AT)
    assert result.commands == []  # nor can b's pod go to a
    whys = {e.message for e in result.events if e.reason == "Unconsolidatable" and e.name == "a"}
    assert whys == {f"Can't replace with a cheaper node; {FULL}"}
    roomy = plan(snapshot(nodepool(requirements=REQ), GP3, *_a_beside_b(2)), AT)
    assert [c.nodes for c in roomy.commands] == [["a"]]  # b takes the pod: a goes


def test_a_replace_command_says_which_pod_the_limit_sent_to_the_new_node():
    """a is an m5.2xlarge; an m5.xlarge replacement is cheaper, and x-1 goes there only because b is full."""
    req = [REQ[0], {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.xlarge", "m5.2xlarge"]}]
    objs = [*node_and_claim("a", "m5.2xlarge"), *_a_beside_b(1)[2:]]
    (cmd,) = plan(snapshot(nodepool(requirements=req), GP3, *objs), AT).commands
    assert cmd.decision == "replace"
    assert [(m.pod, m.to, m.why) for m in cmd.pods] == [("default/x-1", "new-0", FULL)]
    assert plan(snapshot(nodepool(requirements=req), GP3, *objs), AT).to_public()["commands"][0]["pods"] == [
        {"pod": "default/x-1", "to": "new-0", "why": FULL}]


def test_a_pod_that_fits_nowhere_names_the_full_node():
    """No NodePool can launch (none exists): x-1 fails, and its why names b's limit."""
    cluster = Cluster.from_snapshot(snapshot(GP3, *_a_beside_b(1)))
    a = cluster.by_name["a"]
    sim = Scheduler(cluster).simulate([a], [p for p in a.pods if p.reschedulable])
    ((pod, why),) = sim.failures
    assert pod.key == "default/x-1" and f"volume attachment limit ({FULL}); " in why
    assert sim.volume_limited == {"default/x-1": FULL}
