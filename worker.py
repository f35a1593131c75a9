"""The nodeflow worker process: `python worker.py` in-cluster (flags or environment, see docs/configuration.md).

Wiring only: it reads the configuration, builds the clients and hands them to `runtime.worker_loop.run_worker`,
which runs the Temporal worker and the deletion watcher; activities are built in `runtime/wiring.py`.
"""

from __future__ import annotations

if __name__ == "__main__":  # first, before the imports below bring the kubernetes client in: only what is used
    from runtime import startup_gc
    from runtime.lean_kubernetes import install

    startup_gc.pause()  # no cyclic collection while the modules load: main() resumes it
    install()

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Sequence
from datetime import timedelta

from temporalio.client import Client

from api.duration import DurationError, parse_duration
from client.connection import InsecureTemporalAddress, connect_patiently, forward_core_logs
from client.nodeclass_schedule import ensure_nodeclass_schedule
from client.planner_schedule import ensure_planner_schedule, planner_schedule_id
from contracts.disruption import DisruptionSettings
from contracts.fleet import FLEET_TASK_QUEUE
from contracts.search_attributes import TASK_QUEUE
from runtime import startup_gc
from runtime.cloud_clients import (
    Ec2CallRate,
    RegionNotConfigured,
    aws_clients,
    kube_api_client,
    pricing_client,
    resolve_region,
)
from runtime.fleet_worker import run_fleet_worker
from runtime.health import ReadinessCheck, metrics_bind, parse_metrics_address, start_health_server
from runtime.kube_version import kubeconfig_version_problem
from runtime.leader import DEFAULT_LEASE_NAME, ElectionSettings
from runtime.malloc_tuning import limit_arenas
from runtime.settings import Deps, Settings, configure_scheduling
from runtime.temporal_metrics import new_buffer, pump, track_planner_pause
from runtime.thread_profile import ThreadProfiles
from runtime.worker_loop import run_worker
from telemetry.logs import JsonFormatter

log = logging.getLogger("nodeflow.worker")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Every flag defaults to its NODEFLOW_* environment variable (docs/configuration.md lists both)."""
    p = argparse.ArgumentParser(prog="worker.py", description="Run the nodeflow Temporal worker and watcher.")
    _temporal_args(p)
    _cluster_args(p)
    _launch_and_ops_args(p)
    _election_args(p)
    args = p.parse_args(argv)
    try:
        election_settings(args)
    except ValueError as exc:  # e.g. a renew deadline past the lease duration: refused before connecting
        p.error(str(exc))
    return args


def _env_flag(name: str) -> bool:
    """A boolean environment setting: 1, true or yes (any case) is on."""
    return (os.environ.get(name) or "").lower() in ("1", "true", "yes")


def _temporal_args(p: argparse.ArgumentParser) -> None:
    """Where Temporal is, how to reach it, and which task queues this worker polls."""
    env = os.environ.get
    p.add_argument("--address", default=env("NODEFLOW_TEMPORAL_ADDRESS"), help="Temporal host:port")
    p.add_argument("--namespace", default=env("NODEFLOW_TEMPORAL_NAMESPACE"), help="Temporal namespace")
    p.add_argument("--api-key", default=env("NODEFLOW_TEMPORAL_API_KEY"), help="Temporal Cloud API key")
    p.add_argument("--tls-cert", default=env("NODEFLOW_TEMPORAL_TLS_CERT"))
    p.add_argument("--tls-key", default=env("NODEFLOW_TEMPORAL_TLS_KEY"))
    p.add_argument("--tls-ca", default=env("NODEFLOW_TEMPORAL_TLS_CA"))
    p.add_argument("--temporal-connect-timeout", type=float,
                   default=float(env("NODEFLOW_TEMPORAL_CONNECT_TIMEOUT") or 300),
                   help="seconds to keep retrying an unreachable Temporal at start (a server restart) before exiting 1")
    p.add_argument("--malloc-arenas", type=int, default=int(env("NODEFLOW_MALLOC_ARENAS") or 2),
                   help="glibc malloc arenas (0: glibc's default of 8 per core); MALLOC_ARENA_MAX wins when set")
    p.add_argument("--allow-insecure-temporal", action="store_true",
                   default=_env_flag("NODEFLOW_TEMPORAL_ALLOW_INSECURE"),
                   help="connect in plaintext to a Temporal address that is not loopback (trusted networks only)")
    p.add_argument("--task-queue", default=env("NODEFLOW_TASK_QUEUE", TASK_QUEUE),
                   help="this cluster's queue; in a fleet each cluster has its own, e.g. nodeflow-<cluster>")
    p.add_argument("--fleet-task-queue", default=env("NODEFLOW_FLEET_TASK_QUEUE"),
                   help="also run fleet rollouts (FleetRolloutWorkflow) from this queue, e.g. nodeflow-fleet")
    p.add_argument("--fleet-only", action="store_true", default=_env_flag("NODEFLOW_FLEET_ONLY"),
                   help="run only fleet rollouts (no cluster: no Kubernetes or AWS access needed), from "
                        "--fleet-task-queue or nodeflow-fleet")


def _cluster_args(p: argparse.ArgumentParser) -> None:
    """The cluster and AWS endpoints, and the controllers that run beside the workflows (watcher, watch cache,
    pending-pod intake, node repair, cancel hold)."""
    env = os.environ.get
    p.add_argument("--kubeconfig", default=env("KUBECONFIG"), help="default: in-cluster config")
    p.add_argument("--region", default=None,
                   help="AWS region of every AWS client (default: AWS_REGION, then AWS_DEFAULT_REGION)")
    p.add_argument("--ec2-endpoint", default=env("NODEFLOW_EC2_ENDPOINT"), help="e.g. a moto_server URL")
    p.add_argument("--sqs-endpoint", default=env("NODEFLOW_SQS_ENDPOINT"))
    p.add_argument("--ec2-max-calls-per-second", type=float,
                   default=float(env("NODEFLOW_EC2_MAX_CALLS_PER_SECOND", "50")),
                   help="the worker's EC2 request rate limit (a token bucket; <= 0: unlimited)")
    p.add_argument("--ec2-call-burst", type=float, default=float(env("NODEFLOW_EC2_CALL_BURST", "100")),
                   help="EC2 requests the worker may make at once above --ec2-max-calls-per-second")
    p.add_argument("--no-watch", action="store_true", help="do not run the deletion watcher")
    p.add_argument("--no-cluster-cache", action="store_true",
                   default=_env_flag("NODEFLOW_NO_CLUSTER_CACHE"),
                   help="planner passes and the deletion watcher LIST the cluster instead of reading the watch cache")
    p.add_argument("--resync-seconds", type=float, default=float(env("NODEFLOW_RESYNC_SECONDS", "30")))
    p.add_argument("--no-provisioning", action="store_true",
                   default=_env_flag("NODEFLOW_NO_PROVISIONING"),
                   help="do not run the pending-pod intake (no ProvisioningWorkflow for Unschedulable pods)")
    p.add_argument("--batch-idle-duration", type=float, default=float(env("NODEFLOW_BATCH_IDLE_DURATION", "1")),
                   help="seconds: a provisioning batch closes this long after its last new pending pod")
    p.add_argument("--batch-max-duration", type=float, default=float(env("NODEFLOW_BATCH_MAX_DURATION", "10")),
                   help="seconds: a provisioning batch closes at most this long after it opened")
    p.add_argument("--launch-timeout", type=_seconds, default=env("NODEFLOW_LAUNCH_TIMEOUT", "1m"),
                   help="one provisioning launch attempt; a worker killed mid-launch delays the batch this long")
    p.add_argument("--sticky-queue-timeout", type=_seconds, default=env("NODEFLOW_STICKY_QUEUE_TIMEOUT", "10s"),
                   help="a workflow task for this worker's cache goes to any worker after this (a dead worker's wait)")
    p.add_argument("--max-concurrent-activities", type=_positive,
                   default=env("NODEFLOW_MAX_CONCURRENT_ACTIVITIES", "500"),
                   help="activities this worker runs at once (its Temporal slots); more wait on the server, where no "
                        "heartbeat timeout runs yet. On a small worker lower it (about 100 per core, as Karpenter's "
                        "termination concurrency): a burst of drains then loses few attempts to heartbeat timeouts")
    p.add_argument("--launch-api", choices=["fleet", "run-instances"], default=env("NODEFLOW_LAUNCH_API", "fleet"),
                   help="how a NodeClaim's instance is asked of EC2: one CreateFleet over its offerings, as "
                        "Karpenter (default), or RunInstances per offering, cheapest first")
    _disruption_args(p)


def _disruption_args(p: argparse.ArgumentParser) -> None:
    """Node repair (when a node counts as unhealthy, which path replaces it) and the settings disruptions read: the
    default topology spread, the cancel hold, the minimum drain time, feature gates."""
    env = os.environ.get
    p.add_argument("--node-repair-toleration", type=_seconds, default=env("NODEFLOW_NODE_REPAIR_TOLERATION", "30m"),
                   help="how long a node may stay Ready False/Unknown before it is replaced (Go duration)")
    p.add_argument("--node-repair-condition", action="append", metavar="TYPE=STATUS:DURATION",
                   default=[c for c in (env("NODEFLOW_NODE_REPAIR_CONDITIONS") or "").split(",") if c.strip()],
                   help="another node condition that triggers repair, e.g. NetworkingReady=False:10m (repeatable)")
    p.add_argument("--no-node-repair", action="store_true",
                   default=_env_flag("NODEFLOW_NO_NODE_REPAIR"),
                   help="never replace unhealthy nodes")
    p.add_argument("--legacy-node-repair", action="store_true", default=_env_flag("NODEFLOW_LEGACY_NODE_REPAIR"),
                   help="node repair as before v1.15: forceful termination, no budget, no replacement first "
                        "(default: a budgeted disruption method that pre-spins a replacement, then drains)")
    p.add_argument("--node-repair-zone-outage-percent", type=int,
                   default=int(env("NODEFLOW_NODE_REPAIR_ZONE_OUTAGE_PERCENT", "50")),
                   help="node repair holds back in a zone where more than this percent of the nodes are unhealthy "
                        "(an outage, not a node fault; default 50)")
    p.add_argument("--default-topology-spread", metavar="none|system|FILE",
                   default=env("NODEFLOW_DEFAULT_TOPOLOGY_SPREAD", "none"),
                   help="cluster-default topology spread the simulation gives pods without their own: none, system "
                        "(kube-scheduler's built-in defaults) or a YAML/JSON file of defaultConstraints")
    p.add_argument("--min-values-policy", choices=["Strict", "BestEffort"],
                   default=env("NODEFLOW_MIN_VALUES_POLICY", "Strict"),
                   help="a new node whose instance types cannot meet a requirement's minValues: Strict plans and "
                        "launches none; BestEffort lowers minValues to what the types carry and annotates the "
                        "NodeClaim karpenter.sh/nodeclaim-min-values-relaxed (Karpenter's --min-values-policy)")
    p.add_argument("--fill-policy", choices=["CostAware", "Greedy"], default=env("NODEFLOW_FILL_POLICY", "CostAware"),
                   help="how far a new node for pending pods fills: CostAware (default) stops a node's growth where "
                        "its best price per unit of its pods' cpu/memory mix would rise by over 25%% (the pod goes to "
                        "another node); Greedy fills while any type fits, as Karpenter")
    p.add_argument("--cancel-hold", type=_seconds, default=env("NODEFLOW_CANCEL_HOLD", "30m"),
                   help="how long a cancelled disruption's nodes are not planned again (Go duration; 0s: off)")
    p.add_argument("--min-drain-time", type=_seconds, default=env("NODEFLOW_MIN_DRAIN_TIME"),
                   help="a drained node is drained once more this long after its drain began (Go duration; "
                        "default Karpenter's 5s; tests shorten it)")
    p.add_argument("--feature-gates", type=_feature_gates, default=env("NODEFLOW_FEATURE_GATES", ""),
                   help="Karpenter-style gates, e.g. PodDeletionCostManagement=true (known: "
                        + ", ".join(f"{k} (default {str(v).lower()})" for k, v in FEATURE_GATES.items()) + ")")
    p.add_argument("--pod-deletion-cost-interval", type=_seconds,
                   default=env("NODEFLOW_POD_DELETION_COST_INTERVAL", "60s"),
                   help="with PodDeletionCostManagement, how often pods' deletion costs are ranked and written")


def _election_args(p: argparse.ArgumentParser) -> None:
    """Which replica runs the in-worker controllers: the holder of a Lease (runtime/leader.py; Karpenter's
    DISABLE_LEADER_ELECTION, LEADER_ELECTION_NAME and LEADER_ELECTION_NAMESPACE)."""
    env = os.environ.get
    p.add_argument("--disable-leader-election", action="store_true",
                   default=_env_flag("NODEFLOW_DISABLE_LEADER_ELECTION"),
                   help="run the in-worker controllers on every replica (a single replica, development)")
    p.add_argument("--leader-election-name", default=env("NODEFLOW_LEADER_ELECTION_NAME", DEFAULT_LEASE_NAME),
                   help="the coordination.k8s.io/v1 Lease the replicas elect their leader with")
    p.add_argument("--leader-election-namespace", default=env("NODEFLOW_LEADER_ELECTION_NAMESPACE"),
                   help="the Lease's namespace (default: the worker's own, else default)")
    p.add_argument("--leader-election-lease-duration", type=_seconds,
                   default=env("NODEFLOW_LEADER_ELECTION_LEASE_DURATION", "15s"),
                   help="how long a lease holds without renewal before another replica may take it (Go duration)")
    p.add_argument("--leader-election-renew-deadline", type=_seconds,
                   default=env("NODEFLOW_LEADER_ELECTION_RENEW_DEADLINE", "10s"),
                   help="the leader stops its controllers when no renewal succeeded for this long (Go duration)")
    p.add_argument("--leader-election-retry-period", type=_seconds,
                   default=env("NODEFLOW_LEADER_ELECTION_RETRY_PERIOD", "2s"),
                   help="how often the leader renews and the others try to acquire (Go duration)")


def election_settings(args: argparse.Namespace) -> ElectionSettings | None:
    """None when election is off: every replica runs the controllers."""
    if args.disable_leader_election:
        return None
    return ElectionSettings(name=args.leader_election_name, namespace=args.leader_election_namespace,
                            lease_duration_seconds=max(1, round(args.leader_election_lease_duration)),
                            renew_deadline_seconds=args.leader_election_renew_deadline,
                            retry_period_seconds=args.leader_election_retry_period)


def _launch_and_ops_args(p: argparse.ArgumentParser) -> None:
    """What launches need (catalog, AMI, EKS bootstrap, IAM) and how the worker is run (logs, interruption
    queue, health and metrics)."""
    env = os.environ.get
    p.add_argument("--log-level", default=env("NODEFLOW_LOG_LEVEL", "INFO"))
    p.add_argument("--build-id", default=env("NODEFLOW_BUILD_ID"),
                   help="what this worker tells Temporal it runs (each workflow task's completion, reset points); "
                        "default: nodeflow's version, a digest of its workflow sources and the SDK's version")
    p.add_argument("--interruption-queue", default=env("NODEFLOW_INTERRUPTION_QUEUE"),
                   help="SQS queue URL of EventBridge interruption events (unset: no interruption handling)")
    p.add_argument("--catalog", default=env("NODEFLOW_CATALOG"),
                   help="instance type catalog YAML (default: discovered from EC2 and the Pricing API)")
    p.add_argument("--no-instance-type-discovery", action="store_true",
                   default=_env_flag("NODEFLOW_NO_INSTANCE_TYPE_DISCOVERY"),
                   help="without --catalog, use the bundled catalog instead of discovering the region's types")
    p.add_argument("--instance-type-refresh", type=_seconds, default=env("NODEFLOW_INSTANCE_TYPE_REFRESH", "12h"),
                   help="how often instance types, offerings and prices are discovered again (Go duration)")
    p.add_argument("--vm-memory-overhead-percent", type=float,
                   default=float(env("NODEFLOW_VM_MEMORY_OVERHEAD_PERCENT", "0.075")),
                   help="share of an instance's memory the hypervisor keeps, for new nodes' allocatable")
    p.add_argument("--metrics-port", type=int, default=int(env("NODEFLOW_METRICS_PORT", "0")),
                   help="serve /healthz, /readyz and /metrics on this port of every interface (0: off)")
    p.add_argument("--metrics-address", default=env("NODEFLOW_METRICS_ADDRESS"), type=_metrics_address,
                   help="HOST:PORT of /healthz, /readyz and /metrics, e.g. 127.0.0.1:8080 (wins over --metrics-port)")
    p.add_argument("--ami-id", default=env("NODEFLOW_AMI_ID"),
                   help="AMI of launches when the cluster has no EC2NodeClass (default: none; such launches refused)")
    p.add_argument("--cluster-name", default=env("NODEFLOW_CLUSTER_NAME"),
                   help="EKS cluster name: node bootstrap, instance tags, instance profile names")
    p.add_argument("--cluster-endpoint", default=env("NODEFLOW_CLUSTER_ENDPOINT"),
                   help="the cluster's API server URL, for node bootstrap")
    p.add_argument("--cluster-ca", default=env("NODEFLOW_CLUSTER_CA"),
                   help="the cluster's CA bundle (base64), for node bootstrap")
    p.add_argument("--iam-endpoint", default=env("NODEFLOW_IAM_ENDPOINT"),
                   help="IAM endpoint URL (instance profiles of EC2NodeClass roles)")


def _positive(text: str) -> int:
    """A whole number above 0, for argparse."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number above 0, got {text!r}")
    return value


def _seconds(text: str) -> float:
    """A Go duration ("30m", "1h30m") in seconds, for argparse."""
    try:
        return parse_duration(text).total_seconds()
    except DurationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


# The feature gates --feature-gates knows, with their defaults (Karpenter's FEATURE_GATES form: Name=bool,...).
FEATURE_GATES = {"PodDeletionCostManagement": False}


def _feature_gates(text: str) -> dict[str, bool]:
    """`Name=true,Other=false` over the defaults, for argparse; an unknown gate or value stops the worker at start."""
    gates = dict(FEATURE_GATES)
    for item in (i.strip() for i in text.split(",") if i.strip()):
        name, _, value = item.partition("=")
        if name.strip() not in FEATURE_GATES or value.strip().lower() not in ("true", "false"):
            raise argparse.ArgumentTypeError(f"unknown feature gate or value {item!r} (known: "
                                             f"{', '.join(FEATURE_GATES)}; values true or false)")
        gates[name.strip()] = value.strip().lower() == "true"
    return gates


def _metrics_address(text: str) -> str:
    """Checked at parse time, so a typo stops the worker before it connects anywhere."""
    try:
        parse_metrics_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    return text


def readiness_checks(client: Client, deps: Deps) -> dict[str, ReadinessCheck]:
    """Ready once Temporal answers and the cluster cache has synced: during a rolling update the new pod takes
    over (and the old one is stopped) only when it can plan from a warm cache."""
    checks: dict[str, ReadinessCheck] = {"temporal": client.service_client.check_health}
    cluster = deps.cluster
    if cluster is not None:
        checks["cluster-cache"] = lambda: cluster.synced
    return checks


async def cluster_too_old(kubeconfig: str | None) -> str | None:
    """The one-line refusal when the API server is older than nodeflow supports (api/kube_version.py), before
    anything connects; a server that cannot be reached yet is logged and left to the cluster clients' retries."""
    try:
        return await asyncio.to_thread(kubeconfig_version_problem, kubeconfig)
    except Exception as exc:
        log.warning("could not read the API server's version: %s", exc)
        return None


def settings_from(args: argparse.Namespace) -> Settings:
    """The worker's settings from its flags (each flag's NODEFLOW_* variable already read by the parser)."""
    return Settings(task_queue=args.task_queue, fleet_task_queue=args.fleet_task_queue,
                        watch=not args.no_watch, resync_seconds=args.resync_seconds,
                        interruption_queue_url=args.interruption_queue, catalog_path=args.catalog,
                        ami_id=args.ami_id, cluster_name=args.cluster_name, cluster_endpoint=args.cluster_endpoint,
                        build_id=args.build_id,
                        cluster_ca=args.cluster_ca, cluster_cache=not args.no_cluster_cache,
                        provisioning=not args.no_provisioning, batch_idle_seconds=args.batch_idle_duration,
                        batch_max_seconds=args.batch_max_duration, launch_timeout_seconds=args.launch_timeout,
                        sticky_queue_timeout_seconds=args.sticky_queue_timeout,
                        max_concurrent_activities=args.max_concurrent_activities,
                        node_repair=not args.no_node_repair,
                        node_repair_toleration_seconds=args.node_repair_toleration,
                        node_repair_conditions=tuple(args.node_repair_condition),
                        legacy_node_repair=args.legacy_node_repair, launch_api=args.launch_api,
                        node_repair_zone_outage_percent=args.node_repair_zone_outage_percent,
                        cancel_hold_seconds=args.cancel_hold, min_drain_seconds=args.min_drain_time,
                        discover_instance_types=not (args.catalog or args.no_instance_type_discovery),
                        instance_type_refresh_seconds=args.instance_type_refresh,
                        vm_memory_overhead_percent=args.vm_memory_overhead_percent,
                        pod_deletion_cost=args.feature_gates["PodDeletionCostManagement"],
                        pod_deletion_cost_seconds=args.pod_deletion_cost_interval,
                        leader_election=election_settings(args),
                        default_topology_spread=args.default_topology_spread,
                        min_values_policy=args.min_values_policy, fill_policy=args.fill_policy)


async def amain(args: argparse.Namespace) -> int:
    if not args.fleet_only and (problem := await cluster_too_old(args.kubeconfig)):
        log.error("refusing to start: %s", problem)
        return 2
    bind = metrics_bind(args.metrics_address, args.metrics_port)
    buffer = new_buffer() if bind else None  # the SDK's failure counters, for /metrics
    if buffer is not None:
        forward_core_logs(buffer)
    try:
        client = await connect_patiently(args.temporal_connect_timeout, address=args.address,
                                         namespace=args.namespace, api_key=args.api_key, tls_cert=args.tls_cert,
                                         tls_key=args.tls_key, tls_ca=args.tls_ca,
                                         require_secure=not args.allow_insecure_temporal)
    except InsecureTemporalAddress as exc:
        log.error("refusing to start: %s", exc)
        return 2
    except RuntimeError as exc:
        log.error("Temporal at %s not reachable for %.0fs: %s", args.address, args.temporal_connect_timeout, exc)
        return 1
    if args.fleet_only:
        return await _fleet_only(client, args.fleet_task_queue or FLEET_TASK_QUEUE, args.sticky_queue_timeout,
                                 args.build_id)
    settings = settings_from(args)
    try:
        configure_scheduling(settings)
    except ValueError as exc:
        log.error("refusing to start: --default-topology-spread %s", exc)
        return 2
    try:
        aws = aws_clients(resolve_region(args.region), ec2_endpoint=args.ec2_endpoint,
                          sqs_endpoint=args.sqs_endpoint, iam_endpoint=args.iam_endpoint,
                          ec2_rate=Ec2CallRate(args.ec2_max_calls_per_second, args.ec2_call_burst))
    except RegionNotConfigured as exc:
        log.error("refusing to start: %s", exc)
        return 2
    deps = Deps(kube_api=kube_api_client(args.kubeconfig), ec2=aws.ec2, sqs=aws.sqs, temporal=client,
                ssm=aws.ssm, iam=aws.iam, settings=settings, pricing=pricing_client(aws.region, args.ec2_endpoint))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    health = None
    if bind and buffer is not None:
        health = await start_health_server(bind.port, checks=readiness_checks(client, deps), host=bind.host)
        pumping = asyncio.gather(pump(buffer, stop), track_planner_pause(
            client, stop, schedule_id=planner_schedule_id(settings.task_queue)))
    every = timedelta(seconds=float(os.environ.get("NODEFLOW_PLANNER_SECONDS", "10")))
    await ensure_planner_schedule(client, every=every, task_queue=settings.task_queue,  # idempotent; keeps a pause
                                  settings=DisruptionSettings(cancel_hold_seconds=settings.cancel_hold_seconds))
    await ensure_nodeclass_schedule(client, task_queue=settings.task_queue)  # EC2NodeClass resolution every 60 s
    log.info("worker started", extra={"task_queue": settings.task_queue, "watch": settings.watch})
    try:
        await run_worker(client, deps, stop)
    finally:
        if health is not None:
            pumping.cancel()
            await health.stop()
    log.info("worker stopped")
    return 0


async def _fleet_only(client: Client, queue: str, sticky_queue_timeout: float, build_id: str | None) -> int:
    """A worker for the fleet's rollouts alone (docs/fleet.md): it touches no cluster itself."""
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    log.info("fleet worker started", extra={"task_queue": queue})
    await run_fleet_worker(client, queue, stop, sticky_queue_timeout, build_id)
    log.info("fleet worker stopped")
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    startup_gc.resume()  # the modules are loaded (runtime/startup_gc.py)
    args = parse_args(argv)
    if args.malloc_arenas > 0:  # before any thread allocates (runtime/malloc_tuning.py)
        limit_arenas(args.malloc_arenas)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    logging.basicConfig(level=args.log_level.upper(), handlers=[handler])
    profile_path = os.environ.get("NODEFLOW_PROFILE")  # every thread's cProfile, written at shutdown (benchmarks)
    profiles = ThreadProfiles().start() if profile_path else None
    code = asyncio.run(amain(args))
    if profiles is not None:
        profiles.dump(profile_path)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # avoids the SDK's interpreter-exit crash (temporalio/sdk-python#300)


if __name__ == "__main__":
    main()
