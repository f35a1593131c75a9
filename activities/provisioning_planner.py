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
from datetime import UTC, datetime
from typing import Any, Protocol

from temporalio import activity

from activities.kube_client import KubeClient, event_body
from activities.planning_runner import to_replacement
from api import events
from api.catalog import InstanceTypeCatalog, current_catalog, load_catalog
from api.events import EventReason
from planning.provisioning import Exclusion
from planning.spot_return import cap_fallbacks
from planning.unavailable_offerings import UnavailableOfferings, with_unavailable
from telemetry import karpenter_metrics as km
from telemetry import metrics
from workflows.provisioning_models import (
    LaunchFailedInput,
    NodeClaimLaunch,
    ProvisioningPlan,
    ProvisioningPlanInput,
)


class ClusterReader(Protocol):
    """activities/planning_runner.py PlanningActivities: the objects and, from the cache, their Snapshot and parsed
    parts (else None, None), a stale cache failing the attempt retryably; used as its `_plan` uses them."""

    async def read_cluster(self) -> tuple[list[dict[str, Any]], Any, Any]: ...


def to_plan(decision: Any, batch: int) -> ProvisioningPlan:
    """planning.provisioning.ProvisioningDecision -> the workflow's small payload."""
    launches = [NodeClaimLaunch(
        node_pool=launch.node_pool, pods=list(launch.pods),
        replacement=to_replacement(launch.replacement))
        for launch in decision.launches]
    pending = sum(len(lt.pods) for lt in launches) + len(decision.nominated) + len(decision.scheduled) + len(
        decision.unservable)
    return ProvisioningPlan(launches=launches, nominated=len(decision.nominated), scheduled=len(decision.scheduled),
                            unservable=[u.pod for u in decision.unservable],
                            pools_at_limit=sorted(decision.pools_at_limit), gone=max(batch - pending, 0))


def explanation_events(decision: Any, batch_id: str, now: datetime) -> list[dict[str, Any]]:
    """FailedScheduling on each pod no pool serves; NodePoolLimitsReached on each pool whose limits stop a launch.
    Named by batch and content, so a retried activity records each once."""
    def named(kind: str, name: str, reason: str, message: str, namespace: str = "default",
              uid: str | None = None) -> dict[str, Any]:
        digest = hashlib.sha1(f"{batch_id}/{kind}/{namespace}/{name}/{reason}/{message}".encode()).hexdigest()[:16]
        return event_body(kind, name, reason, message, now, uid=uid, type_="Warning", namespace=namespace,
                          event_name=f"{name}.{digest}")

    out = []
    for u in decision.unservable:
        namespace, _, name = u.pod.partition("/")
        out.append(named("Pod", name, EventReason.FAILED_SCHEDULING, events.no_nodepool_serves(u.message()),
                         namespace, u.uid))
    for pool, detail in sorted(decision.pools_at_limit.items()):
        waiting = sum(1 for u in decision.unservable for e in u.exclusions
                      if e.node_pool == pool and e.reason is Exclusion.LIMITS)
        out.append(named("NodePool", pool, EventReason.NODEPOOL_LIMITS_REACHED,
                         events.nodepool_limits_reached(pool, detail, waiting)))
    return out


class ProvisioningPlanner:
    """Clients come in: the Kubernetes gateway (Events), the planner's cluster reader, the catalog."""

    def __init__(self, kube: KubeClient, reader: ClusterReader, catalog: InstanceTypeCatalog | None = None,
                 offerings: UnavailableOfferings | None = None) -> None:
        self._kube = kube
        self._reader = reader
        self._catalog = catalog
        self._offerings = offerings  # offerings EC2 refused lately are not planned on

    @activity.defn(name="provisioning_plan")
    async def plan(self, inp: ProvisioningPlanInput) -> ProvisioningPlan:
        """Re-plan the batch on the cluster as it is now: pods bound or gone since the batch closed launch nothing."""
        objs, snapshot, parsed = await self._reader.read_cluster()
        decision = await asyncio.to_thread(self._decide, objs, snapshot, parsed, inp)
        await asyncio.to_thread(self._explain, explanation_events(decision, inp.batch_id, datetime.now(UTC)))
        return to_plan(decision, len(inp.pods))

    def _decide(self, objs: list[dict[str, Any]], snapshot: Any, parsed: Any, inp: ProvisioningPlanInput) -> Any:
        from api.snapshot import Snapshot
        from planning.provisioning import decide

        full = current_catalog(load_catalog(inp.catalog_path) if inp.catalog_path else self._catalog)
        catalog = with_unavailable(full, self._offerings)
        snapshot = snapshot if snapshot is not None else Snapshot.from_objects(objs)
        started = time.perf_counter()
        try:
            decision = decide(snapshot, catalog, pods=[p.uid for p in inp.pods], parsed=parsed)
        finally:  # Karpenter's provisioner times its scheduling simulation the same way (scheduling/metrics.go)
            km.SCHEDULING_DURATION.labels(controller="provisioner").observe(time.perf_counter() - started)
        return cap_spot_fallbacks(decision, snapshot, full, catalog)

    def _explain(self, bodies: list[dict[str, Any]]) -> None:
        for body in bodies:
            try:
                self._kube.create_event(body)
            except Exception as exc:  # explanations are best effort; never fail the batch over them
                activity.logger.warning("could not record a provisioning event: %s", exc)

    @activity.defn(name="provisioning_no_capacity")
    async def no_capacity(self, inp: LaunchFailedInput) -> None:
        """A Warning on the NodePool: every offering of a launch answered ICE, and whether the batch retries."""
        now = datetime.now(UTC)
        message = events.insufficient_capacity(inp.offerings, inp.retry_seconds)
        digest = hashlib.sha1(f"{inp.batch_id}/{inp.node_pool}/{message}".encode()).hexdigest()[:16]
        body = event_body("NodePool", inp.node_pool, EventReason.INSUFFICIENT_CAPACITY, message, now,
                          type_="Warning", event_name=f"{inp.node_pool}.{digest}")
        await asyncio.to_thread(self._explain, [body])


def cap_spot_fallbacks(decision: Any, snapshot: Any, full: InstanceTypeCatalog | None,
                       applied: InstanceTypeCatalog | None) -> Any:
    """spot.maxOnDemandFraction (planning/spot_return.py): on-demand fallback launches over a pool's cap are dropped
    and their pods get a FailedScheduling Event naming the cap. Nothing refused lately: no launch is a fallback."""
    if full is None or applied is None or applied is full:
        return decision
    for capped in cap_fallbacks(decision, snapshot, full, applied, datetime.now(UTC)):
        metrics.SPOT_FALLBACKS_CAPPED.labels(nodepool=capped.node_pool).inc()
    return decision
