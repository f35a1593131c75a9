"""Karpenter's own metrics (names, types, labels, buckets), beside nodeflow's, on the same REGISTRY.

Operators moving a NodePool from Karpenter bring its Grafana dashboards and alerts; these keep them working.
Read from kubernetes-sigs/karpenter v1.14 (after 2266468) and aws/karpenter-provider-aws (after
1d92708); what feeds each one, and what is not emitted, is in docs/semantics.md §19.

| Karpenter source (core unless "provider:") | metrics (type) |
|---|---|
| pkg/metrics/metrics.go | karpenter_nodeclaims_{created,terminated,disrupted}_total, |
| | karpenter_pods_disruption_initiated_total, karpenter_nodes_{created,terminated}_total (counters) |
| pkg/controllers/disruption/metrics.go | karpenter_voluntary_disruption_* (counters, a gauge, a histogram), |
| | karpenter_nodepools_{allowed_disruptions,nodes_consuming_budgets} (gauges), |
| | karpenter_consolidation_score (histogram), karpenter_consolidation_moves_total; v1.15 splits `decision` |
| | into CommandDecision and ApprovalDecision values (kubernetes-sigs/karpenter#3322) |
| pkg/controllers/node/termination/metrics.go | karpenter_nodes_termination_duration_seconds (summary), |
| | karpenter_nodes_drained_total, karpenter_nodes_lifetime_duration_seconds (histogram) |
| .../node/termination/terminator/metrics.go | karpenter_pods_{eviction_requests,drained}_total |
| pkg/controllers/nodeclaim/lifecycle/metrics.go | karpenter_nodeclaims_{instance_,}termination_duration_seconds |
| pkg/controllers/node/health/metrics.go | karpenter_nodeclaims_unhealthy_disrupted_total |
| pkg/controllers/provisioning/scheduling/metrics.go | karpenter_scheduler_* (a histogram, gauges) |
| pkg/controllers/state/metrics.go | karpenter_cluster_state_* (gauges, runtime/karpenter_state.py), |
| | karpenter_pods_scheduling_decision_duration_seconds (histogram) |
| pkg/controllers/metrics/node/controller.go | karpenter_nodes_{allocatable,total_pod_*,total_daemon_*, |
| | system_overhead,current_lifetime_seconds}, karpenter_cluster_utilization_percent (gauges) |
| pkg/controllers/metrics/nodepool/controller.go | karpenter_nodepools_{limit,usage} (gauges) |
| pkg/controllers/metrics/pod/controller.go | karpenter_pods_state, _unbound/_unstarted_time_seconds (gauges), |
| | karpenter_pods_startup_duration_seconds (summary), _bound_duration_seconds (histogram) |
| pkg/cloudprovider/metrics/cloudprovider.go | karpenter_cloudprovider_{duration_seconds,errors_total} |
| pkg/operator/operator.go | karpenter_build_info |
| provider: pkg/controllers/interruption/metrics.go | karpenter_interruption_* |
| provider: pkg/controllers/metrics/metrics.go, | karpenter_cloudprovider_instance_type_{offering_available, |
| pkg/providers/instancetype/metrics.go | offering_price_estimate,cpu_cores,memory_bytes} (gauges) |
| provider: pkg/providers/instance/metrics.go | karpenter_cloudprovider_instance_{launch,termination}_failures_total |
| controller-runtime (the performance dashboard) | controller_runtime_reconcile_{total,errors_total,time_seconds} |

The gauges that describe state are computed when scraped from the worker's watch cache
(runtime/karpenter_state.py).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric

from telemetry.metrics import REGISTRY
from telemetry.summary import QuantileSummary

# pkg/metrics/constants.go DurationBuckets: controller-runtime's thresholds plus values past 60 s
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
                    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
                    120, 150, 300, 450, 600)
RECONCILE_BUCKETS = tuple(b for b in DURATION_BUCKETS if b <= 60)  # controller-runtime's own (constants.go cites it)
_HOUR, _DAY = 3600, 86400
LIFETIME_BUCKETS = (900, 1800, 2700, _HOUR, 2 * _HOUR, 4 * _HOUR, 6 * _HOUR, 8 * _HOUR, 10 * _HOUR, 12 * _HOUR,
                    16 * _HOUR, 20 * _HOUR, _DAY, 2 * _DAY, 3 * _DAY, 5 * _DAY, 10 * _DAY, 15 * _DAY, 20 * _DAY,
                    25 * _DAY, 30 * _DAY)
INSTANCE_TERMINATION_BUCKETS = tuple(float(2 ** i) for i in range(11))  # ExponentialBuckets(1, 2, 11)
NODECLAIM_TERMINATION_BUCKETS = tuple(float(2 ** i) for i in range(12))  # ExponentialBuckets(1, 2, 12)
CONSOLIDATION_SCORE_BUCKETS = (0.1, 0.25, 0.33, 0.5, 1.0, 2.0, 5.0, 10.0)
DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)  # client_golang DefBuckets

DISRUPTED = ("reason", "nodepool", "capacity_type", "consolidation_policy", "termination_mode")
DECISION = ("decision", "reason", "consolidation_type")


class CommandDecision(StrEnum):
    """The `decision` values of the command metrics: decisions_total, decisions_by_nodepool_total and
    queue_failures_total (Karpenter's DecisionDim since v1.15, kubernetes-sigs/karpenter#3322)."""

    NO_OP = "no-op"
    REPLACE = "replace"
    DELETE = "delete"


class ApprovalDecision(StrEnum):
    """The `decision` values of the Balanced approval metrics: consolidation_moves_total and consolidation_score
    (Karpenter's ApprovalDim since v1.15, kubernetes-sigs/karpenter#3322). The label name stays `decision`."""

    APPROVED = "approved"
    REJECTED = "rejected"


def _c(name: str, doc: str, labels: tuple[str, ...] = ()) -> Counter:
    return Counter(name, doc, list(labels), registry=REGISTRY)


def _g(name: str, doc: str, labels: tuple[str, ...] = ()) -> Gauge:
    return Gauge(name, doc, list(labels), registry=REGISTRY)


def _h(name: str, doc: str, labels: tuple[str, ...], buckets: tuple[float, ...]) -> Histogram:
    return Histogram(name, doc, list(labels), buckets=buckets, registry=REGISTRY)


def _s(name: str, doc: str, labels: tuple[str, ...] = ()) -> QuantileSummary:
    summary = QuantileSummary(name, doc, labels)
    REGISTRY.register(summary)
    return summary


# --- pkg/metrics/metrics.go ---
NODECLAIMS_CREATED = _c("karpenter_nodeclaims_created", "Number of nodeclaims created in total by Karpenter.",
                        ("reason", "nodepool", "min_values_relaxed"))
NODECLAIMS_TERMINATED = _c("karpenter_nodeclaims_terminated", "Number of nodeclaims terminated in total by Karpenter.",
                           ("nodepool", "capacity_type", "zone"))
NODECLAIMS_DISRUPTED = _c("karpenter_nodeclaims_disrupted", "Number of nodeclaims disrupted in total by Karpenter.",
                          DISRUPTED)
PODS_DISRUPTION_INITIATED = _c("karpenter_pods_disruption_initiated",
                               "Number of pod disruptions initiated in total by Karpenter (reschedulable pods).",
                               DISRUPTED)
NODES_CREATED = _c("karpenter_nodes_created", "Number of nodes created in total by Karpenter.", ("nodepool", "zone"))
NODES_TERMINATED = _c("karpenter_nodes_terminated", "Number of nodes terminated in total by Karpenter.",
                      ("nodepool", "zone"))

# --- pkg/controllers/disruption/metrics.go ---
EVALUATION_DURATION = _h("karpenter_voluntary_disruption_decision_evaluation_duration_seconds",
                         "Duration of the disruption decision evaluation process in seconds.",
                         ("reason", "consolidation_type"), DURATION_BUCKETS)
DECISIONS = _c("karpenter_voluntary_disruption_decisions", "Number of disruption decisions performed.", DECISION)
DECISIONS_BY_NODEPOOL = _c("karpenter_voluntary_disruption_decisions_by_nodepool",
                           "Number of disruption decisions performed by nodepool.", ("nodepool", *DECISION))
ELIGIBLE_NODES = _g("karpenter_voluntary_disruption_eligible_nodes",
                    "Number of nodes eligible for disruption by Karpenter. Labeled by disruption reason.", ("reason",))
CONSOLIDATION_TIMEOUTS = _c("karpenter_voluntary_disruption_consolidation_timeouts",
                            "Number of times the Consolidation algorithm has reached a timeout.",
                            ("consolidation_type",))
FAILED_VALIDATIONS = _c("karpenter_voluntary_disruption_failed_validations",
                        "Number of candidates that were selected for disruption but failed validation.",
                        ("consolidation_type",))
ALLOWED_DISRUPTIONS = _g("karpenter_nodepools_allowed_disruptions",
                         "The number of nodes for a given NodePool that can be concurrently disrupting at a point in "
                         "time.",
                         ("nodepool", "reason"))
NODES_CONSUMING_BUDGETS = _g("karpenter_nodepools_nodes_consuming_budgets",
                             "The number of nodes consuming the budget of a nodepool at a point in time.",
                             ("nodepool", "reason"))
QUEUE_FAILURES = _c("karpenter_voluntary_disruption_queue_failures",
                    "The number of times that an enqueued disruption decision failed.", DECISION)
# v1.15-era (kubernetes-sigs/karpenter PR 3178, not in a release yet): label set as nodeflow records it
DRIFT_BACKOFFS = _c("karpenter_voluntary_disruption_drift_backoffs",
                    "Number of times a NodePool's drift backed off after its drift replacements failed.",
                    ("nodepool",))
CONSOLIDATION_SCORE = _h("karpenter_consolidation_score", "Score of balanced consolidation moves.",
                         ("decision", "nodepool", "policy"), CONSOLIDATION_SCORE_BUCKETS)
CONSOLIDATION_MOVES = _c("karpenter_consolidation_moves", "Number of balanced consolidation moves.",
                         ("decision", "nodepool", "policy"))
for _kind in ("multi", "single"):  # Karpenter's init() adds 0 for both, so rate() has a series from the start
    CONSOLIDATION_TIMEOUTS.labels(consolidation_type=_kind)

# --- pkg/controllers/node/termination/metrics.go, terminator/metrics.go ---
NODE_TERMINATION_DURATION = _s("karpenter_nodes_termination_duration_seconds",
                               "The time taken between a node's deletion request and the removal of its finalizer",
                               ("nodepool",))
NODES_DRAINED = _c("karpenter_nodes_drained", "The total number of nodes drained by Karpenter", ("nodepool",))
NODE_LIFETIME = _h("karpenter_nodes_lifetime_duration_seconds", "The lifetime duration of the nodes since creation.",
                   ("nodepool",), LIFETIME_BUCKETS)
EVICTION_REQUESTS = _c("karpenter_pods_eviction_requests",
                       "The total number of pod eviction requests made by Karpenter, labeled by response code",
                       ("code",))
PODS_DRAINED = _c("karpenter_pods_drained",
                  "The total number of pods drained during node termination by Karpenter, labeled by reason",
                  ("reason",))

# --- pkg/controllers/nodeclaim/lifecycle/metrics.go, node/health/metrics.go ---
INSTANCE_TERMINATION_DURATION = _h("karpenter_nodeclaims_instance_termination_duration_seconds",
                                   "Duration of CloudProvider Instance termination in seconds.", ("nodepool",),
                                   INSTANCE_TERMINATION_BUCKETS)
NODECLAIM_TERMINATION_DURATION = _h("karpenter_nodeclaims_termination_duration_seconds",
                                    "Duration of NodeClaim termination in seconds.", ("nodepool",),
                                    NODECLAIM_TERMINATION_BUCKETS)
UNHEALTHY_DISRUPTED = _c("karpenter_nodeclaims_unhealthy_disrupted",
                         "Number of unhealthy nodeclaims disrupted in total by Karpenter.",
                         ("condition", "nodepool", "capacity_type", "image_id"))

# --- pkg/controllers/provisioning/scheduling/metrics.go ---
SCHEDULING_DURATION = _h("karpenter_scheduler_scheduling_duration_seconds",
                         "Duration of scheduling simulations used for deprovisioning and provisioning in seconds.",
                         ("controller",), DURATION_BUCKETS)
QUEUE_DEPTH = _g("karpenter_scheduler_queue_depth", "The number of pods currently waiting to be scheduled.",
                 ("controller", "scheduling_id"))
UNFINISHED_WORK = _g("karpenter_scheduler_unfinished_work_seconds",
                     "How many seconds of work has been done that is in progress and hasn't been observed by "
                     "scheduling_duration_seconds.", ("controller", "scheduling_id"))
IGNORED_PODS = _g("karpenter_scheduler_ignored_pods_count", "Number of pods ignored during scheduling by Karpenter")
UNSCHEDULABLE_PODS = _g("karpenter_scheduler_unschedulable_pods_count", "The number of unschedulable Pods.",
                        ("controller",))

# --- pkg/controllers/state/metrics.go ---
POD_SCHEDULING_DECISION = _h("karpenter_pods_scheduling_decision_duration_seconds",
                             "The time it takes for Karpenter to first try to schedule a pod after it's been seen.",
                             (), DURATION_BUCKETS)

# --- pkg/controllers/metrics/pod/controller.go (observed by runtime/karpenter_state.py) ---
POD_STARTUP_DURATION = _s("karpenter_pods_startup_duration_seconds",
                          "The time from pod creation until the pod is running.")
POD_BOUND_DURATION = _h("karpenter_pods_bound_duration_seconds", "The time from pod creation until the pod is bound.",
                        (), DURATION_BUCKETS)

# --- pkg/cloudprovider/metrics/cloudprovider.go, pkg/operator/operator.go ---
CLOUDPROVIDER_DURATION = _h("karpenter_cloudprovider_duration_seconds",
                            "Duration of cloud provider method calls. Labeled by the controller, method name and "
                            "provider.",
                            ("controller", "method", "provider"), DEFAULT_BUCKETS)
CLOUDPROVIDER_ERRORS = _c("karpenter_cloudprovider_errors", "Total number of errors returned from CloudProvider calls.",
                          ("controller", "method", "provider", "error"))
BUILD_INFO = _g("karpenter_build_info",
                "A metric with a constant '1' value labeled by version from which karpenter was built.",
                ("version", "goversion", "goarch", "commit"))

# --- aws/karpenter-provider-aws ---
INTERRUPTION_RECEIVED = _c("karpenter_interruption_received_messages",
                           "Count of messages received from the SQS queue. Broken down by message type and whether the "
                           "message was actionable.", ("message_type",))
INTERRUPTION_DELETED = _c("karpenter_interruption_deleted_messages", "Count of messages deleted from the SQS queue.")
INTERRUPTION_LATENCY = _h("karpenter_interruption_message_queue_duration_seconds",
                          "Amount of time an interruption message is on the queue before it is processed by karpenter.",
                          (), DURATION_BUCKETS)
OFFERING_AVAILABLE_DOC = "Instance type offering availability, based on instance type, capacity type, and zone"
OFFERING_PRICE_DOC = ("Instance type offering estimated hourly price used when making informed decisions on node cost "
                      "calculation, based on instance type, capacity type, and zone.")


@dataclass(frozen=True, slots=True)
class TypeRow:
    """What the provider's instance-type gauges show of one type: its vCPUs, memory and offerings."""

    name: str
    cpu_cores: float
    memory_bytes: float
    offerings: Iterable[tuple[str, str, bool, float]]  # (capacity type, zone, available, price)


class InstanceTypeGauges:
    """karpenter_cloudprovider_instance_type_{cpu_cores,memory_bytes,offering_available,offering_price_estimate},
    built when scraped from the catalog in force (`set_source`), not stored: as labelled Gauges a discovered
    region's 1,366 types and 12,778 offerings held 25,000 children, 18.6 MiB of the worker's memory
    (docs/benchmarks.md). A type or offering gone from the catalog leaves no stale series, as `gauge.clear()` did."""

    def __init__(self) -> None:
        self._source: Callable[[], Iterable[TypeRow]] | None = None

    def set_source(self, source: Callable[[], Iterable[TypeRow]] | None) -> None:
        self._source = source

    def describe(self) -> Iterator[Metric]:
        yield from self._families()

    def collect(self) -> Iterator[Metric]:
        source = self._source
        families = self._families()
        cpu, memory, available, price = families
        for row in source() if source is not None else ():
            cpu.add_metric([row.name], row.cpu_cores)
            memory.add_metric([row.name], row.memory_bytes)
            for capacity_type, zone, is_available, usd in row.offerings:
                labels = [row.name, capacity_type, zone]
                available.add_metric(labels, 1.0 if is_available else 0.0)
                price.add_metric(labels, usd)
        yield from families

    @staticmethod
    def _families() -> list[GaugeMetricFamily]:
        offering = ["instance_type", "capacity_type", "zone"]
        return [GaugeMetricFamily("karpenter_cloudprovider_instance_type_cpu_cores",
                                  "VCPUs cores for a given instance type.", labels=["instance_type"]),
                GaugeMetricFamily("karpenter_cloudprovider_instance_type_memory_bytes",
                                  "Memory, in bytes, for a given instance type.", labels=["instance_type"]),
                GaugeMetricFamily("karpenter_cloudprovider_instance_type_offering_available",
                                  OFFERING_AVAILABLE_DOC, labels=offering),
                GaugeMetricFamily("karpenter_cloudprovider_instance_type_offering_price_estimate",
                                  OFFERING_PRICE_DOC, labels=offering)]


INSTANCE_TYPES = InstanceTypeGauges()
REGISTRY.register(INSTANCE_TYPES)
LAUNCH_FAILURES = _c("karpenter_cloudprovider_instance_launch_failures",
                     "Number of instance launch (CreateFleet offering) failures, dimensioned by availability zone, "
                     "zone ID, capacity type, and launch failure reason.",
                     ("zone", "zone_id", "capacity_type", "reason"))
TERMINATION_FAILURES = _c("karpenter_cloudprovider_instance_termination_failures",
                          "Number of instance termination (TerminateInstances) failures, dimensioned by availability "
                          "zone and zone ID.", ("zone", "zone_id"))

# --- controller-runtime (Karpenter's performance dashboard) ---
RECONCILE_TOTAL = _c("controller_runtime_reconcile", "Total number of reconciliations per controller",
                     ("controller", "result"))
RECONCILE_ERRORS = _c("controller_runtime_reconcile_errors", "Total number of reconciliation errors per controller",
                      ("controller",))
RECONCILE_TIME = _h("controller_runtime_reconcile_time_seconds", "Length of time per reconciliation per controller",
                    ("controller",), RECONCILE_BUCKETS)

BUILD_INFO.labels(version="nodeflow", goversion="", goarch="", commit="").set(1)


def snake(value: str) -> str:
    """Karpenter's pretty.ToSnakeCase for a reason ("Underutilized" -> "underutilized", "SpotInterruption" ->
    "spot_interruption"), the form its reason labels take."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", value).lower()


def termination_mode(claim: dict[str, Any] | None) -> str:
    """pkg/utils/nodeclaim DisruptionTerminationMode: no terminationGracePeriod graceful, <= 0 forceful,
    else eventual. A Go duration is <= 0 when it is negative or all its digits are zero ("0s", "0h0m")."""
    grace = str(((claim or {}).get("spec") or {}).get("terminationGracePeriod") or "").strip()
    if not grace:
        return "graceful"
    if grace.startswith("-") or not re.sub(r"[^1-9]", "", grace):
        return "forceful"
    return "eventual"


@contextmanager
def reconcile(controller: str) -> Iterator[None]:
    """Time one pass of a nodeflow controller as controller-runtime times a Reconcile (result success or error)."""
    start = time.perf_counter()
    try:
        yield
    except Exception:
        RECONCILE_TOTAL.labels(controller=controller, result="error").inc()
        RECONCILE_ERRORS.labels(controller=controller).inc()
        raise
    else:
        RECONCILE_TOTAL.labels(controller=controller, result="success").inc()
    finally:
        RECONCILE_TIME.labels(controller=controller).observe(time.perf_counter() - start)


@contextmanager
def cloudprovider_call(controller: str, method: str, error: Callable[[Exception], str] | None = None
                       ) -> Iterator[None]:
    """Karpenter's cloudprovider decorator (pkg/cloudprovider/metrics): time a Create/Delete/Get/List call; an
    error is counted with its typed name (`error(exc)`, e.g. InsufficientCapacityError) or "" as Karpenter does."""
    start = time.perf_counter()
    labels = {"controller": controller, "method": method, "provider": "aws"}
    try:
        yield
    except Exception as exc:
        CLOUDPROVIDER_ERRORS.labels(**labels, error=error(exc) if error else "").inc()
        raise
    finally:
        CLOUDPROVIDER_DURATION.labels(**labels).observe(time.perf_counter() - start)


def _claim_labels(claim: dict[str, Any]) -> dict[str, str]:
    return (claim.get("metadata") or {}).get("labels") or {}


def record_node_created(claim: dict[str, Any]) -> None:
    """karpenter_nodes_created_total when a claim's Node registers (nodeclaim/lifecycle/registration.go)."""
    claim_labels = _claim_labels(claim)
    NODES_CREATED.labels(nodepool=claim_labels.get("karpenter.sh/nodepool", ""),
                         zone=claim_labels.get("topology.kubernetes.io/zone", "")).inc()


def record_liveness_deleted(claim: dict[str, Any], reason: str, reschedulable_pods: int | None = None) -> None:
    """karpenter_nodeclaims_disrupted_total for a claim the lifecycle controller (launch or registration timeout)
    or garbage collection deleted (nodeclaim/lifecycle/liveness.go, nodeclaim/garbagecollection); with
    `reschedulable_pods` (garbage collection, Karpenter v1.15) karpenter_pods_disruption_initiated_total too."""
    claim_labels = _claim_labels(claim)
    values = {"reason": reason, "nodepool": claim_labels.get("karpenter.sh/nodepool", ""),
              "capacity_type": claim_labels.get("karpenter.sh/capacity-type", ""), "consolidation_policy": "",
              "termination_mode": termination_mode(claim)}
    NODECLAIMS_DISRUPTED.labels(**values).inc()
    if reschedulable_pods is not None:
        PODS_DISRUPTION_INITIATED.labels(**values).inc(reschedulable_pods)
