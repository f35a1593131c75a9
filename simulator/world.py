"""The simulated cluster behind the API: deletion with finalizers and grace periods, ownerReference cascade,
PDB status, the Eviction API, the kubelet's pod start and stop, node readiness, and the fault knobs tests use.

Everything here runs under `store.lock`; delayed work (grace periods, ready delays) goes on a timer heap
that the server loop drains every few milliseconds. Durations are multiplied by `time_scale`.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import random
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from api.catalog import InstanceTypeCatalog, load_default_catalog
from simulator.controllers import Controllers
from simulator.errors import ApiError, success_status
from simulator.ledger import Ledger, Removal
from simulator.patch import deep_copy
from simulator.pdb import compute_status, pdb_matches, removal_violates
from simulator.pods import (
    condition_true,
    grace_seconds,
    is_deleting,
    meta,
    node_ready,
    pod_healthy,
    pod_phase,
    pod_terminal,
    set_condition,
)
from simulator.resources import BY_KIND, ResourceType
from simulator.scheduler import Scheduler
from simulator.scheduler_timing import SchedulerTiming
from simulator.store import Store, now_rfc3339

PODS = BY_KIND["Pod"]
NODES = BY_KIND["Node"]
PDBS = BY_KIND["PodDisruptionBudget"]
NODECLAIMS = BY_KIND["NodeClaim"]
NAMESPACES = BY_KIND["Namespace"]
VOLUME_ATTACHMENTS = BY_KIND["VolumeAttachment"]

FOREGROUND_FINALIZER = "foregroundDeletion"
PDB_MESSAGE = "Cannot evict pod as it would violate the pod's disruption budget."
DEFAULT_READY_JITTER = 0.25
MULTI_PDB_MESSAGE = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."


def rfc3339_in(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


class World:
    """The simulated control plane and nodes. Public methods are safe to call from any thread."""

    def __init__(self, store: Store, time_scale: float = 1.0, ready_delay: float = 2.0,
                 catalog: InstanceTypeCatalog | None = None, ledger: Ledger | None = None,
                 pod_start_delay: float = 3.0, scheduler_timing: SchedulerTiming | None = None,
                 ready_jitter: float = DEFAULT_READY_JITTER, seed: int | None = 0) -> None:
        self.store = store
        self.time_scale = time_scale
        self.ready_delay = ready_delay
        self.scheduler_timing = scheduler_timing or SchedulerTiming()
        self.ready_jitter = ready_jitter  # each node's ready delay and each pod's start delay vary by this fraction
        self.rng = random.Random(seed)  # the jitter's: the same seed, the same delays
        self.clock: Callable[[], float] = time.monotonic  # real seconds; tests may drive it by hand
        self.pod_start_delay = pod_start_delay  # bound pod -> Running and Ready (image pull, readiness probe)
        self._start_pending: set[str] = set()
        self.catalog = catalog or load_default_catalog()
        self.ledger = ledger or Ledger()
        self.never_ready_types: set[str] = set()
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._dirty_pdbs: set[tuple[str, str]] = set()
        self._pdb_by_label: dict[tuple[str, str, str], set[str]] = {}  # (ns, key, value) of matchLabels -> PDBs
        self._pdb_loose: dict[str, set[str]] = {}  # PDBs without matchLabels, by namespace
        self._orphan_uids: set[str] = set()
        self._starting: set[tuple[str, str]] = set()
        self._ready_changed: set[str] = set()
        self._detaching: set[str] = set()
        self._foreground: set[tuple[str, str, str]] = set()  # (kind, namespace, name) awaiting dependents
        self.controllers = Controllers(store, self.delete_pod)
        self.scheduler = Scheduler(self)
        self.ec2: Any = None  # simulator.ec2.Ec2World when an EC2 endpoint is wired
        store.listeners.append(self._on_change)

    # ---- time --------------------------------------------------------------------------------------------
    def after(self, seconds: float, fn: Callable[[], None]) -> None:
        """Run `fn` (under the store lock) once `seconds` of simulated time have passed."""
        with self.store.lock:
            heapq.heappush(self._timers, (self.clock() + seconds * self.time_scale, next(self._seq), fn))

    def jittered(self, seconds: float) -> float:
        """`seconds` varied by up to ±ready_jitter of itself (kubelets and image pulls do not take equal times)."""
        if self.ready_jitter <= 0 or seconds <= 0:
            return seconds
        return seconds * (1.0 + self.rng.uniform(-self.ready_jitter, self.ready_jitter))

    def tick(self, schedule_budget: float | None = None) -> None:
        """One round of background work: due timers, kubelets, controllers, scheduler, PDB status. The scheduler
        spends at most `schedule_budget` wall seconds when given (Scheduler.schedule)."""
        with self.store.lock:
            now = self.clock()
            while self._timers and self._timers[0][0] <= now:
                _, _, fn = heapq.heappop(self._timers)
                fn()
            self._kubelets()
            self.controllers.reconcile()
            self.scheduler.schedule(schedule_budget)
            self._kubelets()
            self.refresh_pdbs()
            self._detach_volumes()
            if self._foreground:
                self._finish_foreground()

    # ---- change tracking ---------------------------------------------------------------------------------
    def _on_change(self, rt: ResourceType, kind: str, old: dict | None, new: dict | None) -> None:
        plural = rt.plural
        if plural == "pods":
            pod = new or old or {}
            key = (meta(pod).get("namespace") or "", meta(pod).get("name") or "")
            self._dirty_pdbs.update((key[0], name) for name in self._pdb_candidates(key[0], old, new))
            if new is not None and (new.get("spec") or {}).get("nodeName") and not is_deleting(new) \
                    and pod_phase(new) == "Pending":
                self._starting.add(key)
            else:
                self._starting.discard(key)
        elif plural == "nodes":
            was = old is not None and node_ready(old)
            now_ready = new is not None and node_ready(new)
            if was != now_ready and new is not None:
                self._ready_changed.add(meta(new)["name"])
        elif plural == "poddisruptionbudgets":
            self._index_pdb(old, new)
        elif plural in ("replicasets", "statefulsets") and (old or {}).get("spec") != (new or {}).get("spec"):
            ns = meta(new or old or {}).get("namespace") or ""
            self._dirty_pdbs.update((ns, meta(p)["name"]) for p in self.store.list(PDBS, ns))
        self.controllers.on_change(rt, kind, old, new)
        self.scheduler.on_change(rt, kind, old, new)

    # ---- deletion ----------------------------------------------------------------------------------------
    def delete(self, rt: ResourceType, namespace: str, name: str, grace: int | None = None,
               propagation: str | None = None, preconditions: dict | None = None,
               cause: str = "delete") -> tuple[dict[str, Any], bool]:
        """DELETE semantics: returns (the object as it now is, whether it is gone)."""
        with self.store.lock:
            obj = self.store.must_get(rt, namespace, name)
            self._check_preconditions(rt, obj, preconditions)
            if propagation == "Orphan":
                self._orphan_uids.add(meta(obj)["uid"])
            if rt is PODS:
                return self.delete_pod(obj, grace, cause)
            if is_deleting(obj):
                return obj, False
            if propagation == "Foreground" and self._dependents(rt, obj):
                return self._delete_foreground(rt, obj), False
            if meta(obj).get("finalizers"):
                new = deep_copy(obj)
                new["metadata"]["deletionTimestamp"] = now_rfc3339()
                new["metadata"]["deletionGracePeriodSeconds"] = 0
                return self.store.replace(rt, new), False
            return self.remove(rt, obj), True

    def _delete_foreground(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """Foreground cascade: the owner stays (finalizer foregroundDeletion) until its dependents are gone."""
        new = deep_copy(obj)
        new["metadata"]["deletionTimestamp"] = now_rfc3339()
        new["metadata"]["deletionGracePeriodSeconds"] = 0
        new["metadata"]["finalizers"] = [*(meta(obj).get("finalizers") or []), FOREGROUND_FINALIZER]
        stored = self.store.replace(rt, new)
        self._foreground.add((rt.kind, meta(obj).get("namespace") or "", meta(obj)["name"]))
        for dep_rt, dep in self._dependents(rt, stored):
            if not is_deleting(dep):
                with contextlib.suppress(ApiError):
                    self.delete(dep_rt, meta(dep).get("namespace") or "", meta(dep)["name"],
                                propagation="Foreground")
        return stored

    def _finish_foreground(self) -> None:
        for kind, ns, name in list(self._foreground):
            rt = BY_KIND[kind]
            obj = self.store.get(rt, ns, name)
            if obj is None:
                self._foreground.discard((kind, ns, name))
                continue
            if self._dependents(rt, obj):
                continue
            self._foreground.discard((kind, ns, name))
            new = deep_copy(obj)
            new["metadata"]["finalizers"] = [f for f in meta(obj).get("finalizers") or []
                                             if f != FOREGROUND_FINALIZER]
            self.finalize_if_done(rt, self.store.replace(rt, new))

    def _check_preconditions(self, rt: ResourceType, obj: dict, pre: dict | None) -> None:
        if not pre:
            return
        uid, rv = pre.get("uid"), pre.get("resourceVersion")
        if uid and uid != meta(obj).get("uid"):
            raise ApiError(409, f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
                                f"{meta(obj).get('uid')}", details={"name": meta(obj).get("name"),
                                                                    "kind": rt.plural})
        if rv and rv != meta(obj).get("resourceVersion"):
            raise ApiError(409, f"Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in "
                                f"object meta: {meta(obj).get('resourceVersion')}",
                           details={"name": meta(obj).get("name"), "kind": rt.plural})

    def delete_pod(self, pod: dict[str, Any], grace: int | None, cause: str) -> tuple[dict[str, Any], bool]:
        own_grace = grace_seconds(pod)
        g = own_grace if grace is None else max(int(grace), 0)
        if is_deleting(pod):
            current = meta(pod).get("deletionGracePeriodSeconds")
            if current is not None and g < current:
                return self._begin_pod_termination(pod, g), False
            return pod, False
        if cause == "delete" and grace is not None and g < own_grace:
            cause = "grace-deadline"
        self._record_removal(pod, cause)
        immediate = g == 0 or not (pod.get("spec") or {}).get("nodeName") or pod_terminal(pod)
        if immediate and not meta(pod).get("finalizers"):
            return self.remove(PODS, pod), True
        return self._begin_pod_termination(pod, 0 if immediate else g), False

    def _begin_pod_termination(self, pod: dict[str, Any], g: int) -> dict[str, Any]:
        new = deep_copy(pod)
        new["metadata"]["deletionTimestamp"] = rfc3339_in(g)
        new["metadata"]["deletionGracePeriodSeconds"] = g
        new = self.store.replace(PODS, new)
        uid, ns, name = meta(new)["uid"], meta(new).get("namespace") or "", meta(new)["name"]
        if g > 0:
            self.after(g, lambda: self._kubelet_stopped(ns, name, uid, g))
        return new

    def _kubelet_stopped(self, ns: str, name: str, uid: str, g: int) -> None:
        """The grace period ran out: the kubelet killed the containers and confirmed with a zero-grace delete."""
        pod = self.store.get(PODS, ns, name)
        if pod is None or meta(pod).get("uid") != uid or meta(pod).get("deletionGracePeriodSeconds") != g:
            return
        if meta(pod).get("finalizers"):
            new = deep_copy(pod)
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            self.store.replace(PODS, new)
        else:
            self.remove(PODS, pod)

    def finalize_if_done(self, rt: ResourceType, obj: dict[str, Any]) -> bool:
        """After an update: an object being deleted whose last finalizer went is removed (True when gone)."""
        m = meta(obj)
        if not m.get("deletionTimestamp") or m.get("finalizers"):
            return False
        if rt is PODS and m.get("deletionGracePeriodSeconds") and (obj.get("spec") or {}).get("nodeName") \
                and not pod_terminal(obj):
            return False  # still inside its grace period: the kubelet removes it when that ends
        self.remove(rt, obj)
        return True

    def remove(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """Take an object out of the store and run the garbage collector's cascade for it."""
        gone = self.store.remove(rt, meta(obj).get("namespace") or "", meta(obj)["name"])
        if gone is None:
            return obj
        self._cascade(rt, gone)
        return gone

    def _cascade(self, rt: ResourceType, gone: dict[str, Any]) -> None:
        uid = meta(gone).get("uid")
        name = meta(gone)["name"]
        if rt is NODES:
            for pod in self.store.pods_on_node(name):
                self._record_removal(pod, "node-gone")
                self._force_remove_pod(pod)
        if rt is NAMESPACES:
            for other in BY_KIND.values():
                if other.namespaced:
                    for obj in list(self.store.list(other, name)):
                        self._quiet_remove(other, obj)
        if uid in self._orphan_uids:
            self._orphan_uids.discard(uid)
            return
        if rt is PODS or rt.plural == "events":
            return  # nothing in a cluster is owned by a pod or an event
        for dep_rt, dep in self._dependents(rt, gone):
            if not is_deleting(dep):
                cause = "delete"
                with contextlib.suppress(ApiError):
                    self.delete(dep_rt, meta(dep).get("namespace") or "", meta(dep)["name"], cause=cause)

    def _quiet_remove(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        if rt is PODS and not is_deleting(obj):
            self._record_removal(obj, "delete")
        self.remove(rt, obj)

    def _force_remove_pod(self, pod: dict[str, Any]) -> None:
        """The pod garbage collector removes pods of a vanished node at once (finalizers still hold them)."""
        if meta(pod).get("finalizers"):
            if not is_deleting(pod):
                new = deep_copy(pod)
                new["metadata"]["deletionTimestamp"] = now_rfc3339()
                new["metadata"]["deletionGracePeriodSeconds"] = 0
                self.store.replace(PODS, new)
            return
        self.remove(PODS, pod)

    def _dependents(self, rt: ResourceType, owner: dict[str, Any]) -> list[tuple[ResourceType, dict[str, Any]]]:
        uid = meta(owner).get("uid")
        ns = meta(owner).get("namespace") or ""
        out: list[tuple[ResourceType, dict[str, Any]]] = []
        out.extend((PODS, p) for p in self.store.pods_owned_by(uid))
        for dep_rt in BY_KIND.values():
            if dep_rt is PODS or dep_rt.plural in ("events", "namespaces"):
                continue
            if rt.namespaced and not dep_rt.namespaced:
                continue  # namespaced owners cannot own cluster-scoped objects
            scope = ns if (rt.namespaced and dep_rt.namespaced) else None
            for obj in self.store.list(dep_rt, scope):
                if any(ref.get("uid") == uid for ref in meta(obj).get("ownerReferences") or []):
                    out.append((dep_rt, obj))
        return out

    # ---- ledger ------------------------------------------------------------------------------------------
    def _record_removal(self, pod: dict[str, Any], cause: str) -> None:
        """Ledger entry for a pod about to leave; call it while the pod is still in the store, as it was."""
        if is_deleting(pod):
            return
        healthy = pod_healthy(pod)
        ns = meta(pod).get("namespace") or ""
        violated = sorted(f"{ns}/{meta(pdb)['name']}" for pdb in self.pdbs_for_pod(pod) if healthy
                          and removal_violates(pdb, self.pdb_pods(pdb), self.controllers.scale_of, pod))
        self.ledger.record_removal(Removal(pod=f"{ns}/{meta(pod)['name']}",
                                           node=(pod.get("spec") or {}).get("nodeName"),
                                           cause=cause, healthy=healthy, violated=violated))

    # ---- PDBs and eviction -------------------------------------------------------------------------------
    def pdb_pods(self, pdb: dict[str, Any]) -> list[dict[str, Any]]:
        """Candidate pods of a PDB (a superset of the matching ones: compute_status filters exactly)."""
        ns = meta(pdb).get("namespace") or ""
        match_labels = ((pdb.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        if match_labels:
            return self.store.pods_with_labels(ns, match_labels)
        return list(self.store.list(PODS, ns))

    def _index_pdb(self, old: dict | None, new: dict | None) -> None:
        for obj, add in ((old, False), (new, True)):
            if obj is None:
                continue
            ns, name = meta(obj).get("namespace") or "", meta(obj)["name"]
            match_labels = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
            buckets = [self._pdb_by_label.setdefault((ns, k, v), set()) for k, v in match_labels.items()] \
                if match_labels else [self._pdb_loose.setdefault(ns, set())]
            for bucket in buckets:
                if add:
                    bucket.add(name)
                else:
                    bucket.discard(name)
            if add:
                self._dirty_pdbs.add((ns, name))

    def _pdb_candidates(self, ns: str, *pods: dict | None) -> set[str]:
        """Names of the PDBs in `ns` that may select any of `pods` (by their labels)."""
        out = set(self._pdb_loose.get(ns, ()))
        for pod in pods:
            for k, v in (meta(pod).get("labels") or {}).items() if pod else ():
                out |= self._pdb_by_label.get((ns, k, v), set())
        return out

    def pdbs_for_pod(self, pod: dict[str, Any]) -> list[dict[str, Any]]:
        ns = meta(pod).get("namespace") or ""
        found = (self.store.get(PDBS, ns, name) for name in self._pdb_candidates(ns, pod))
        return [p for p in found if p is not None and pdb_matches(p, pod)]

    def refresh_pdbs(self) -> None:
        with self.store.lock:
            while self._dirty_pdbs:
                ns, name = self._dirty_pdbs.pop()
                pdb = self.store.get(PDBS, ns, name)
                if pdb is None:
                    continue
                status = compute_status(pdb, self.pdb_pods(pdb), self.controllers.scale_of)
                if status != pdb.get("status"):
                    new = dict(pdb, status=status)
                    new["metadata"] = dict(pdb["metadata"])
                    self.store.replace(PDBS, new)
                    self._dirty_pdbs.discard((ns, name))

    def evict(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """The Eviction subresource: 201, 429 (budget), 500 (several budgets), 404 (no pod)."""
        with self.store.lock:
            try:
                return self._evict(namespace, name, body)
            except ApiError as exc:
                self.ledger.record_eviction(exc.code)
                raise

    def _evict(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        pod = self.store.must_get(PODS, namespace, name)
        body_name = meta(body).get("name")
        if body_name and body_name != name:
            raise ApiError(400, "name in URL does not match name in Eviction object")
        options = body.get("deleteOptions") or {}
        grace = options.get("gracePeriodSeconds")
        self._check_preconditions(PODS, pod, options.get("preconditions"))
        if not (pod_terminal(pod) or pod_phase(pod) == "Pending" or is_deleting(pod)):
            pdbs = self.pdbs_for_pod(pod)
            if len(pdbs) > 1:
                raise ApiError(500, MULTI_PDB_MESSAGE)
            if pdbs:
                pdb = pdbs[0]
                status = compute_status(pdb, self.pdb_pods(pdb), self.controllers.scale_of)
                policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") or "IfHealthyBudget"
                unhealthy_ok = not pod_healthy(pod) and (
                    policy == "AlwaysAllow" or status["currentHealthy"] >= status["desiredHealthy"])
                if not unhealthy_ok and status["disruptionsAllowed"] <= 0:
                    pdb_name = meta(pdb)["name"]
                    raise ApiError(429, PDB_MESSAGE, details={"causes": [{
                        "reason": "DisruptionBudget",
                        "message": f"The disruption budget {pdb_name} needs {status['desiredHealthy']} healthy "
                                   f"pods and has {status['currentHealthy']} currently"}]})
        self.delete_pod(pod, grace, "eviction")
        self.ledger.record_eviction(201)
        result = success_status(name, "pods", uid=meta(pod).get("uid"))
        result["code"] = 201
        return result

    # ---- kubelets ----------------------------------------------------------------------------------------
    def _kubelets(self) -> None:
        """Bound pods on Ready nodes start running; pods on nodes whose readiness flipped follow it."""
        while self._starting:
            key = self._starting.pop()
            pod = self.store.get(PODS, *key)
            if pod is None or is_deleting(pod) or pod_phase(pod) != "Pending":
                continue
            node = self.store.get(NODES, "", (pod.get("spec") or {}).get("nodeName") or "")
            if node is None or not node_ready(node):
                continue
            uid = meta(pod)["uid"]
            if self.pod_start_delay <= 0:
                self.store.replace(PODS, self._running(pod, node))
            elif uid not in self._start_pending:
                self._start_pending.add(uid)
                self.after(self.jittered(self.pod_start_delay), lambda k=key, u=uid: self._start_pod(k, u))
        while self._ready_changed:
            name = self._ready_changed.pop()
            node = self.store.get(NODES, "", name)
            if node is None:
                continue
            ready = node_ready(node)
            for pod in self.store.pods_on_node(name):
                if is_deleting(pod) or pod_terminal(pod):
                    continue
                if pod_phase(pod) == "Pending":
                    if ready:
                        self._starting.add((meta(pod).get("namespace") or "", meta(pod)["name"]))
                    continue
                if condition_true(pod, "Ready") != ready:
                    new = deep_copy(pod)
                    set_condition(new, "Ready", "True" if ready else "False", "" if ready else "NodeNotReady")
                    set_condition(new, "ContainersReady", "True" if ready else "False")
                    self.store.replace(PODS, new)

    def _start_pod(self, key: tuple[str, str], uid: str) -> None:
        self._start_pending.discard(uid)
        pod = self.store.get(PODS, *key)
        if pod is None or meta(pod).get("uid") != uid or is_deleting(pod) or pod_phase(pod) != "Pending":
            return
        node = self.store.get(NODES, "", (pod.get("spec") or {}).get("nodeName") or "")
        if node is not None and node_ready(node):
            self.store.replace(PODS, self._running(pod, node))

    def _running(self, pod: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
        new = deep_copy(pod)
        status = new.setdefault("status", {})
        status["phase"] = "Running"
        status.setdefault("startTime", now_rfc3339())
        addresses = (node.get("status") or {}).get("addresses") or []
        host_ip = next((a.get("address") for a in addresses if a.get("type") == "InternalIP"), None)
        if host_ip:
            status["hostIP"] = host_ip
        for ctype in ("Initialized", "PodScheduled", "ContainersReady", "Ready"):
            set_condition(new, ctype, "True")
        status["containerStatuses"] = [
            {"name": c.get("name", "main"), "ready": True, "restartCount": 0, "started": True,
             "image": c.get("image", ""), "imageID": "", "state": {"running": {"startedAt": now_rfc3339()}}}
            for c in (new.get("spec") or {}).get("containers") or []]
        return new

    def _detach_volumes(self) -> None:
        """The attach/detach controller: a VolumeAttachment goes once no pod is left on its node."""
        if not self.store.count(VOLUME_ATTACHMENTS):
            return
        for va in list(self.store.list(VOLUME_ATTACHMENTS)):
            node = (va.get("spec") or {}).get("nodeName")
            if is_deleting(va) or not node:
                continue
            pods = [p for p in self.store.pods_on_node(node) if not pod_terminal(p)
                    and not self.controllers.is_daemon_pod(p)]
            name = meta(va)["name"]
            if not pods and name not in self._detaching:
                self._detaching.add(name)
                self.after(1.0, lambda v=name: self._detach(v))

    def _detach(self, name: str) -> None:
        self._detaching.discard(name)
        va = self.store.get(VOLUME_ATTACHMENTS, "", name)
        if va is None:
            return
        node = (va.get("spec") or {}).get("nodeName")
        if node and any(not pod_terminal(p) and not self.controllers.is_daemon_pod(p)
                        for p in self.store.pods_on_node(node)):
            return
        self.delete(VOLUME_ATTACHMENTS, "", name)

    # ---- test hooks --------------------------------------------------------------------------------------
    def set_node_ready(self, name: str, ready: bool, reason: str = "KubeletNotReady") -> None:
        """Make a node Ready or NotReady (as its kubelet stopping or resuming heartbeats would)."""
        with self.store.lock:
            node = deep_copy(self.store.must_get(NODES, "", name))
            changed = set_condition(node, "Ready", "True" if ready else ("Unknown" if reason == "NodeStatusUnknown"
                                                                         else "False"),
                                    "KubeletReady" if ready else reason)
            if changed:
                self.store.replace(NODES, node)

    def mark_never_ready(self, instance_type: str) -> None:
        """Nodes of this instance type register but never become Ready."""
        with self.store.lock:
            self.never_ready_types.add(instance_type)

    def stats(self) -> dict[str, Any]:
        with self.store.lock:
            self.refresh_pdbs()
            nodes: dict[str, int] = {"Ready": 0, "NotReady": 0, "Deleting": 0}
            for node in self.store.list(NODES):
                if is_deleting(node):
                    nodes["Deleting"] += 1
                nodes["Ready" if node_ready(node) else "NotReady"] += 1
            pods = {"total": 0, "pending": 0, "running": 0, "terminating": 0}
            for pod in self.store.objects["pods"].values():
                pods["total"] += 1
                if is_deleting(pod):
                    pods["terminating"] += 1
                elif pod_phase(pod) == "Pending":
                    pods["pending"] += 1
                elif pod_phase(pod) == "Running":
                    pods["running"] += 1
            out = self.ledger.summary(self.clock())
            out.update({
                "schedulerQueues": self.scheduler.queue.counts(),
                "podsPending": pods["pending"],
                "pods": pods,
                "nodes": nodes,
                "nodeClaims": self.store.count(NODECLAIMS),
                "resourceVersion": self.store.rv,
            })
            if self.ec2 is not None:
                out["instances"] = self.ec2.instance_counts()
            return out
