"""The provisioner schedules the pods of deleting nodes (Karpenter's `deletingNodePods`, docs/semantics.md §6): a
node deleted by hand or blocked by a PDB gets its replacement capacity while it drains."""

from __future__ import annotations

from typing import Any

from planning_factory import AT, node_and_claim, nodepool, pdb, pod, snapshot, ts

from planning.provisioning.provisioner import decide


def _deleting(name: str, itype: str = "m5.xlarge", on: str = "claim") -> list[dict[str, Any]]:
    node, claim = node_and_claim(name, itype)
    (claim if on == "claim" else node)["metadata"]["deletionTimestamp"] = ts(AT)
    return [node, claim]


def _launched(decision: Any) -> set[str]:
    return {p for launch in decision.launches for p in launch.pods}


def test_the_pods_of_a_deleted_node_get_a_launch_while_it_drains():
    decision = decide(snapshot(nodepool(), _deleting("old"), pod("web-1", "old", "2", "4Gi"),
                               pod("web-2", "old", "1", "2Gi")), at=AT)
    assert _launched(decision) == {"default/web-1", "default/web-2"}
    assert decision.unservable == []


def test_a_node_deleted_without_its_claim_deleting_counts_too():
    decision = decide(snapshot(nodepool(), _deleting("old", on="node"), pod("web-1", "old", "2", "4Gi")), at=AT)
    assert _launched(decision) == {"default/web-1"}


def test_room_on_a_live_node_launches_nothing_and_is_named():
    decision = decide(snapshot(nodepool(), _deleting("old"), node_and_claim("spare", "m5.2xlarge"),
                               pod("web-1", "old", "2", "4Gi")), at=AT)
    assert decision.launches == [] and decision.scheduled == {"default/web-1": "spare"}


def test_pods_that_cannot_move_get_no_capacity():
    """A PDB that never allows an eviction and an active do-not-disrupt keep their pods where they are until the
    grace-period deadline: Karpenter's IsCurrentlyReschedulable leaves them out. DaemonSet pods are never moved."""
    objs = [nodepool(), _deleting("old"),
            pod("db-1", "old", "2", "4Gi", labels={"app": "db"}),
            pdb("db", {"app": "db"}, 0, max_unavailable=0),
            pod("batch-1", "old", "2", "4Gi", annotations={"karpenter.sh/do-not-disrupt": "true"}),
            pod("ds-1", "old", "100m", "64Mi", owner="DaemonSet")]
    decision = decide(snapshot(*objs), at=AT)
    assert decision.launches == [] and decision.unservable == []


def test_a_pdb_with_no_disruption_left_now_does_not_hold_capacity_back():
    """The trial's case: `kubectl delete node` under a PDB that allows no eviction at the moment. Its pods will be
    evicted at the grace-period deadline at the latest, so their capacity is launched now."""
    objs = [nodepool(), _deleting("old"), pod("api-1", "old", "2", "4Gi", labels={"app": "api"}),
            pdb("api", {"app": "api"}, 0, max_unavailable=1)]
    assert _launched(decide(snapshot(*objs), at=AT)) == {"default/api-1"}


def test_a_batch_names_the_displaced_pods_it_covers():
    objs = [nodepool(), _deleting("old"), pod("web-1", "old", "2", "4Gi"), pod("web-2", "old", "1", "2Gi")]
    decision = decide(snapshot(*objs), pods=["uid-default-web-2"], at=AT)
    assert _launched(decision) == {"default/web-2"}


def test_a_displaced_pod_no_pool_serves_gets_no_failed_scheduling_event():
    objs = [nodepool(), _deleting("old"), pod("mars-1", "old", "2", "4Gi", node_selector={"zone": "mars"})]
    decision = decide(snapshot(*objs), at=AT)
    assert decision.launches == [] and decision.unservable == []


def test_a_node_draining_under_a_termination_counts_without_being_deleted():
    """Expiry, an interruption, a repair start a TerminationWorkflow that taints the node and owns its claim without
    deleting it first (Karpenter deletes the claim): its pods get capacity too. A disruption's candidate waiting for
    its replacement (tainted, its claim not owned by a termination) does not."""
    from api import labels as L

    node, claim = node_and_claim("old", "m5.xlarge", taints=[{"key": L.DISRUPTED_TAINT_KEY, "effect": "NoSchedule"}])
    web = pod("web-1", "old", "2", "4Gi")
    assert decide(snapshot(nodepool(), node, claim, web), at=AT).launches == []
    claim["metadata"]["annotations"][L.TERMINATION_WORKFLOW_ANNOTATION] = "terminate-uid-old"
    assert _launched(decide(snapshot(nodepool(), node, claim, web), at=AT)) == {"default/web-1"}
