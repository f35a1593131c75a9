"""The provisioning decision from the live cluster, and the Events that explain it.

The cluster is read the way the planner reads it (PlanningActivities' reader: the worker's watch cache, or a LIST
when the cache is off), so provisioning adds no second read path. Only the launches leave the activity; pods no
NodePool serves get a FailedScheduling Event naming each pool and the requirement or taint that excludes it, and a
NodePool whose limits stop a launch gets an Event too.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from temporalio import activity

from activities import launch_controls
from activities.events import nominated_spec, recorder_for
from activities.heartbeat import heartbeating
from activities.planning_runner import to_replacement
from api import events
from api.catalog import InstanceTypeCatalog, current_catalog, load_catalog
from api.events import EventReason
from api.snapshot import Snapshot
from contracts.disruption import EventSpec
from contracts.provisioning import (
    LaunchFailedInput,
    NodeClaimLaunch,
    ProvisioningPlan,
    ProvisioningPlanInput,
)
from gateways.kube import KubeClient, event_body
from planning.disruption import nomination
from planning.disruption.nomination import NominatedKind
from planning.pricing.unavailable_offerings import UnavailableOfferings, with_unavailable
from planning.provisioning.provisioner import Exclusion, decide
from planning.provisioning.spot_fallback import cap_fallbacks
from telemetry import karpenter_metrics as km
from telemetry import metrics


class ClusterReader(Protocol):
    """activities/planning_runner.py PlanningActivities: the objects and, from the cache, their Snapshot and parsed
    parts (else None, None), a stale cache failing the attempt retryably; used as its `_plan` uses them."""

    async def read_cluster(self) -> tuple[list[dict[str, Any]], Any, Any]: ...


def to_plan(decision: Any, batch: int) -> ProvisioningPlan:
    """planning.provisioning.provisioner.ProvisioningDecision -> the workflow's small payload."""
    launches = [NodeClaimLaunch(
        node_pool=launch.node_pool, pods=list(launch.pods),
        replacement=to_replacement(launch.replacement))
        for launch in decision.launches]
    pending = sum(len(lt.pods) for lt in launches) + len(decision.nominated) + len(decision.scheduled) + len(
        decision.unservable) + sum(h.chunks for h in decision.headroom.values())
    return ProvisioningPlan(launches=launches, nominated=len(decision.nominated), scheduled=len(decision.scheduled),
                            unservable=[u.pod for u in decision.unservable],
                            pools_at_limit=sorted(decision.pools_at_limit), gone=max(batch - pending, 0))


def explanation_specs(decision: Any, claims_by_node: dict[str, str] | None = None) -> list[EventSpec]:
    """FailedScheduling on each pod no pool serves; NodePoolLimitsReached on each pool whose limits stop a launch;
    NoCompatibleInstanceTypes on each pool no instance type is left for; Nominated on each pod the decision
    expects on a launching NodeClaim or an existing Node (Karpenter's scheduler.go)."""
    out = []
    for u in decision.unservable:
        namespace, _, name = u.pod.partition("/")
        out.append(EventSpec(kind="Pod", name=name, namespace=namespace, uid=u.uid, type="Warning",
                             reason=EventReason.FAILED_SCHEDULING, message=events.no_nodepool_serves(u.message())))
    for pool, detail in sorted(decision.pools_at_limit.items()):
        waiting = sum(1 for u in decision.unservable for e in u.exclusions
                      if e.node_pool == pool and e.reason is Exclusion.LIMITS)
        out.append(EventSpec(kind="NodePool", name=pool, reason=EventReason.NODEPOOL_LIMITS_REACHED, type="Warning",
                             message=events.nodepool_limits_reached(pool, detail, waiting)))
    out += [EventSpec(kind="NodePool", name=pool, reason=reason, type="Warning", message=message)  # cost limits
            for pool, reason, message in launch_controls.pool_warnings(decision)]
    for pool in getattr(decision, "no_compatible_types", ()):
        out.append(EventSpec(kind="NodePool", name=pool, reason=EventReason.NO_COMPATIBLE_INSTANCE_TYPES,
                             type="Warning", message=events.NO_COMPATIBLE_INSTANCE_TYPES))
    for pod, target in sorted(decision.nominated.items()):
        out.append(nominated_spec(pod, node_claim=launching_claim(target)))
    for pod, node in sorted(decision.scheduled.items()):
        out.append(nominated_spec(pod, node_claim=(claims_by_node or {}).get(node), node=node))
    return out


def no_capacity_specs(inp: LaunchFailedInput) -> list[EventSpec]:
    """InsufficientCapacityError (Karpenter's reason, nodeclaim/lifecycle/events.go) when every offering of a launch
    answered ICE: on the NodePool, with whether the batch retries (no NodeClaim got an instance to carry it), and,
    as v1.15 does (kubernetes-sigs/karpenter#3143), on each pod the launch was for, so the pod's owner sees why it
    is still pending."""
    out = [EventSpec(kind="NodePool", name=inp.node_pool, reason=EventReason.INSUFFICIENT_CAPACITY_ERROR,
                     type="Warning", message=events.insufficient_capacity(inp.offerings, inp.retry_seconds))]
    message = events.pod_insufficient_capacity(inp.node_claim, inp.error)
    for pod in sorted({p.key: p for p in inp.pods if not p.virtual}.values(), key=lambda p: p.key):
        namespace, _, name = pod.key.rpartition("/")
        out.append(EventSpec(kind="Pod", name=name, namespace=namespace or None, uid=pod.uid or None,
                             reason=EventReason.INSUFFICIENT_CAPACITY_ERROR, type="Warning", message=message))
    return out


def launching_claim(target: str) -> str:
    """The NodeClaim a launching node of the simulation stands for (`<launching:name>`,
    planning/provisioning/provisioner.py)."""
    return target.removeprefix("<launching:").removesuffix(">")


def claims_by_node(objs: list[dict[str, Any]]) -> dict[str, str]:
    """Node name -> its NodeClaim's name (status.nodeName), for Nominated's `nodeclaim/x, node/y`."""
    return {c["status"]["nodeName"]: c["metadata"]["name"] for c in objs
            if c.get("kind") == "NodeClaim" and (c.get("status") or {}).get("nodeName")}


def named_bodies(specs: list[EventSpec], batch_id: str, now: datetime) -> list[dict[str, Any]]:
    """Event bodies named by batch and content, so a retried activity on another worker records each once."""
    def body(ev: EventSpec) -> dict[str, Any]:
        key = f"{batch_id}/{ev.kind}/{ev.namespace or 'default'}/{ev.name}/{ev.reason}/{ev.message}"
        return event_body(ev.kind, ev.name, ev.reason, ev.message, now, uid=ev.uid, type_=ev.type,
                          namespace=ev.namespace or "default",
                          event_name=f"{ev.name}.{hashlib.sha1(key.encode()).hexdigest()[:16]}")
    return [body(ev) for ev in specs]


def explanation_events(decision: Any, batch_id: str, now: datetime) -> list[dict[str, Any]]:
    """The bodies of explanation_specs (tests and tools; the activity filters through the worker's Recorder)."""
    return named_bodies(explanation_specs(decision), batch_id, now)


class ProvisioningPlanner:
    """Clients come in: the Kubernetes gateway (Events), the planner's cluster reader, the catalog."""

    def __init__(self, kube: KubeClient, reader: ClusterReader, catalog: InstanceTypeCatalog | None = None,
                 offerings: UnavailableOfferings | None = None,
                 nomination_window: timedelta = nomination.window()) -> None:
        self._kube = kube
        self._reader = reader
        self._catalog = catalog
        self._offerings = offerings  # offerings EC2 refused lately are not planned on
        self._recorder = recorder_for(kube)  # Karpenter's dedupe: FailedScheduling 5 min per pod, and the rest
        self._window = nomination_window

    @activity.defn(name="provisioning_plan")
    async def plan(self, inp: ProvisioningPlanInput) -> ProvisioningPlan:
        """Re-plan the batch on the cluster as it is now: pods bound or gone since the batch closed launch nothing."""
        return await heartbeating(self._plan(inp))

    async def _plan(self, inp: ProvisioningPlanInput) -> ProvisioningPlan:
        objs, snapshot, parsed = await self._reader.read_cluster()
        decision = await asyncio.to_thread(self._decide, objs, snapshot, parsed, inp)
        launch_controls.record_metrics(decision)  # cost limits, deprecated pools (docs/semantics.md §15.10-15.11)
        await asyncio.to_thread(self._nominate, decision, objs)
        specs = self._recorder.fresh(explanation_specs(decision, claims_by_node(objs)))
        await asyncio.to_thread(self._explain, named_bodies(specs, inp.batch_id, datetime.now(UTC)))
        return to_plan(decision, len(inp.pods))

    def _decide(self, objs: list[dict[str, Any]], snapshot: Any, parsed: Any, inp: ProvisioningPlanInput) -> Any:

        full = current_catalog(load_catalog(inp.catalog_path) if inp.catalog_path else self._catalog)
        catalog = with_unavailable(full, self._offerings)
        snapshot = snapshot if snapshot is not None else Snapshot.from_objects(objs)
        started = time.perf_counter()
        try:
            decision = decide(snapshot, catalog, pods=[p.uid for p in inp.pods], parsed=parsed)
        finally:  # Karpenter's provisioner times its scheduling simulation the same way (scheduling/metrics.go)
            km.SCHEDULING_DURATION.labels(controller="provisioner").observe(time.perf_counter() - started)
        return cap_spot_fallbacks(decision, snapshot, full, catalog)

    def _nominate(self, decision: Any, objs: list[dict[str, Any]]) -> None:
        """Mark every node and launching NodeClaim this pass planned pods onto as nominated
        (planning/disruption/nomination.py), so no planner pass on any replica disrupts it before kube-scheduler binds
        them. Best effort: the planner's pending-pod check still keeps the room a pending pod fits on when a write
        fails."""
        targets = [launching_claim(t) for t in decision.nominated.values()] + list(decision.scheduled.values())
        if not targets:
            return
        objects = {(o.get("kind", ""), (o.get("metadata") or {}).get("name", "")): o for o in objs
                   if o.get("kind") in ("Node", "NodeClaim")}
        for mark in nomination.nominations(targets, claims_by_node(objs), objects, datetime.now(UTC), self._window):
            patch = self._kube.patch_node_claim if mark.kind is NominatedKind.NODE_CLAIM else self._kube.patch_node
            try:
                patch(mark.name, mark.patch())
            except Exception as exc:  # a claim deleted meanwhile, an API hiccup: the next pass writes it again
                activity.logger.warning("could not nominate %s %s: %s", mark.kind.value, mark.name, exc)

    def _explain(self, bodies: list[dict[str, Any]]) -> None:
        for body in bodies:
            try:
                self._kube.create_event(body)
            except Exception as exc:  # explanations are best effort; never fail the batch over them
                activity.logger.warning("could not record a provisioning event: %s", exc)

    @activity.defn(name="provisioning_no_capacity")
    async def no_capacity(self, inp: LaunchFailedInput) -> None:
        """InsufficientCapacityError on the NodePool and on the launch's pods (no_capacity_specs)."""
        specs = self._recorder.fresh(no_capacity_specs(inp))
        await asyncio.to_thread(self._explain, named_bodies(specs, inp.batch_id, datetime.now(UTC)))


def cap_spot_fallbacks(decision: Any, snapshot: Any, full: InstanceTypeCatalog | None,
                       applied: InstanceTypeCatalog | None) -> Any:
    """spot.maxOnDemandFraction (planning/policies/spot_return.py): on-demand fallback launches over a pool's cap are
    dropped and their pods get a FailedScheduling Event naming the cap. Nothing refused lately: no launch is a
    fallback."""
    if full is None or applied is None or applied is full:
        return decision
    for capped in cap_fallbacks(decision, snapshot, full, applied, datetime.now(UTC)):
        metrics.SPOT_FALLBACKS_CAPPED.labels(nodepool=capped.node_pool).inc()
    return decision
