"""Karpenter v1.15's disruption metrics: karpenter_pods_disruption_initiated_total counts the reschedulable pods of
a disrupted node (kubernetes-sigs/karpenter#3015: no DaemonSet or mirror pod), and karpenter_nodeclaims_disrupted_total
carries consolidation_policy and termination_mode (kubernetes-sigs/karpenter#3179)."""

from __future__ import annotations

from typing import Any

from activities.karpenter_metrics import record_disrupted
from runtime.nodeclaim_gc import GarbageCollector
from telemetry import karpenter_metrics as km
from telemetry.metrics import REGISTRY

PODS = "karpenter_pods_disruption_initiated_total"
CLAIMS = "karpenter_nodeclaims_disrupted_total"


def _pod(name: str, kind: str = "ReplicaSet", phase: str = "Running", deleting: bool = False) -> dict[str, Any]:
    owner = {"apiVersion": "v1" if kind == "Node" else "apps/v1", "kind": kind, "name": "o"}
    meta: dict[str, Any] = {"name": name, "namespace": "default", "ownerReferences": [owner]}
    if kind == "Node":  # a mirror pod as the kubelet makes it: owned by its Node, and annotated
        meta["annotations"] = {"kubernetes.io/config.mirror": "hash"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "spec": {}, "status": {"phase": phase}}


class FakeKube:
    """What record_disrupted and garbage collection read: a node, its claim, its pool, its pods."""

    def __init__(self, pool: str, pods: list[dict[str, Any]], grace: str | None = None,
                 policy: str = "WhenEmptyOrUnderutilized") -> None:
        meta = {"labels": {"karpenter.sh/nodepool": pool, "karpenter.sh/capacity-type": "spot"}}
        self.node = {"metadata": {"name": "n1", **meta}}
        self.claim = {"metadata": {"name": "c1", **meta}, "spec": {"terminationGracePeriod": grace} if grace else {},
                      "status": {"nodeName": "n1"}}
        self.pool = {"spec": {"disruption": {"consolidationPolicy": policy}}}
        self.pods = pods

    def get_node(self, name: str) -> dict[str, Any]:
        return self.node

    def get_node_claim(self, name: str) -> dict[str, Any]:
        return self.claim

    def get_node_pool(self, name: str) -> dict[str, Any]:
        return self.pool

    def list_node_pods(self, name: str) -> list[dict[str, Any]]:
        return self.pods


def _value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def _labels(pool: str, reason: str, policy: str, mode: str) -> dict[str, str]:
    return {"reason": reason, "nodepool": pool, "capacity_type": "spot", "consolidation_policy": policy,
            "termination_mode": mode}


def test_a_consolidated_node_counts_its_reschedulable_pods_with_policy_and_mode() -> None:
    pods = [_pod("a"), _pod("b"), _pod("ds", "DaemonSet"), _pod("static", "Node"), _pod("done", phase="Succeeded")]
    labels = _labels("v115-a", "underutilized", "when_empty_or_underutilized", "eventual")
    before = _value(PODS, **labels), _value(CLAIMS, **labels)
    record_disrupted(FakeKube("v115-a", pods, grace="1h"), "n1", "c1", "v115-a", "Underutilized")
    assert _value(PODS, **labels) - before[0] == 2  # a and b: not the DaemonSet, mirror or finished pod
    assert _value(CLAIMS, **labels) - before[1] == 1


def test_drift_has_no_consolidation_policy_and_a_forceful_mode_at_zero_grace() -> None:
    labels = _labels("v115-b", "drifted", "", "forceful")
    before = _value(PODS, **labels)
    record_disrupted(FakeKube("v115-b", [_pod("a")], grace="0s"), "n1", "c1", "v115-b", "Drifted")
    assert _value(PODS, **labels) - before == 1
    assert _value(CLAIMS, **labels) >= 1


def test_a_daemonset_pod_is_not_counted() -> None:
    """A node with only a DaemonSet pod: the NodeClaim counts as disrupted, no pod disruption is initiated."""
    labels = _labels("v115-c", "empty", "when_empty", "graceful")
    before = _value(PODS, **labels), _value(CLAIMS, **labels)
    record_disrupted(FakeKube("v115-c", [_pod("ds", "DaemonSet")], policy="WhenEmpty"), "n1", "c1", "v115-c",
                     "Empty")
    assert _value(PODS, **labels) - before[0] == 0
    assert _value(CLAIMS, **labels) - before[1] == 1


def test_garbage_collection_counts_pods_and_liveness_does_not() -> None:
    kube = FakeKube("v115-d", [_pod("a"), _pod("ds", "DaemonSet"), _pod("static", "Node")])
    gc = GarbageCollector(kube, None, None, None)  # type: ignore[arg-type]
    assert gc._reschedulable_pods(kube.claim) == 1
    gone = _labels("v115-d", "garbage_collected", "", "graceful")
    timed_out = _labels("v115-d", "registration_timeout", "", "graceful")
    before = _value(PODS, **gone), _value(PODS, **timed_out)
    km.record_liveness_deleted(kube.claim, "garbage_collected", gc._reschedulable_pods(kube.claim))
    km.record_liveness_deleted(kube.claim, "registration_timeout")
    assert _value(PODS, **gone) - before[0] == 1
    assert _value(PODS, **timed_out) - before[1] == 0  # Karpenter's liveness counts no pods
    assert _value(CLAIMS, **timed_out) >= 1


def test_a_terminating_statefulset_pod_is_counted() -> None:
    labels = _labels("v115-e", "drifted", "", "graceful")
    before = _value(PODS, **labels)
    record_disrupted(FakeKube("v115-e", [_pod("db-0", "StatefulSet", deleting=True)]), "n1", "c1", "v115-e",
                     "Drifted")
    assert _value(PODS, **labels) - before == 1
