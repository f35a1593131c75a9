"""What one worker process is configured with (Settings) and the clients it shares with its activities (Deps)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from temporalio.client import Client

from activities.launch_templates import LaunchTemplates
from api.catalog import load_catalog, load_default_catalog
from contracts.search_attributes import TASK_QUEUE
from gateways.ec2 import cloud_provider
from gateways.instance_types import InstanceTypeProvider, LiveCatalog
from gateways.kube import KubeClient
from planning.pricing.unavailable_offerings import UnavailableOfferings
from planning.scheduling.default_spread import configure, load_default_spread
from planning.scheduling.fill_policy import configure as configure_fill
from planning.scheduling.fill_policy import parse as parse_fill
from planning.scheduling.min_values import configure as configure_min_values
from planning.scheduling.min_values import parse as parse_min_values
from runtime.cloud_clients import resolve_region, ssm_client
from runtime.cluster_cache import ClusterCache
from runtime.cluster_view import ClusterView
from telemetry.metrics import OFFERINGS_MARKED_UNAVAILABLE


@dataclass
class Settings:
    task_queue: str = TASK_QUEUE
    watch: bool = True  # run the deletion watcher
    resync_seconds: float = 30.0
    max_concurrent_activities: int = 500
    max_concurrent_workflow_tasks: int = 100
    activity_threads: int = 32  # for sync activities
    io_threads: int = 64  # the event loop's default executor: async activities' blocking calls (asyncio.to_thread)
    interruption_queue_url: str | None = None  # SQS queue of EventBridge interruption events; None: no intake
    interruption_poll: Any = None  # contracts.interruption.PollInput; None: production defaults
    catalog_path: str | None = None  # instance type catalog for launches; None: discovered, or the bundled one
    discover_instance_types: bool = False  # no catalog_path: discover from EC2 + Pricing (worker.py turns it on)
    instance_type_refresh_seconds: float = 43200.0  # rediscover this often (Karpenter: 12 h)
    vm_memory_overhead_percent: float = 0.075  # memory the hypervisor keeps, for computed allocatable
    ami_id: str | None = None  # image of launches without an EC2NodeClass; None: such launches are refused
    build_id: str | None = None  # what the worker tells Temporal it runs; None: runtime/build_id.py's default
    cluster_name: str | None = None  # EKS cluster nodes join (user data, tags, instance profile names)
    cluster_endpoint: str | None = None  # its API server URL, for the nodes' bootstrap
    cluster_ca: str | None = None  # its CA bundle (base64, as EKS shows it), for the nodes' bootstrap
    cluster_cache: bool = True  # planner reads a watch cache (runtime/cluster_view.py); False: a LIST per pass
    provisioning: bool = False  # run the pending-pod intake (worker.py turns it on; embedded stacks opt in)
    batch_idle_seconds: float = 1.0  # a provisioning batch closes this long after its last new pod ...
    batch_max_seconds: float = 10.0  # ... or this long after it opened (Karpenter's BATCH_IDLE/MAX_DURATION)
    launch_api: str = "fleet"  # "fleet": one CreateFleet per NodeClaim (Karpenter); "run-instances": per offering
    launch_timeout_seconds: float = 60.0  # a provisioning launch attempt; a worker killed mid-launch costs this long
    capacity_buffer_seconds: float = 10.0  # how often CapacityBuffer headroom is planned (docs/semantics.md §20)
    sticky_queue_timeout_seconds: float = 10.0  # the SDK's sticky schedule-to-start timeout (its default)
    node_repair: bool = True  # replace nodes unhealthy past their toleration (planning/disruption/repair.py)
    node_repair_toleration_seconds: float = 1800.0  # Ready False/Unknown tolerated this long (Karpenter: 30 min)
    node_repair_conditions: tuple[str, ...] = ()  # more repair policies, "Type=Status:Duration" each
    legacy_node_repair: bool = False  # forceful repair, no budget, no pre-spin (Karpenter's --legacy-node-repair)
    node_repair_zone_outage_percent: int = 50  # repair holds back in a zone with more than this share unhealthy
    cancel_hold_seconds: float = 1800.0  # a cancelled disruption's nodes are not re-planned this long (0: off)
    min_drain_seconds: float | None = None  # Karpenter's MinDrainTime (5 s) when None; tests shorten it
    lifecycle: bool = True  # run the NodeClaim lifecycle controller and garbage collection (runtime/nodeclaim_*.py)
    lifecycle_settings: Any = None  # runtime.nodeclaim_lifecycle.LifecycleSettings; None: Karpenter's timings
    gc_settings: Any = None  # runtime.nodeclaim_gc.GcSettings; None: Karpenter's timings
    fleet_task_queue: str | None = None  # also run FleetRolloutWorkflows on this queue (docs/fleet.md)
    # feature gate PodDeletionCostManagement: the leader writes pods' pod-deletion-cost from the disruption order
    # (runtime/pod_deletion_cost.py); off: the leader takes nodeflow's own costs off once
    pod_deletion_cost: bool = False
    pod_deletion_cost_seconds: float = 60.0  # how often the deletion costs are ranked and written
    # runtime.leader.ElectionSettings: only the Lease's holder runs the in-worker controllers; None: every replica
    # runs them (embedded stacks, tests; worker.py turns election on unless --disable-leader-election)
    leader_election: Any = None
    # cluster-default topology spread in the simulation: none, system or a file (planning/scheduling/default_spread.py)
    default_topology_spread: str = "none"
    min_values_policy: str = "Strict"  # --min-values-policy: Strict or BestEffort (planning/scheduling/min_values.py)
    fill_policy: str = "CostAware"  # --fill-policy: CostAware or Greedy (planning/scheduling/fill_policy.py)


def configure_scheduling(settings: Settings) -> None:
    """The process's scheduling settings for every simulation its activities run (raises ValueError on a bad
    --default-topology-spread, which stops the worker at start)."""
    configure(load_default_spread(settings.default_topology_spread))
    configure_min_values(parse_min_values(settings.min_values_policy))
    configure_fill(parse_fill(settings.fill_policy))


@dataclass
class Deps:
    """Clients the activities get in their constructors (built once per worker process)."""

    kube_api: Any  # kubernetes.client.ApiClient
    ec2: Any  # boto3 EC2 client
    sqs: Any = None
    temporal: Client | None = None
    ssm: Any = None  # boto3 SSM client (AMI aliases); None: built for the EC2 client's region
    iam: Any = None  # boto3 IAM client (instance profiles of spec.role); None: profiles are named, not created
    pricing: Any = None  # boto3 Pricing client (on-demand prices); None: the bundled price table
    settings: Settings = field(default_factory=Settings)
    _cache: dict[str, Any] = field(default_factory=dict)

    @property
    def kube(self) -> KubeClient:
        if "kube" not in self._cache:
            self._cache["kube"] = KubeClient(self.kube_api)
        return self._cache["kube"]

    @property
    def cluster(self) -> Any:
        """The worker's one watch-fed view of the cluster (a runtime.cluster_view.ClusterView, built on first use,
        started and stopped by run_worker), or None when `settings.cluster_cache` is off."""
        if not self.settings.cluster_cache:
            return None
        if "cluster" not in self._cache:
            self._cache["cluster"] = ClusterView(ClusterCache(self.kube_api))
        return self._cache["cluster"]

    @property
    def offerings(self) -> Any:
        """The worker's one planning.pricing.unavailable_offerings.UnavailableOfferings: launches mark and skip what EC2
        refused, the interruption intake marks reclaimed spot offerings, every plan reads it (built on first use)."""
        if "offerings" not in self._cache:

            self._cache["offerings"] = UnavailableOfferings(
                on_mark=lambda reason: OFFERINGS_MARKED_UNAVAILABLE.labels(reason=reason.value).inc())
        return self._cache["offerings"]

    @property
    def launch_templates(self) -> Any:
        """The worker's one activities.launch_templates.LaunchTemplates: the fleet launches' templates, made once and
        deleted a minute after their last use (the sweep in runtime/worker_loop.py), or None without EC2."""
        if "launch_templates" not in self._cache:
            self._cache["launch_templates"] = None if self.ec2 is None else LaunchTemplates(
                cloud_provider(self.ec2), self.settings.cluster_name or "")  # type: ignore[arg-type]
        return self._cache["launch_templates"]

    @property
    def catalog_source(self) -> Any:
        """The one instance-type catalog source of the worker's activities: the `--catalog` file; else, when
        discovery is on, an gateways.instance_types.LiveCatalog refreshed in the background from EC2 and the
        Pricing API (docs/semantics.md "Instance types and allocatable"); else the bundled catalog."""
        if "catalog" not in self._cache:
            s = self.settings
            if s.catalog_path:
                self._cache["catalog"] = load_catalog(s.catalog_path)
            elif s.discover_instance_types and self.ec2 is not None:
                provider = InstanceTypeProvider(self.ec2, self.pricing, refresh_seconds=s.instance_type_refresh_seconds,
                                                overhead_percent=s.vm_memory_overhead_percent)
                provider.start()
                self._cache["catalog"] = LiveCatalog(provider)
            else:
                self._cache["catalog"] = load_default_catalog()
        return self._cache["catalog"]

    @property
    def ssm_client(self) -> Any:
        """The SSM client given, else one for the region of the EC2 client (else the flag-less resolution: an
        SSM client with no region fails only at its first call, far from the cause)."""
        if self.ssm is None:
            region = getattr(getattr(self.ec2, "meta", None), "region_name", None)
            self.ssm = ssm_client(resolve_region(region), None)
        return self.ssm
