"""Prometheus metrics of nodeflow's decisions, in one module-level registry the worker exposes.

A flat list of metric definitions: each area appends its own counters here, so `/metrics` shows
everything from one registry and names cannot collide.
"""

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from telemetry.drains import RunningDrains

REGISTRY = CollectorRegistry(auto_describe=True)

# --- planner and disruption (docs/decisions.md §10) ---
DISRUPTION_DECISIONS = Counter(
    "nodeflow_disruption_decisions_total",
    "Disruption commands the planner decided to start, by method, reason and decision (delete|replace).",
    ["method", "reason", "decision"],
    registry=REGISTRY,
)
DISRUPTION_VALIDATIONS = Counter(
    "nodeflow_disruption_validations_total",
    "Disruption commands validated before tainting, by method and result (valid, or why not: "
    "planning/disruption/validation.py Verdict).",
    ["method", "result"],
    registry=REGISTRY,
)
DISRUPTION_OUTCOMES = Counter(
    "nodeflow_disruption_outcomes_total",
    "Disruption commands that finished, by reason and outcome (Succeeded|RolledBack|Invalid|Cancelled).",
    ["reason", "outcome"],
    registry=REGISTRY,
)
DISRUPTION_BLOCKED = Counter(
    "nodeflow_disruption_blocked_total",
    "Nodes the planner found blocked from voluntary disruption, counted once per pass.",
    ["nodepool"],
    registry=REGISTRY,
)
POLICY_HOOK_CALLS = Counter(
    "nodeflow_policy_hook_calls_total",
    "DisruptionPolicy HTTP calls by hook (preDisruption, notify) and result (ok, refused, unreachable).",
    ["hook", "result"],
)
PLANNER_PASSES = Counter(
    "nodeflow_planner_passes_total",
    "Planner passes run, by result (commands|idle|paused|skipped).",
    ["result"],
    registry=REGISTRY,
)
PLANNER_ELIGIBLE_NODES = Gauge(
    "nodeflow_planner_cluster_nodes",
    "Nodes seen by the last planner pass.",
    registry=REGISTRY,
)
NODE_REPAIRS = Counter(
    "nodeflow_node_repairs_total",
    "Unhealthy nodes the planner handed to a forceful termination (node repair), by NodePool and the condition.",
    ["nodepool", "condition"],
    registry=REGISTRY,
)
NODE_REPAIRS_BLOCKED = Counter(
    "nodeflow_node_repairs_blocked_total",
    "Planner passes in which a NodePool's repairs were held back because more than 20% of its nodes are unhealthy.",
    ["nodepool"],
    registry=REGISTRY,
)
NODE_REPAIRS_ZONE_HELD = Counter(
    "nodeflow_node_repairs_zone_outage_total",
    "Planner passes in which a NodePool's repairs in a zone were held back: most of the zone's nodes are unhealthy "
    "(an outage, not a node fault).",
    ["nodepool", "zone"],
    registry=REGISTRY,
)
NODE_REPAIRS_DISABLED = Counter(
    "nodeflow_node_repairs_disabled_total",
    "Planner passes in which a NodePool's unhealthy nodes due for repair were left alone because its "
    "DisruptionPolicy sets repair.enabled: false.",
    ["nodepool"],
    registry=REGISTRY,
)
NODE_REPAIRS_VETOED = Counter(
    "nodeflow_node_repairs_vetoed_total",
    "Planner passes in which an unhealthy node due for repair carried karpenter.sh/do-not-repair.",
    ["nodepool"],
    registry=REGISTRY,
)

# --- interruption intake (docs/decisions.md §10) ---
INTERRUPTION_MESSAGES = Counter(
    "nodeflow_interruption_messages_total",
    "Interruption queue messages received, by kind (SpotInterruption|RebalanceRecommendation|ScheduledChange|"
    "StateChange|Unknown|Malformed).",
    ["kind"],
    registry=REGISTRY,
)
INTERRUPTION_ACTIONS = Counter(
    "nodeflow_interruption_actions_total",
    "What the intake did per affected instance (PrespinAndTerminate|Terminate|Event|Ignore|NoNode).",
    ["action"],
    registry=REGISTRY,
)
INTERRUPTION_FAILURES = Counter(
    "nodeflow_interruption_failures_total",
    "Messages whose handling failed, by outcome (retry: left for redelivery; dropped: gave up after max receives).",
    ["outcome"],
    registry=REGISTRY,
)
INTERRUPTION_MESSAGE_AGE = Histogram(
    "nodeflow_interruption_message_age_seconds",
    "Time from a message being sent to the queue to its workflows being started or signalled.",
    buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300),
    registry=REGISTRY,
)

# --- termination and budgets (docs/decisions.md §10; set by activities/kube*.py and the planner pass) ---
EVICTIONS = Counter(
    "nodeflow_evictions_total",
    "Eviction API calls by HTTP response code (201 evicted, 429 PDB refused, 500 several PDBs, 404 gone).",
    ["code"],
    registry=REGISTRY,
)
DRAIN_DURATION = Histogram(
    "nodeflow_drain_duration_seconds",
    "Time from a termination's start until its node had no pods left to evict.",
    buckets=(1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600),
    registry=REGISTRY,
)
NODES_TERMINATED = Counter(
    "nodeflow_nodes_terminated_total",
    "Nodes whose termination finished (finalizers removed), by termination reason.",
    ["reason"],
    registry=REGISTRY,
)
ALLOWED_DISRUPTIONS = Gauge(
    "nodeflow_allowed_disruptions",
    "Nodes the disruption budgets allow to disrupt now, per NodePool and reason (last planner pass).",
    ["nodepool", "reason"],
    registry=REGISTRY,
)
POLICY_HELD = Gauge(
    "nodeflow_disruption_policy_held",
    "1 while a DisruptionPolicy's calendar holds voluntary disruption of the NodePool (last planner pass), by hold.",
    ["nodepool", "hold"],
    registry=REGISTRY,
)
SPOT_FALLBACKS = Counter(
    "nodeflow_spot_fallbacks_total",
    "NodeClaims launched on-demand because EC2 refused spot lately, in a pool that admits spot (recorded on the "
    "claim as nodeflow.dev/spot-fallback; docs/semantics.md §15.5).",
    ["nodepool"],
    registry=REGISTRY,
)
SPOT_FALLBACKS_CAPPED = Counter(
    "nodeflow_spot_fallbacks_capped_total",
    "On-demand fallback launches a DisruptionPolicy's spot.maxOnDemandFraction refused (their pods stay pending).",
    ["nodepool"],
    registry=REGISTRY,
)
PROVISIONING_BLOCKED = Counter(
    "nodeflow_provisioning_blocked_total",
    "Pending pods a provisioning plan left pending because a DisruptionPolicy forbids the launch they need, by "
    "NodePool and reason (CostLimit: limits.costPerHour; Deprecated: provisioning.deprecated; docs/semantics.md "
    "§15.10-15.11).",
    ["nodepool", "reason"],
    registry=REGISTRY,
)
COST_LIMIT_HEADROOM = Gauge(
    "nodeflow_cost_limit_headroom_dollars_per_hour",
    "What a DisruptionPolicy's limits.costPerHour leaves for new nodes after the last provisioning plan (limit less "
    "its pools' nodes, launches in flight and the plan's launches; negative when over), by policy.",
    ["policy"],
    registry=REGISTRY,
)
CONSOLIDATION_SKIPPED = Counter(
    "nodeflow_consolidation_skipped_total",
    "Consolidation moves a DisruptionPolicy's savings threshold refused, counted once per pass.",
    ["nodepool"],
    registry=REGISTRY,
)

# --- cluster cache from watches (runtime/cluster_cache.py) ---
CLUSTER_CACHE_LISTS = Counter(
    "nodeflow_cluster_cache_lists_total",
    "Full LISTs the cluster cache made, by kind (the first sync and every re-list).",
    ["kind"],
    registry=REGISTRY,
)
CLUSTER_CACHE_WATCH_EVENTS = Counter(
    "nodeflow_cluster_cache_watch_events_total",
    "Watch events the cluster cache applied, by kind and type (ADDED|MODIFIED|DELETED).",
    ["kind", "type"],
    registry=REGISTRY,
)
CLUSTER_CACHE_RELISTS = Counter(
    "nodeflow_cluster_cache_relists_total",
    "Re-LISTs forced by 410 Gone (the watch history after our resourceVersion was compacted), by kind.",
    ["kind"],
    registry=REGISTRY,
)
CLUSTER_CACHE_BOOKMARKS = Counter(
    "nodeflow_cluster_cache_bookmarks_total",
    "BOOKMARK events received (they move the resume point without an object change), by kind.",
    ["kind"],
    registry=REGISTRY,
)
CLUSTER_CACHE_ERRORS = Counter(
    "nodeflow_cluster_cache_errors_total",
    "Failed LISTs, refused watches and broken watch streams of the cluster cache, by kind.",
    ["kind"],
    registry=REGISTRY,
)
CLUSTER_CACHE_OBJECTS = Gauge(
    "nodeflow_cluster_cache_objects",
    "Objects currently held by the cluster cache, by kind.",
    ["kind"],
    registry=REGISTRY,
)

# --- the planner on the cluster cache (activities/planning_runner.py) ---
PLANNER_PASSES_SKIPPED = Counter(
    "nodeflow_planner_passes_skipped_total",
    "Planner passes (and validations) that did not plan because the worker's cluster cache was not fresh, by "
    "reason (NotSynced|Relisting|WatchBroken|Stopped) and outcome (retried: failed for Temporal to retry, maybe "
    "on another worker; skipped: the pass returned without a decision).",
    ["reason", "outcome"],
    registry=REGISTRY,
)

# --- alerting signals (deploy/monitoring/nodeflow-rules.yaml) ---
PLANNER_PASS_ERRORS = Counter(
    "nodeflow_planner_pass_errors_total",
    "Planner pass attempts that raised (Temporal retries them), by exception class; a stale cluster cache is "
    "counted in nodeflow_planner_passes_skipped_total instead.",
    ["error"],
    registry=REGISTRY,
)
WORKFLOW_FAILURES = Counter(
    "nodeflow_workflow_failures_total",
    "Workflow executions on this worker that ended failed, by workflow type (from the Temporal SDK's metrics).",
    ["workflow_type"],
    registry=REGISTRY,
)
WORKFLOW_TASK_FAILURES = Counter(
    "nodeflow_workflow_task_failures_total",
    "Workflow tasks that failed and are retried by Temporal until fixed (a bug or a non-determinism error), by "
    "workflow type and the SDK's failure reason.",
    ["workflow_type", "failure_reason"],
    registry=REGISTRY,
)
ACTIVITY_FAILURES = Counter(
    "nodeflow_activity_failures_total",
    "Activity attempts that failed (Temporal retries most of them), by activity type.",
    ["activity_type"],
    registry=REGISTRY,
)
OFFERINGS_MARKED_UNAVAILABLE = Counter(
    "nodeflow_offerings_marked_unavailable_total",
    "Offerings (instance type, zone, capacity type) marked unavailable for 3 minutes, by reason "
    "(InsufficientInstanceCapacity, UnfulfillableCapacity, Unsupported, SpotInterruption; "
    "planning/pricing/unavailable_offerings.py).",
    ["reason"],
    registry=REGISTRY,
)
LAUNCH_TEMPLATES_DELETED = Counter(
    "nodeflow_launch_templates_deleted_total",
    "Launch templates nodeflow deleted, by reason (unused: no launch used it for a minute; nodeclass_deleted: its "
    "EC2NodeClass was deleted; activities/launch_templates.py).",
    ["reason"],
    registry=REGISTRY,
)
PLANNER_PAUSED = Gauge(
    "nodeflow_planner_paused",
    "1 while the planner schedule is paused (`nodeflow pause`), 0 otherwise, as this worker last read it.",
    registry=REGISTRY,
)
RUNNING_DRAINS = RunningDrains("nodeflow_drain_started_timestamp_seconds")
REGISTRY.register(RUNNING_DRAINS)

# drain.jobs Wait (docs/semantics.md §15.8): pods the worker's running drains leave to finish, per node (summed)
DRAIN_AWAITING_COMPLETION = Gauge(
    "nodeflow_drain_pods_awaiting_completion",
    "Job pods (and pods annotated nodeflow.dev/wait-for-completion) that this worker's running drains leave to "
    "finish under a DisruptionPolicy's drain.jobs Wait",
    registry=REGISTRY)
_awaiting_completion: dict[str, int] = {}


def set_awaiting_completion(node: str, pods: int) -> None:
    """How many pods the drain of `node` leaves to finish now (0: none, or the drain ended)."""
    if pods > 0:
        _awaiting_completion[node] = pods
    else:
        _awaiting_completion.pop(node, None)
    DRAIN_AWAITING_COMPLETION.set(sum(_awaiting_completion.values()))

NODECLAIM_LIFECYCLE = Counter(
    "nodeflow_nodeclaim_lifecycle_transitions_total",
    "NodeClaims nodeflow moved through a lifecycle step (launched: launch record written from the instance by the "
    "lifecycle controller; registered; initialized)",
    ["step"], registry=REGISTRY)
NODECLAIMS_LIFECYCLE_DELETED = Counter(
    "nodeflow_nodeclaims_lifecycle_deleted_total",
    "NodeClaims the lifecycle controller or garbage collection deleted, by Karpenter's reason "
    "(launch_timeout, registration_timeout, garbage_collected)",
    ["reason"], registry=REGISTRY)
INSTANCES_GARBAGE_COLLECTED = Counter(
    "nodeflow_instances_garbage_collected_total",
    "EC2 instances of this cluster that no NodeClaim accounted for, terminated by garbage collection",
    registry=REGISTRY)

# --- instance types discovered from the cloud (gateways/instance_types.py) ---
INSTANCE_TYPE_REFRESHES = Counter(
    "nodeflow_instance_type_refreshes_total",
    "Instance-type catalog refreshes from EC2 and the Pricing API, by result (ok|failed: the last good catalog "
    "is kept).",
    ["result"],
    registry=REGISTRY,
)
INSTANCE_TYPE_PRICE_FALLBACKS = Counter(
    "nodeflow_instance_type_price_fallbacks_total",
    "Refreshes whose prices came from a fallback, by prices (on-demand|spot) and source (price-table|"
    "bundled-catalog|last-known).",
    ["prices", "source"],
    registry=REGISTRY,
)
INSTANCE_TYPES_DISCOVERED = Gauge(
    "nodeflow_instance_types_discovered",
    "Instance types in the catalog of the last successful refresh.",
    registry=REGISTRY,
)

# --- the worker's event loop (runtime/loop_lag.py) ---
EVENT_LOOP_LAG = Histogram(
    "nodeflow_worker_event_loop_lag_seconds",
    "How much later than asked the worker's event loop woke a task sleeping 0.5 s: the drains, their heartbeats and "
    "the in-worker controllers all wait on this loop.",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 60),
    registry=REGISTRY,
)

ACTIVITY_SLOTS = Gauge(
    "nodeflow_activity_slots",
    "The worker's activity slots by state: running (an activity function runs) and waiting (granted to Temporal's "
    "poll but not yet begun, an idle worker's pollers' included; at most 16). Waiting at 16 for long means the "
    "worker begins tasks no faster than it takes them in: the rest wait in Temporal, so add a replica.",
    ["state"],
    registry=REGISTRY,
)

ACTIVITY_START_DELAY = Histogram(
    "nodeflow_activity_start_delay_seconds",
    "Time from Temporal recording an activity attempt started to the worker running its function, by activity type. "
    "The attempt's heartbeat timeout runs from Temporal's start: a drain that begins 15 s late is already lost.",
    ["activity_type"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 60),
    registry=REGISTRY,
)

# --- leader election of the in-worker controllers (runtime/leader.py) ---
LEADER = Gauge(
    "nodeflow_leader",
    "1 while this worker runs the in-worker controllers (it holds their Lease, or leader election is off), 0 "
    "otherwise.",
    registry=REGISTRY,
)
LEADER_TRANSITIONS = Counter(
    "nodeflow_leader_transitions_total",
    "Changes of this worker's leadership, by transition (acquired, lost: a renewal failed past the renew deadline "
    "or another holder showed, released: handed back at shutdown).",
    ["transition"],
    registry=REGISTRY,
)

# --- pod deletion cost (runtime/pod_deletion_cost.py, feature gate PodDeletionCostManagement) ---
POD_DELETION_COST_WRITES = Counter(
    "nodeflow_pod_deletion_cost_writes_total",
    "Pods whose controller.kubernetes.io/pod-deletion-cost nodeflow patched, by action (set: written or changed, "
    "remove: its own cost taken off).",
    ["action"],
    registry=REGISTRY,
)
POD_DELETION_COST_RANKED_NODES = Gauge(
    "nodeflow_pod_deletion_cost_ranked_nodes",
    "Nodes the last deletion-cost ranking ordered (the ones whose ReplicaSet pods get a negative cost).",
    registry=REGISTRY,
)

# --- v1.15 scheduling inputs (docs/semantics.md §3.5; set once per planner pass by activities/planning_runner.py) ---
SCHEDULING_DEFAULT_SPREAD_PODS = Gauge(
    "nodeflow_scheduling_default_spread_pods",
    "Pods the last planner pass gave the cluster-default topology spread constraints (--default-topology-spread).",
    registry=REGISTRY,
)
SCHEDULING_PODS_RESIZING = Gauge(
    "nodeflow_scheduling_pods_resizing",
    "Pods the last planner pass counted at what their status reports (an in-place resize) rather than their spec.",
    registry=REGISTRY,
)
SCHEDULING_VOLUME_LIMITED_PODS = Gauge(
    "nodeflow_scheduling_volume_limited_pods",
    "Pods the last planner pass's simulations kept off an existing node for its volume attachment limit "
    "(they went to a new node or nowhere).",
    registry=REGISTRY,
)

# --- the cloud's own failures (gateways/ec2.py, docs/reliability.md#the-clouds-own-failures) ---
CLOUD_API_ERRORS = Counter(
    "nodeflow_cloud_api_errors_total",
    "EC2 calls that failed, by operation and kind (throttled|insufficient_capacity|unauthorized|not_found|other); "
    "a throttled call the gateway retried counts once per failed try.",
    ["operation", "kind"],
    registry=REGISTRY,
)
CLOUD_API_RETRIES = Counter(
    "nodeflow_cloud_api_retries_total",
    "EC2 calls the gateway tried again after a throttling answer (RequestLimitExceeded), after a jittered backoff.",
    ["operation"],
    registry=REGISTRY,
)
CLOUD_SDK_RETRIES = Counter(
    "nodeflow_cloud_api_sdk_retries_total",
    "EC2 requests botocore's standard retry mode sent again (throttling, 5xx, a dropped connection) before the "
    "call returned or failed: the attempts behind nodeflow_cloud_api_retries_total's.",
    ["operation"],
    registry=REGISTRY,
)
CLOUD_RATE_LIMIT_WAIT = Counter(
    "nodeflow_cloud_rate_limit_wait_seconds_total",
    "Seconds EC2 calls waited for the worker's own call-rate limit (--ec2-max-calls-per-second) before going out.",
    registry=REGISTRY,
)
