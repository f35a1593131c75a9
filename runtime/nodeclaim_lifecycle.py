"""The NodeClaim lifecycle controller: turns a launched instance into a node nodeflow manages.

Karpenter's `nodeclaim/lifecycle` and `nodeclaim/podevents` (docs/decisions.md §19): for each NodeClaim it
records the launch (from the instance, should the launch activity not have), registers the claim's Node
(finalizer, owner reference, labels, taints, `karpenter.sh/registered`), initializes it
(`karpenter.sh/initialized`), deletes a claim that never launched or registered in time (its termination then
terminates the instance), keeps `status.lastPodEventTime` and the `Consolidatable` condition, and keeps
Karpenter's root condition `Ready` on every launched claim, also one it adopts with its other conditions already
written (kubectl's READY column reads it).

Level-triggered: the worker's watch cache (runtime/cluster_cache.py) tells which claims changed, a resync looks at
all of them every `resync_seconds`, and every write is computed from the freshest object and patched with its
resourceVersion (KubeClient.update), so a crash, a missed event or a second worker replica changes nothing but
timing. The decisions themselves are pure (planning/lifecycle/).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from api import labels as L
from api.allocatable import VM_MEMORY_OVERHEAD_PERCENT
from api.catalog import InstanceTypeCatalog
from api.duration import parse_nillable_duration
from api.ec2nodeclass import KIND as NODE_CLASS_KIND
from api.ec2nodeclass import EC2NodeClass, load_ec2nodeclass
from api.nodeclaim import INITIALIZED, LAUNCHED, REGISTERED
from api.timestamps import format_seconds, parse_time
from gateways.ec2 import CloudProvider, cloud_provider
from gateways.kube import KubeClient, Obj
from planning.lifecycle import consolidatable, initialization, launch, liveness, registration
from planning.lifecycle.conditions import TRUE, UNKNOWN, conditions_of, is_true, same, status_of, with_condition
from planning.lifecycle.disruption_conditions import with_ready
from runtime.cache_controller import CacheController
from runtime.cluster_cache import ClusterCache
from telemetry import karpenter_metrics as km
from telemetry import metrics

log = logging.getLogger(__name__)
KINDS = ("NodePool", "NodeClaim", "Node", "Pod")


@dataclass
class LifecycleSettings:
    resync_seconds: float = 10.0
    debounce_seconds: float = 0.2
    launch_lookup_after_seconds: float = 5.0  # a claim this old with no launch record has its instance looked up
    launch_ttl_seconds: float = liveness.LAUNCH_TTL.total_seconds()
    registration_ttl_seconds: float = liveness.REGISTRATION_TTL.total_seconds()
    concurrency: int = 16


def _meta(obj: Obj) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _pool_timing(pool: Obj | None) -> tuple[timedelta | None, bool]:
    """(consolidateAfter, static) of a NodePool; a malformed duration reads as "Never" (no Consolidatable)."""
    spec = (pool or {}).get("spec") or {}
    raw = (spec.get("disruption") or {}).get("consolidateAfter", "0s")
    try:
        after = parse_nillable_duration(str(raw))
    except ValueError:
        after = None
    return after, spec.get("replicas") is not None


class NodeClaimLifecycle(CacheController):
    """One per worker process; `run()` until `stop()`."""

    name = "nodeclaim lifecycle"
    kinds = KINDS

    def __init__(self, kube: KubeClient, cache: ClusterCache, ec2: CloudProvider | Any,
                 catalog: Callable[[], InstanceTypeCatalog], settings: LifecycleSettings | None = None,
                 clock: Callable[[], datetime] | None = None) -> None:
        self.settings = settings or LifecycleSettings()
        super().__init__(cache, self.settings.resync_seconds, self.settings.debounce_seconds)
        self.kube, self.catalog = kube, catalog
        self.ec2 = cloud_provider(ec2) if ec2 is not None else None  # None: a test world without a cloud
        self.clock = clock or (lambda: datetime.now(UTC))
        self._lock = threading.Lock()
        self._dirty: set[str] = set()
        self._all_dirty = True
        self._pod_events: dict[str, datetime] = {}  # node name -> last pod event not written yet
        self._claim_of_node: dict[str, str] = {}  # node name or providerID -> claim name
        self.passes = 0

    # ---- change tracking (informer threads) ------------------------------------------------------------------

    def changed(self, kind: str, old: Obj | None, new: Obj | None) -> bool:
        with self._lock:
            if old is None and new is None:
                self._all_dirty = True
            elif kind == "NodeClaim":
                self._dirty.add(_meta(new or old or {}).get("name", ""))
            elif kind == "Node":
                obj = new or old or {}
                for key in (_meta(obj).get("name", ""), (obj.get("spec") or {}).get("providerID") or ""):
                    if key in self._claim_of_node:
                        self._dirty.add(self._claim_of_node[key])
            elif kind == "Pod":
                node = consolidatable.pod_event_node(old, new)
                if node:
                    self._pod_events[node] = self.clock()
                    if node in self._claim_of_node:
                        self._dirty.add(self._claim_of_node[node])
            elif kind == "NodePool":
                self._all_dirty = True
        return True

    async def pass_once(self) -> None:
        with km.reconcile("nodeclaim.lifecycle"):  # controller_runtime_reconcile_*
            await self.reconcile()

    def _take_dirty(self) -> set[str] | None:
        """The claims to look at (None: all of them) since the last pass."""
        with self._lock:
            everything, names = self._all_dirty, self._dirty
            self._all_dirty, self._dirty = False, set()
        return None if everything else names

    async def reconcile(self, full: bool = False) -> int:
        """One pass over the changed claims (all of them at a resync or when `full`); returns how many."""
        wanted = None if full else self._take_dirty()
        if wanted is None or not self._resynced_recently():
            wanted = None
        view = _View.read(self.cache)
        self._index(view)
        claims = [c for c in view.claims if wanted is None or _meta(c).get("name") in wanted]
        instances = await asyncio.to_thread(self._instances_for, claims)
        sem = asyncio.Semaphore(self.settings.concurrency)

        async def one(claim: Obj) -> None:
            async with sem:
                try:
                    await asyncio.to_thread(self._reconcile_claim, claim, view, instances)
                except Exception as exc:
                    log.warning("nodeclaim %s: lifecycle step failed: %s", _meta(claim).get("name"), exc)

        await asyncio.gather(*(one(c) for c in claims))
        self.passes += 1
        return len(claims)

    _last_full: float = 0.0

    def _resynced_recently(self) -> bool:
        """False once `resync_seconds` have passed since the last full pass (which this pass then becomes)."""
        now = self.clock().timestamp()
        if now - self._last_full >= self.settings.resync_seconds:
            self._last_full = now
            return False
        return True

    def _index(self, view: _View) -> None:
        with self._lock:
            self._claim_of_node = {}
            for c in view.claims:
                status, name = c.get("status") or {}, _meta(c).get("name", "")
                for key in (status.get("nodeName"), status.get("providerID")):
                    if key:
                        self._claim_of_node[key] = name

    # ---- one claim ---------------------------------------------------------------------------------------------

    def _reconcile_claim(self, claim: Obj, view: _View, instances: dict[str, dict[str, Any]]) -> None:
        if _meta(claim).get("deletionTimestamp"):
            return
        name, now = _meta(claim)["name"], self.clock()
        if L.TERMINATION_FINALIZER not in (_meta(claim).get("finalizers") or []):
            self.kube.add_finalizer("NodeClaim", name)
        if not (claim.get("status") or {}).get("providerID"):
            if name in instances:
                self.record_launch(name, instances[name], self._node_class(claim))
            else:
                self._liveness(claim, now)
            return
        if not is_true(claim, LAUNCHED):  # a providerID from elsewhere (a restored or imported claim) is a launch
            self._patch_status(claim, lambda obj: (with_condition(
                conditions_of(obj), LAUNCHED, TRUE, "Launched", "", now), {}))
        else:  # an adopted claim may carry its dependents without the root: Ready is written here then
            self._patch_status(claim, lambda obj: (conditions_of(obj), {}))
        if not is_true(claim, REGISTERED):
            if status_of(claim, REGISTERED) == UNKNOWN:  # MultipleNodesFound (False) is final: liveness decides
                self._register(claim, view, now)
            else:
                self._liveness(claim, now)
            return
        node = view.nodes_by_name.get((claim.get("status") or {}).get("nodeName") or "")
        if not is_true(claim, INITIALIZED):
            self._initialize(claim, node, now)
        self._pod_event(claim, now)
        self._consolidatable(claim, view, now)

    def record_launch(self, name: str, instance: dict[str, Any], node_class: EC2NodeClass | None = None) -> None:
        """Write the launch record of claim `name` from its instance (idempotent); `node_class`, the claim's,
        shapes capacity and allocatable."""
        catalog = self.catalog()
        itype = catalog.get(str(instance.get("InstanceType") or ""))
        overhead = float(getattr(catalog, "vm_memory_overhead_percent", VM_MEMORY_OVERHEAD_PERCENT))
        def patch(obj: Obj, part: int) -> Obj | None:
            return launch.launch_patch(obj, instance, itype, self.clock(), node_class=node_class,
                                       overhead_percent=overhead)[part]

        # the labels first, as Karpenter patches them before the status: a claim that says Launched carries its
        # instance's labels, so no pass reads it in between as RequirementsDrifted (docs/semantics.md §4)
        self.kube.update("NodeClaim", name, lambda obj: patch(obj, 0))
        if self.kube.update("NodeClaim", name, lambda obj: patch(obj, 1), status=True):
            metrics.NODECLAIM_LIFECYCLE.labels(step="launched").inc()

    def _node_class(self, claim: Obj) -> EC2NodeClass | None:
        """The claim's EC2NodeClass, None when it names another kind or it cannot be read (the record then
        carries an AL2023 class's figures, as planning predicts without a class)."""
        ref = (claim.get("spec") or {}).get("nodeClassRef") or {}
        if ref.get("kind", NODE_CLASS_KIND) != NODE_CLASS_KIND or not ref.get("name"):
            return None
        try:
            obj = self.kube.get_node_class(str(ref["name"]))
            return load_ec2nodeclass(obj) if obj is not None else None
        except Exception as exc:  # a record without the class's disks beats no record
            log.warning("nodeclaim %s: EC2NodeClass %s not read: %s", _meta(claim).get("name"), ref["name"], exc)
            return None

    def _liveness(self, claim: Obj, now: datetime) -> None:
        timeout = liveness.expired(claim, now, timedelta(seconds=self.settings.launch_ttl_seconds),
                                   timedelta(seconds=self.settings.registration_ttl_seconds))
        if timeout is None:
            return
        name = _meta(claim)["name"]
        log.info("nodeclaim %s: %s, deleting it", name, timeout.value, extra={"nodeclaim": name})
        if self.kube.delete_node_claim(name):
            metrics.NODECLAIMS_LIFECYCLE_DELETED.labels(reason=timeout.value).inc()
            km.record_liveness_deleted(claim, timeout.value)

    def _register(self, claim: Obj, view: _View, now: datetime) -> None:
        name = _meta(claim)["name"]
        nodes = view.nodes_by_provider.get((claim.get("status") or {}).get("providerID") or "", [])
        reg = registration.register(claim, nodes, now)
        if reg.node_name:
            self.kube.update("Node", reg.node_name, lambda n: registration.node_patch(n, claim))
        if reg.taint_missing:
            self.kube.event("Node", nodes[0], reg.node_name, "UnregisteredTaintMissing",
                            f"Missing karpenter.sh/unregistered taint which prevents registration related race "
                            f"conditions on Karpenter-managed nodes (NodeClaim {name})", type_="Warning")
        extra = {"nodeName": reg.node_name} if reg.node_name else {}
        if self._patch_status(claim, lambda obj: (registration.register(obj, nodes, now).conditions, extra)) \
                and reg.node_name:
            metrics.NODECLAIM_LIFECYCLE.labels(step="registered").inc()
            km.record_node_created(claim)
        if not reg.node_name:
            self._liveness(claim, now)

    def _patch_status(self, cached: Obj, decide: Callable[[Obj], tuple[list[Obj], dict[str, Any]]]) -> bool:
        """Decide the conditions (and other status fields) on the cached claim; when they would change, decide
        again on the freshest one and patch that (so a steady resync makes no API call). Every write carries the
        root `Ready` recomputed from its dependents, as operatorpkg's condition set does."""
        now = self.clock()

        def change(obj: Obj) -> Obj | None:
            conds, extra = decide(obj)
            conds = with_ready(conds, parse_time(_meta(obj).get("creationTimestamp")), now)
            status = obj.get("status") or {}
            if same(conds, conditions_of(obj)) and all(status.get(k) == v for k, v in extra.items()):
                return None
            return {"status": {"conditions": conds, **extra}}

        if change(cached) is None:
            return False
        return bool(self.kube.update("NodeClaim", _meta(cached)["name"], change, status=True))

    def _initialize(self, claim: Obj, node: Obj | None, now: datetime) -> None:
        verdict = initialization.check(claim, node)
        if verdict.reason is not None or node is None:
            reason = verdict.reason.value if verdict.reason else ""
            self._patch_status(claim, lambda obj: (with_condition(
                conditions_of(obj), INITIALIZED, UNKNOWN, reason, verdict.message, now), {}))
            return
        def label(n: Obj) -> Obj | None:
            done = (_meta(n).get("labels") or {}).get(L.INITIALIZED_LABEL) == "true"
            return None if done else {"metadata": {"labels": {L.INITIALIZED_LABEL: "true"}}}

        if label(node) is not None:
            self.kube.update("Node", _meta(node)["name"], label)

        def initialized(obj: Obj) -> tuple[list[Obj], dict[str, Any]]:  # Ready follows in _patch_status
            return with_condition(conditions_of(obj), INITIALIZED, TRUE, "Initialized", "", now), {}

        if self._patch_status(claim, initialized):
            metrics.NODECLAIM_LIFECYCLE.labels(step="initialized").inc()

    def _pod_event(self, claim: Obj, now: datetime) -> None:
        node = (claim.get("status") or {}).get("nodeName") or ""
        with self._lock:
            seen = self._pod_events.get(node)
        if seen is None:
            return

        def change(obj: Obj) -> Obj | None:
            if not consolidatable.pod_event_due(obj, seen):
                return None
            return {"status": {"lastPodEventTime": format_seconds(seen)}}

        if change(claim) is not None:
            self.kube.update("NodeClaim", _meta(claim)["name"], change, status=True)
        with self._lock:
            if self._pod_events.get(node) == seen:
                del self._pod_events[node]

    def _consolidatable(self, claim: Obj, view: _View, now: datetime) -> None:
        after, static = _pool_timing(view.pools.get((_meta(claim).get("labels") or {}).get(L.NODEPOOL_LABEL, "")))
        self._patch_status(claim, lambda obj: (
            consolidatable.consolidatable_conditions(obj, after, static, now)[0], {}))

    # ---- instances of claims with no launch record ---------------------------------------------------------------

    def _instances_for(self, claims: Iterable[Obj]) -> dict[str, dict[str, Any]]:
        """Claim name -> its live instance, for claims old enough and still without a launch record."""
        now = self.clock()
        names = []
        for c in claims:
            created = parse_time(_meta(c).get("creationTimestamp"))
            unlaunched = not (c.get("status") or {}).get("providerID")
            old = created is None or (now - created).total_seconds() >= self.settings.launch_lookup_after_seconds
            if unlaunched and old and not _meta(c).get("deletionTimestamp"):
                names.append(_meta(c)["name"])
        uids = {_meta(c)["name"]: _meta(c).get("uid", "") for c in claims}
        out: dict[str, dict[str, Any]] = {}
        for start in range(0, len(names), 200):
            for inst in self.ec2.instances(filters=[
                    {"Name": f"tag:{L.NODECLAIM_TAG}", "Values": names[start:start + 200]},
                    {"Name": "instance-state-name", "Values": ["pending", "running"]}]):
                tags = {t["Key"]: t["Value"] for t in inst.get("Tags") or []}
                owner = tags.get(L.NODECLAIM_TAG, "")
                if tags.get(L.NODECLAIM_UID_TAG, uids.get(owner)) == uids.get(owner):
                    out[owner] = inst
        return out


@dataclass(frozen=True)
class _View:
    """One consistent read of the cache for a pass."""

    claims: list[Obj]
    nodes_by_name: dict[str, Obj]
    nodes_by_provider: dict[str, list[Obj]]
    pools: dict[str, Obj]

    @classmethod
    def read(cls, cache: ClusterCache) -> _View:
        def objs(kind: str) -> list[Obj]:
            inf = cache.informers.get(kind)
            return inf.objects() if inf is not None else []

        nodes = objs("Node")
        by_provider: dict[str, list[Obj]] = {}
        for n in nodes:
            pid = (n.get("spec") or {}).get("providerID")
            if pid:
                by_provider.setdefault(pid, []).append(n)
        return cls(claims=objs("NodeClaim"), nodes_by_name={_meta(n)["name"]: n for n in nodes},
                   nodes_by_provider=by_provider, pools={_meta(p)["name"]: p for p in objs("NodePool")})
