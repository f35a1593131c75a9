"""The NodePool status controller: `status.resources`, `status.nodes`, the conditions and allowed disruptions.

Karpenter's nodepool counter, readiness, validation and registrationhealth controllers in one watch-driven loop
(docs/semantics.md §18), the same shape as runtime/nodeclaim_lifecycle.py: the worker's watch cache says what
changed (NodePools, NodeClaims, Nodes, EC2NodeClasses), passes are debounced, a resync every `resync_seconds`
re-decides everything (budget windows open and close with the clock), the decisions are pure
(planning/lifecycle/nodepool_status.py) and a write happens only when the status or annotation would change, computed
again on the freshest object and patched with its resourceVersion (KubeClient.update).

It also keeps the NodeClaims' `Drifted` condition for NodePool drift (NodePoolDrifted, RequirementsDrifted), as
Karpenter's nodeclaim disruption controller does, since it reads the same pools and claims.

NodeRegistrationHealthy needs history a level cannot give: the last 4 launch outcomes per pool. They are
kept in memory (Karpenter's nodepoolhealth.State) and fed by NodeClaim watch events; a restart hydrates them
from the condition already written, as Karpenter's controller does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import ValidationError

from api import labels as L
from api.budgets import ALL_REASONS, compute_budget_rows
from api.catalog import InstanceTypeCatalog
from api.nodeclaim import LAUNCHED, NodeClaim
from api.nodepool import NodePool
from api.timestamps import parse_time
from gateways.kube import KubeClient, Obj
from planning.cluster import parse_claim, parse_node, parse_pool
from planning.disruption.drift import INSTANCE_TYPE_DRIFT_AFTER, instance_type_not_found, nodepool_drift
from planning.lifecycle import liveness
from planning.lifecycle import nodepool_status as nps
from planning.lifecycle.conditions import is_true
from planning.lifecycle.disruption_conditions import nodepool_drifted
from runtime.cache_controller import CacheController
from runtime.cluster_cache import ClusterCache

log = logging.getLogger(__name__)
KINDS = ("NodePool", "NodeClaim", "Node", "EC2NodeClass")
PACE = 4.0  # the wait after a pass is at least PACE times what the pass took


@dataclass
class StatusSettings:
    resync_seconds: float = 10.0
    debounce_seconds: float = 1.0  # a burst of node events makes one pass
    launch_ttl_seconds: float = liveness.LAUNCH_TTL.total_seconds()
    registration_ttl_seconds: float = liveness.REGISTRATION_TTL.total_seconds()


def _meta(obj: Obj) -> dict[str, Any]:
    return obj.get("metadata") or {}


class NodePoolStatusController(CacheController):
    """One per worker process; `run()` until `stop()`. Every replica may run it: writes are optimistic."""

    name = "nodepool status"
    kinds = KINDS

    def __init__(self, kube: KubeClient, cache: ClusterCache, settings: StatusSettings | None = None,
                 clock: Callable[[], datetime] | None = None,
                 catalog: Callable[[], InstanceTypeCatalog | None] | None = None) -> None:
        """`catalog`: the instance types in force, for InstanceTypeNotFound drift (none: that drift is not written)."""
        self.settings = settings or StatusSettings()
        self.catalog = catalog
        # a pass costs ~1 s of CPU at 5,000 nodes: under churn, pass at most a fifth of the time
        super().__init__(cache, self.settings.resync_seconds, self.settings.debounce_seconds, pace=PACE)
        self.kube = kube
        self.clock = clock or (lambda: datetime.now(UTC))
        self._lock = threading.Lock()
        self._trackers: dict[str, nps.RegistrationTracker] = {}
        self._failures: dict[str, nps.Cond] = {}  # pool -> the failing claim's reason, not yet written
        self._claims: dict[str, tuple[str, NodeClaim]] = {}  # name -> (resourceVersion, model)
        self._drift_checked: dict[str, tuple[Any, ...]] = {}  # claim -> the versions its Drifted was right for
        self.passes = 0
        self.writes = 0

    # ---- change tracking (informer threads) ------------------------------------------------------------------

    def changed(self, kind: str, old: Obj | None, new: Obj | None) -> bool:
        if kind == "NodeClaim":
            self._registration_event(old, new)
        return kind in KINDS

    def _registration_event(self, old: Obj | None, new: Obj | None) -> None:
        ok = nps.registration_outcome(old, new, self.clock(),
                                      timedelta(seconds=self.settings.launch_ttl_seconds),
                                      timedelta(seconds=self.settings.registration_ttl_seconds))
        pool = (_meta(new or old or {}).get("labels") or {}).get(L.NODEPOOL_LABEL)
        if ok is None or not pool:
            return
        with self._lock:
            tracker = self._tracker(pool)
            if not ok and tracker.status(False) is nps.Health.UNHEALTHY:
                self._failures[pool] = nps.failure_cond(old or {})
            tracker.record(ok)

    def _tracker(self, pool: str) -> nps.RegistrationTracker:
        """The pool's tracker, hydrated from its written condition the first time (under self._lock)."""
        tracker = self._trackers.get(pool)
        if tracker is None:
            tracker = self._trackers[pool] = nps.RegistrationTracker()
            inf = self.cache.informers.get("NodePool")
            cached = inf.get(("", pool)) if inf is not None else None
            if cached is not None:
                tracker.set(nps.health_of(cached))
        return tracker

    # ---- the loop ----------------------------------------------------------------------------------------------

    async def pass_once(self) -> None:
        await asyncio.to_thread(self.reconcile)

    def _objects(self, kind: str) -> list[Obj]:
        inf = self.cache.informers.get(kind)
        if inf is not None:
            return inf.objects()
        return self.kube.list_node_classes() if kind == "EC2NodeClass" else []

    def reconcile(self) -> int:
        """One pass over every NodePool; returns how many it patched (status or annotation)."""
        now = self.clock()
        pools = [p for p in self._objects("NodePool") if not _meta(p).get("deletionTimestamp")]
        claims, nodes = self._objects("NodeClaim"), self._objects("Node")
        classes = {_meta(c).get("name"): c for c in self._objects("EC2NodeClass")}
        resources = nps.pool_resources(claims, nodes)
        models = []
        for p in pools:
            with contextlib.suppress(ValidationError):
                models.append(NodePool.model_validate(p))
        rows = compute_budget_rows(models, nodes, self._claim_models(claims), now, ALL_REASONS)
        patched = self._mark_drift(models, claims, nodes, now)
        for pool in pools:
            if not nps.managed(pool):
                continue
            name = _meta(pool).get("name", "")
            try:
                patched += self._reconcile_pool(pool, classes.get(nps.node_class_ref(pool).get("name")),
                                                nps.resources_for(name, resources),
                                                nps.allowed_disruptions(name, rows), now)
            except Exception as exc:
                log.warning("nodepool %s: status not written: %s", name, exc)
        self.passes += 1
        self.writes += patched
        return patched

    def _mark_drift(self, models: list[NodePool], claims: list[Obj], nodes: list[Obj], now: datetime) -> int:
        """NodeClaims' Drifted for NodePool drift (Karpenter's nodeclaim disruption controller, static and
        requirements drift): set on launched claims whose pool they no longer match, cleared when they match again.
        Returns how many claims it patched."""
        pools = {p.name: parse_pool(p) for p in models}
        versions = {p.name: p.metadata.resource_version or "" for p in models}
        catalog = self.catalog() if self.catalog is not None else None
        patched, seen = 0, {}
        for claim, node in nps.pair_nodes(claims, nodes):
            if claim is None or _meta(claim).get("deletionTimestamp") or not is_true(claim, LAUNCHED):
                continue
            pool_name = (_meta(claim).get("labels") or {}).get(L.NODEPOOL_LABEL, "")
            pool = pools.get(pool_name)
            if pool is None or not pool.node_class:
                continue
            name = _meta(claim)["name"]
            created = parse_time(_meta(claim).get("creationTimestamp"))
            old = created is not None and now - created > INSTANCE_TYPE_DRIFT_AFTER  # InstanceTypeNotFound applies
            key = (_meta(claim).get("resourceVersion"), _meta(node or {}).get("resourceVersion"), versions[pool_name],
                   id(catalog), old)
            seen[name] = key
            if self._drift_checked.get(name) == key:
                continue  # nothing it depends on changed since it was found as wanted
            info = parse_node(0, node or {"metadata": {"name": (claim.get("status") or {}).get("nodeName") or ""}})
            info.claim = parse_claim(claim)
            reason = nodepool_drift(info, pool)
            if reason is None and catalog is not None:
                reason = instance_type_not_found(info, catalog, now)  # docs/semantics.md §4.1
            change = nodepool_drifted(reason, now)
            if change(claim) is None:
                continue
            seen.pop(name)  # written (or failed): look again at the next pass
            try:
                if self.kube.update("NodeClaim", name, change, status=True):
                    patched += 1
            except Exception as exc:
                log.warning("nodeclaim %s: Drifted not written: %s", name, exc)
        self._drift_checked = seen
        return patched

    def _claim_models(self, claims: list[Obj]) -> list[NodeClaim]:
        """The claims as models for api.budgets, validated again only when their resourceVersion moved (0.85 ms a
        claim: 4 s a pass at 5,000 nodes otherwise)."""
        models: dict[str, tuple[str, NodeClaim]] = {}
        out = []
        for c in claims:
            name, rv = _meta(c).get("name", ""), _meta(c).get("resourceVersion", "")
            cached = self._claims.get(name)
            if cached is None or cached[0] != rv or not rv:
                try:
                    cached = (rv, NodeClaim.model_validate(c))
                except ValidationError:
                    continue
            models[name] = cached
            out.append(cached[1])
        self._claims = models
        return out

    def _reconcile_pool(self, pool: Obj, node_class: Obj | None, resources: dict[str, str], allowed: str,
                        now: datetime) -> int:
        name = _meta(pool)["name"]
        class_gen = _meta(node_class).get("generation") if node_class is not None else None
        reset = nps.registration_reset(pool, class_gen)
        with self._lock:
            tracker = self._tracker(name)
            if reset:
                tracker.set(nps.Health.UNKNOWN)
                self._failures.pop(name, None)
            registration = nps.registration(pool, tracker.status(), reset, self._failures.pop(name, None))
        decided = nps.status_conditions(pool, node_class, registration)
        patched = 0
        if nps.status_patch(pool, resources, decided, class_gen, now) is not None and self.kube.update(
                "NodePool", name, lambda obj: nps.status_patch(obj, resources, decided, class_gen, now), status=True):
            patched += 1
        if allowed and nps.annotation_patch(pool, allowed) is not None and self.kube.update(
                "NodePool", name, lambda obj: nps.annotation_patch(obj, allowed)):
            patched += 1
        return patched


def start_nodepool_status(kube: KubeClient, cache: ClusterCache, lifecycle_settings: Any = None,
                          catalog: Callable[[], InstanceTypeCatalog | None] | None = None
                          ) -> tuple[NodePoolStatusController, asyncio.Task[None]]:
    """The controller and its task, on the worker's watch cache (timings shrink with the lifecycle's in tests)."""
    settings = StatusSettings()
    if lifecycle_settings is not None:
        settings.resync_seconds = lifecycle_settings.resync_seconds
        settings.debounce_seconds = min(settings.debounce_seconds, lifecycle_settings.debounce_seconds * 5)
        settings.launch_ttl_seconds = lifecycle_settings.launch_ttl_seconds
        settings.registration_ttl_seconds = lifecycle_settings.registration_ttl_seconds
    controller = NodePoolStatusController(kube, cache, settings, catalog=catalog)
    return controller, asyncio.create_task(controller.run(), name="nodepool-status")
