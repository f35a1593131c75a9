"""Karpenter's metrics as nodeflow exports them: the types, labels and buckets read from Karpenter's source.

Expected values are from kubernetes-sigs/karpenter (pkg/metrics/metrics.go, pkg/metrics/constants.go,
pkg/controllers/disruption/metrics.go, pkg/controllers/metrics/pod/controller.go,
pkg/controllers/node/termination/metrics.go, pkg/controllers/provisioning/scheduling/metrics.go) at 2266468.
"""

from __future__ import annotations

import copy
from typing import Any

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from runtime.karpenter_state import KarpenterStateCollector, PodTracker
from telemetry import karpenter_metrics as km
from telemetry.metrics import REGISTRY
from telemetry.summary import QuantileSummary, quantile

# pkg/metrics/constants.go DurationBuckets()
DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
                    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
                    120, 150, 300, 450, 600]
QUANTILES = {"0", "0.5", "0.9", "0.99", "1"}  # SummaryObjectives()


def exposition() -> dict[str, Any]:
    return {f.name: f for f in text_string_to_metric_families(generate_latest(REGISTRY).decode())}


def label_keys(family: Any, suffix: str = "") -> set[frozenset[str]]:
    return {frozenset(s.labels) for s in family.samples if s.name == family.name + suffix}


def test_key_metrics_have_karpenters_types_labels_and_buckets() -> None:
    km.NODECLAIMS_DISRUPTED.labels(reason="underutilized", nodepool="p", capacity_type="spot",
                                   consolidation_policy="when_empty_or_underutilized",
                                   termination_mode="graceful").inc()
    km.ALLOWED_DISRUPTIONS.labels(nodepool="p", reason="Drifted").set(2)
    km.POD_STARTUP_DURATION.observe(12.0)
    km.NODE_TERMINATION_DURATION.observe(30.0, nodepool="p")
    km.SCHEDULING_DURATION.labels(controller="provisioner").observe(0.3)
    fams = exposition()

    disrupted = fams["karpenter_nodeclaims_disrupted"]
    assert disrupted.type == "counter"
    assert label_keys(disrupted, "_total") == {frozenset(
        {"reason", "nodepool", "capacity_type", "consolidation_policy", "termination_mode"})}

    allowed = fams["karpenter_nodepools_allowed_disruptions"]
    assert allowed.type == "gauge"
    assert label_keys(allowed) == {frozenset({"nodepool", "reason"})}

    startup = fams["karpenter_pods_startup_duration_seconds"]
    assert startup.type == "summary"
    assert {s.labels["quantile"] for s in startup.samples if s.name == startup.name} == QUANTILES
    assert label_keys(startup) == {frozenset({"quantile"})}
    assert {s.name for s in startup.samples} >= {startup.name + "_count", startup.name + "_sum"}

    termination = fams["karpenter_nodes_termination_duration_seconds"]
    assert termination.type == "summary"
    assert label_keys(termination) == {frozenset({"nodepool", "quantile"})}

    scheduling = fams["karpenter_scheduler_scheduling_duration_seconds"]
    assert scheduling.type == "histogram"
    buckets = [s for s in scheduling.samples if s.name.endswith("_bucket") and s.labels["controller"] == "provisioner"]
    assert [float(s.labels["le"]) for s in buckets] == [*DURATION_BUCKETS, float("inf")]


def test_other_buckets_follow_karpenter() -> None:
    km.NODECLAIM_TERMINATION_DURATION.labels(nodepool="b").observe(3)
    km.INSTANCE_TERMINATION_DURATION.labels(nodepool="b").observe(3)
    km.NODE_LIFETIME.labels(nodepool="b").observe(3)
    fams = exposition()

    def les(name: str) -> list[float]:
        return [float(s.labels["le"]) for s in fams[name].samples
                if s.name.endswith("_bucket") and s.labels.get("nodepool") == "b"][:-1]

    assert les("karpenter_nodeclaims_termination_duration_seconds") == [2.0 ** i for i in range(12)]
    assert les("karpenter_nodeclaims_instance_termination_duration_seconds") == [2.0 ** i for i in range(11)]
    lifetime = les("karpenter_nodes_lifetime_duration_seconds")
    assert lifetime[0] == 15 * 60 and lifetime[-1] == 30 * 86400 and len(lifetime) == 21


def test_consolidation_timeouts_start_at_zero_for_multi_and_single() -> None:
    samples = exposition()["karpenter_voluntary_disruption_consolidation_timeouts"].samples
    assert {s.labels["consolidation_type"] for s in samples if s.name.endswith("_total")} >= {"multi", "single"}


def test_quantile_summary_reports_its_window() -> None:
    now = [0.0]
    summary = QuantileSummary("t_seconds", "test", ("pool",), max_age=60, clock=lambda: now[0])
    for v in range(1, 101):
        summary.observe(float(v), pool="a")
    values = {s.labels.get("quantile"): s.value for f in summary.collect() for s in f.samples}
    assert values["0"] == 1 and values["0.5"] == 50 and values["0.9"] == 90 and values["0.99"] == 99
    assert values["1"] == 100 and values[None] in (100, 5050)
    now[0] = 61  # everything aged out of the window: the quantiles are NaN, the count and sum stay
    samples = [s for f in summary.collect() for s in f.samples]
    assert all(s.value != s.value for s in samples if "quantile" in s.labels)
    assert next(s.value for s in samples if s.name.endswith("_count")) == 100
    assert quantile([], 0.5) != quantile([], 0.5)


def test_reason_labels_and_termination_mode() -> None:
    assert km.snake("Underutilized") == "underutilized"
    assert km.snake("SpotInterruption") == "spot_interruption"
    assert km.snake("WhenEmptyOrUnderutilized") == "when_empty_or_underutilized"
    assert km.termination_mode(None) == "graceful"
    assert km.termination_mode({"spec": {"terminationGracePeriod": "0s"}}) == "forceful"
    assert km.termination_mode({"spec": {"terminationGracePeriod": "1h0m0s"}}) == "eventual"


def _node(name: str, pool: str) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name, "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {
        "karpenter.sh/nodepool": pool, "topology.kubernetes.io/zone": "us-east-1a", "kubernetes.io/arch": "amd64",
        "karpenter.sh/capacity-type": "spot", "node.kubernetes.io/instance-type": "m5.large"}},
        "status": {"capacity": {"cpu": "2", "memory": "8Gi", "pods": "29"},
                   "allocatable": {"cpu": "1930m", "memory": "7Gi", "pods": "29"}}}


def _pod(name: str, node: str | None, phase: str, ready_at: str | None = None, daemon: bool = False
         ) -> dict[str, Any]:
    owner = {"apiVersion": "apps/v1", "kind": "DaemonSet" if daemon else "ReplicaSet", "name": "o"}
    conds = [{"type": "Ready", "status": "True", "lastTransitionTime": ready_at}] if ready_at else []
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "creationTimestamp":
                                        "2026-01-01T00:00:00Z", "ownerReferences": [owner]},
            "spec": {"nodeName": node, "containers": [{"resources": {"requests": {"cpu": "500m"},
                                                                     "limits": {"cpu": "1"}}}]},
            "status": {"phase": phase, "conditions": conds}}


def test_state_gauges_come_from_the_cache() -> None:
    pool = {"kind": "NodePool", "metadata": {"name": "p"}, "spec": {"limits": {"cpu": "100", "memory": "400Gi"}}}
    objs = [pool, _node("n1", "p"), _pod("web", "n1", "Running"), _pod("ds", "n1", "Running", daemon=True),
            _pod("new", None, "Pending")]
    collector = KarpenterStateCollector(clock=lambda: 1767225600.0 + 60)
    collector.attach(lambda: (objs, True))
    fams = {f.name: f for f in collector.collect()}

    def value(metric: str, **labels: str) -> float:
        return next(s.value for s in fams[metric].samples if all(s.labels.get(k) == v for k, v in labels.items()))

    assert value("karpenter_nodes_allocatable", node_name="n1", resource_type="cpu", nodepool="p") == 1.93
    assert value("karpenter_nodes_total_pod_requests", node_name="n1", resource_type="cpu") == 1.0
    assert value("karpenter_nodes_total_daemon_requests", node_name="n1", resource_type="cpu") == 0.5
    assert value("karpenter_nodes_total_daemon_requests", node_name="n1", resource_type="memory") == 0
    assert abs(value("karpenter_nodes_system_overhead", node_name="n1", resource_type="cpu") - 0.07) < 1e-9
    assert value("karpenter_nodes_current_lifetime_seconds", node_name="n1") == 60
    assert value("karpenter_nodepools_limit", nodepool="p", resource_type="memory") == 400 * 2 ** 30
    assert value("karpenter_nodepools_usage", nodepool="p", resource_type="cpu") == 2
    assert value("karpenter_pods_state", name="web", nodepool="p", zone="us-east-1a", phase="Running") == 1
    assert value("karpenter_pods_state", name="new", scheduled="false", phase="Pending") == 1
    assert value("karpenter_pods_unbound_time_seconds", name="new") == 60
    assert value("karpenter_cluster_state_node_count") == 1
    assert value("karpenter_cluster_state_synced") == 1
    labels = next(s.labels for s in fams["karpenter_nodes_allocatable"].samples)
    assert {"nodepool", "zone", "arch", "capacity_type", "instance_type", "node_name", "phase", "managed",
            "resource_type"} <= set(labels)
    assert "zone_id" not in labels  # a well-known label the node lacks: empty, which Prometheus reads as absent
    node = copy.deepcopy(objs[1])  # the cache replaces an object that changed, never modifies it
    node["metadata"]["labels"]["karpenter.k8s.aws/instance-category"] = "m"  # the provider's, snake case
    objs[1] = node
    labels = next(s.labels for f in collector.collect() if f.name == "karpenter_nodes_allocatable" for s in f.samples)
    assert labels["instance_category"] == "m"


def test_a_pod_seen_pending_then_ready_is_observed_once() -> None:
    before = _count("karpenter_pods_startup_duration_seconds")
    tracker = PodTracker()
    tracker.update([_pod("a", None, "Pending")], now=0)
    tracker.update([_pod("a", "n1", "Running", ready_at="2026-01-01T00:00:42Z")], now=0)
    tracker.update([_pod("a", "n1", "Running", ready_at="2026-01-01T00:00:42Z")], now=0)
    tracker.update([_pod("b", "n1", "Running", ready_at="2026-01-01T00:00:10Z")], now=0)  # never seen pending
    assert _count("karpenter_pods_startup_duration_seconds") == before + 1


def _count(name: str) -> float:
    fam = exposition()[name]
    return sum(s.value for s in fam.samples if s.name == name + "_count")


def test_a_pod_that_started_before_the_cache_showed_it_is_observed() -> None:
    """Pending when the worker attached its cache, Ready before the cache's first look: pending under this worker."""
    before = _count("karpenter_pods_startup_duration_seconds")
    tracker = PodTracker()
    tracker.begin(1767225610.0)  # 10 s after the pods' creation
    tracker.update([_pod("late", "n1", "Running", ready_at="2026-01-01T00:00:20Z"),  # Ready after: counted
                    _pod("old", "n1", "Running", ready_at="2026-01-01T00:00:05Z")], now=1767225630.0)  # before: not
    assert _count("karpenter_pods_startup_duration_seconds") == before + 1


def test_a_pod_ready_in_the_second_the_tracker_began_is_observed() -> None:
    """Its transition is stamped to the second: 00:00:10 may be after a start at 00:00:10.05."""
    before = _count("karpenter_pods_startup_duration_seconds")
    tracker = PodTracker()
    tracker.begin(1767225610.05)
    tracker.update([_pod("same", "n1", "Running", ready_at="2026-01-01T00:00:10Z"),  # that second: counted
                    _pod("prior", "n1", "Running", ready_at="2026-01-01T00:00:09Z")], now=1767225630.0)  # not
    assert _count("karpenter_pods_startup_duration_seconds") == before + 1
