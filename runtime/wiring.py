"""The one place activities are constructed: every activity class gets the worker's shared clients here.

To add a workflow or an activity, append to WORKFLOWS or to `activities()` below; nothing else builds them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from activities.candidates import CandidateActivities
from activities.cloud import CloudActivities
from activities.events import EventActivities
from activities.fleet import FleetActivities
from activities.kube import KubeActivities
from activities.nodeclass import NodeClassActivities
from activities.planning_runner import PlanningActivities
from activities.policy_hooks import PolicyHookActivities
from activities.provisioning import ProvisioningActivities
from activities.provisioning_planner import ProvisioningPlanner
from activities.queue import InterruptionQueueActivities
from activities.rollout import RolloutActivities
from activities.spot_sizing import SpotSizingActivities
from activities.termination_markers import TerminationMarkerActivities
from api.catalog import InstanceTypeCatalog, load_catalog, load_default_catalog
from api.nodeclass_launch import ClusterInfo
from client.interruption import temporal_starters
from client.termination import start_termination
from gateways.ec2 import cloud_provider
from gateways.ec2_batch import BatchedCloud
from gateways.sqs import SqsQueue
from planning.disruption.nomination import window
from planning.disruption.repair import policies_for
from planning.provisioning.fleet import LaunchApi
from runtime.cache_reads import CacheReads
from runtime.interruption import InterruptionDispatcher
from runtime.settings import Deps
from workflows.disruption import DisruptionWorkflow
from workflows.interruption import InterruptionPollerWorkflow, SpotPrespinWorkflow
from workflows.nodeclass import NodeClassWorkflow
from workflows.planner import PlannerWorkflow
from workflows.provisioning import ProvisioningWorkflow
from workflows.rollout import DriftRolloutWorkflow
from workflows.termination import TerminationWorkflow

WORKFLOWS: list[type] = [TerminationWorkflow, InterruptionPollerWorkflow, SpotPrespinWorkflow, PlannerWorkflow,
                         DisruptionWorkflow, NodeClassWorkflow, ProvisioningWorkflow, DriftRolloutWorkflow]


def workflows() -> list[type]:
    return list(WORKFLOWS)


def catalog_from(path: str | None) -> InstanceTypeCatalog:
    """The instance type catalog given by path, else the bundled one."""
    return load_catalog(path) if path else load_default_catalog()


def activities(deps: Deps) -> list[Callable[..., Any]]:
    """Every activity the worker registers, bound to `deps`' clients."""
    return [*termination_activities(deps), *disruption_activities(deps), *interruption_activities(deps),
            *nodeclass_activities(deps), *fleet_activities(deps)]


def fleet_activities(deps: Deps) -> list[Callable[..., Any]]:
    """What a fleet rollout asks of this cluster, on this worker's own queue (docs/fleet.md)."""
    fleet = FleetActivities(deps.kube)
    return [fleet.apply, fleet.observe]


def termination_activities(deps: Deps) -> list[Callable[..., Any]]:
    cached = CacheReads(deps.cluster) if deps.cluster is not None else None
    return [*KubeActivities(deps.kube, cancel_hold_seconds=deps.settings.cancel_hold_seconds,
                            min_drain_seconds=deps.settings.min_drain_seconds, cached=cached).all(),
            # one-instance TerminateInstances/DescribeInstances merged per window (gateways/ec2_batch.py); the
            # window's callers each hold a thread until it closes, so more threads make fuller windows
            *CloudActivities(BatchedCloud(cloud_provider(deps.ec2)), max_threads=64, kube=deps.kube,
                             cached=cached).all(),
            *TerminationMarkerActivities(deps.kube, cached=cached).all()]


def disruption_activities(deps: Deps) -> list[Callable[..., Any]]:
    """The planner's and the disruption's activities (pass, validation, launches, candidates, events)."""
    catalog = deps.catalog_source  # read afresh each pass when discovered (gateways/instance_types.py)
    events = EventActivities(deps.kube)
    s = deps.settings
    planning = PlanningActivities(deps.kube, deps.temporal, catalog, events, cluster=deps.cluster,
                                  repair=repair_policies(s), offerings=deps.offerings)
    cluster = ClusterInfo(s.cluster_name or "", s.cluster_endpoint or "", s.cluster_ca or "")
    provisioning = ProvisioningActivities(deps.kube, deps.ec2, catalog, ami_id=s.ami_id, cluster=cluster,
                                          offerings=deps.offerings, launch_api=LaunchApi(s.launch_api),
                                          templates=deps.launch_templates)
    candidates = CandidateActivities(deps.kube, _candidate_starter(deps), deps.temporal)
    return [
        planning.plan_pass, planning.validate_command,
        provisioning.launch_replacement, provisioning.replacement_status, provisioning.delete_replacement,
        candidates.taint_candidates, candidates.untaint_candidates, candidates.start_terminations,
        candidates.await_terminations, candidates.drift_outcome,
        events.record_events,
        *provisioning_activities(deps, planning, catalog),
        *policy_activities(deps, planning),
    ]


def policy_activities(deps: Deps, planning: PlanningActivities) -> list[Callable[..., Any]]:
    """DisruptionPolicy controls in workflows: hooks, notifications, escalation's watch, drift rollout waves."""
    hooks = PolicyHookActivities(deps.kube, deps.temporal)
    rollout = RolloutActivities(planning, deps.kube)
    return [hooks.pre_disruption_hook, hooks.notify, hooks.watch_terminations, rollout.plan, rollout.workloads_ready,
            rollout.annotate]


def repair_policies(s: Any) -> tuple[Any, ...]:
    """Node repair policies from the worker's settings (a malformed condition stops the worker at start)."""
    from datetime import timedelta


    return policies_for(s.node_repair, timedelta(seconds=s.node_repair_toleration_seconds), s.node_repair_conditions,
                        legacy=s.legacy_node_repair, zone_outage_percent=s.node_repair_zone_outage_percent)


def provisioning_activities(deps: Deps, reader: PlanningActivities, catalog: InstanceTypeCatalog
                            ) -> list[Callable[..., Any]]:
    """ProvisioningWorkflow's own activities (it launches through the disruption's), and the spot pre-spin's sizing:
    both read the cluster through the planner's reader, so provisioning adds no second read path."""
    planner = ProvisioningPlanner(deps.kube, reader, catalog, offerings=deps.offerings,
                                  nomination_window=window(deps.settings.batch_max_seconds))
    return [planner.plan, planner.no_capacity,
            SpotSizingActivities(reader, catalog, offerings=deps.offerings).size_replacement]


def nodeclass_activities(deps: Deps) -> list[Callable[..., Any]]:
    """EC2NodeClass resolution (EC2, SSM, and IAM when given)."""
    s = deps.settings
    return [NodeClassActivities(deps.kube, deps.ec2, deps.ssm_client, deps.iam, cluster_name=s.cluster_name,
                                templates=deps.launch_templates).reconcile]


def interruption_activities(deps: Deps) -> list[Callable[..., Any]]:
    """The SQS poll activity, when an interruption queue is configured (it starts workflows, so needs a client)."""
    s = deps.settings
    if not s.interruption_queue_url or deps.temporal is None:
        return []
    terminate, prespin = temporal_starters(deps.temporal, s.task_queue)
    dispatcher = InterruptionDispatcher(deps.kube, deps.catalog_source, terminate, prespin,
                                        offerings=deps.offerings)
    queue = InterruptionQueueActivities(SqsQueue(deps.sqs, s.interruption_queue_url), dispatcher)
    return [queue.poll_interruption_queue]


def _candidate_starter(deps: Deps) -> Callable[[Any, str], Awaitable[str]]:
    """A disruption hands its candidates to termination through the one start path (idempotent per node)."""

    async def start(inp: Any, task_queue: str) -> str:
        if deps.temporal is None:
            raise RuntimeError("the worker's Temporal client is not set")
        return (await start_termination(deps.temporal, inp, task_queue=task_queue)).id

    return start
