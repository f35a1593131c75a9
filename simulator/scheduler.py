"""A kube-scheduler for the simulator: binds each pending pod to the best node that passes kube-scheduler's Filter
plugins (simulator/scheduling_filters.py), or leaves it Pending with kube's `0/N nodes are available: ...` message
on its PodScheduled condition and a FailedScheduling Event.

Scoring is simpler than kube-scheduler's (docs/decisions.md §20): more matching preferred node affinity weight
first, then the preferred pod (anti-)affinity score (simulator/scheduling_preferences.py), then fewer untolerated
PreferNoSchedule taints, then the least allocated node. Like kube-scheduler it stops
after percentageOfNodesToScore feasible nodes and resumes its scan where the last one stopped.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from simulator.ledger import Ledger
from simulator.patch import deep_copy
from simulator.pods import controller_ref, is_deleting, meta, node_ready, pod_terminal, set_condition
from simulator.resources import BY_KIND, ResourceType
from simulator.scheduler_queues import SchedulingQueue
from simulator.scheduler_timing import SchedulerTiming
from simulator.scheduling_affinity import has_required_anti_affinity
from simulator.scheduling_binding import bind_claims, failed_scheduling_event, preference_score
from simulator.scheduling_filters import ERR_UNSCHEDULABLE, ClusterView, PodFilters, fit_error
from simulator.scheduling_requests import Requests, pod_requests
from simulator.scheduling_volumes import Volumes, claim_names
from simulator.store import Store, key_of

PODS = BY_KIND["Pod"]
NODES = BY_KIND["Node"]
NAMESPACES = BY_KIND["Namespace"]
DEFAULT_SCHEDULER = "default-scheduler"
NOT_READY = "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"
GATED = "Scheduling is blocked due to non-empty scheduling gates"
MESSAGE_EVERY = 10.0  # simulated seconds between two FailedScheduling messages of one pod
Key = tuple[str, str]
_NONE: Requests = {}


class Host(Protocol):
    """What the scheduler sees of the simulated world (simulator/world.py's World): the store, the ledger it tells
    when a pod waits or binds, the clock and time scale, the scheduler's timing and the timer heap a delayed bind
    waits on. The clock is read on every call: a test may drive the world's clock by hand."""

    store: Store
    ledger: Ledger
    time_scale: float
    scheduler_timing: SchedulerTiming
    clock: Callable[[], float]

    def after(self, seconds: float, fn: Callable[[], None]) -> None: ...


class Scheduler:
    """Tracks pending pods, per-node requested resources and pods with required anti-affinity incrementally from
    store changes."""

    def __init__(self, world: Host) -> None:
        self.world = world
        self.timing = world.scheduler_timing
        self.queue = SchedulingQueue(self.timing)
        self.pending: set[Key] = set()
        self.usage: dict[str, Requests] = {}
        self.pod_counts: dict[str, int] = {}
        self._requests: dict[str, Requests] = {}
        self._anti: set[Key] = set()  # assigned pods with required anti-affinity
        self._names: tuple[list[str], list[str]] | None = None  # (every node, the Ready and not deleting ones)
        self._start = 0  # kube-scheduler resumes its node scan where the last one stopped
        self._alloc: dict[str, tuple[Any, Requests]] = {}  # node -> (resourceVersion, allocatable)
        self._refused: dict[str, float] = {}  # pod uid -> when its FailedScheduling message may be recomputed
        # pods planned onto a node whose bind is in flight, as kube-scheduler's cache assumes them
        self._assumed: dict[Key, dict[str, Any]] = {}
        self._assumed_on: dict[str, dict[Key, dict[str, Any]]] = {}

    def now(self) -> float:
        """Simulated seconds on the world's clock (the queue's unit)."""
        scale = self.world.time_scale
        return self.world.clock() / scale if scale > 0 else float("inf")

    def _requests_of(self, pod: dict[str, Any]) -> Requests:
        uid = meta(pod).get("uid") or ""
        req = self._requests.get(uid)
        if req is None:
            req = self._requests[uid] = pod_requests(pod)
        return req

    def _account(self, pod: dict[str, Any] | None, sign: int) -> None:
        if pod is None or pod_terminal(pod):
            return
        node = (pod.get("spec") or {}).get("nodeName")
        if not node:
            return
        used = self.usage.setdefault(node, {})
        for k, v in self._requests_of(pod).items():
            used[k] = used.get(k, 0) + sign * v
        self.pod_counts[node] = self.pod_counts.get(node, 0) + sign
        key = key_of(pod)
        if sign > 0 and has_required_anti_affinity(pod):
            self._anti.add(key)
        elif sign < 0:
            self._anti.discard(key)

    def on_change(self, rt: ResourceType, kind: str, old: dict | None, new: dict | None) -> None:
        if rt is PODS:
            self._on_pod(old, new)
        elif rt is NODES:
            self.queue.cluster_event()
            if new is None or old is None or node_ready(old) != node_ready(new) or is_deleting(old) != is_deleting(
                    new):
                self._names = None
            if new is None:
                name = meta(old or {}).get("name") or ""
                self._lost_node(name)
                self._alloc.pop(name, None)
                self.usage.pop(name, None)
                self.pod_counts.pop(name, None)
        elif rt.plural in ("persistentvolumes", "persistentvolumeclaims", "storageclasses", "namespaces"):
            self.queue.cluster_event()

    def _on_pod(self, old: dict | None, new: dict | None) -> None:
        self._account(old, -1)
        self._account(new, +1)
        pod = new or old or {}
        key = key_of(pod)
        spec = (new or {}).get("spec") or {}
        if new is not None and not spec.get("nodeName") and not is_deleting(new) and not pod_terminal(new) \
                and spec.get("schedulerName", DEFAULT_SCHEDULER) == DEFAULT_SCHEDULER:
            if key not in self.pending:
                self.pending.add(key)
                self.queue.add(key)
            elif old is not None and (old.get("spec") or {}) != spec:  # e.g. its scheduling gates removed
                self._requests.pop(meta(new).get("uid") or "", None)
                self.queue.updated(key, self.now())
            self._track_wait(new)
        elif key in self.pending:
            self.pending.discard(key)
            self.queue.forget(key)
            self._unassume(key)
            uid = meta(pod).get("uid") or ""
            if new is not None and spec.get("nodeName"):
                self.world.ledger.pod_bound(uid, self.world.clock())
            else:
                self.world.ledger.pod_dropped(uid)
        assigned = bool(((old or {}).get("spec") or {}).get("nodeName"))
        if new is None:
            self._requests.pop(meta(old or {}).get("uid") or "", None)
            self._refused.pop(meta(old or {}).get("uid") or "", None)
            if assigned:
                self.queue.cluster_event()
        elif assigned and ((pod_terminal(new) and not pod_terminal(old or {}))
                           or is_deleting(new) != is_deleting(old or {})):
            self.queue.cluster_event()

    def _track_wait(self, pod: dict[str, Any]) -> None:
        """The ledger's pending clock of an unbound pod: from creation, or from its gates' removal (a gated pod
        waits on its gate's owner, not on the scheduler); DaemonSet pods wait on their node, not on capacity."""
        ref = controller_ref(pod)
        if ref is not None and ref.get("kind") == "DaemonSet":
            return
        uid = meta(pod).get("uid") or ""
        if (pod.get("spec") or {}).get("schedulingGates"):
            self.world.ledger.pod_dropped(uid)
        else:
            self.world.ledger.pod_pending(uid, f"{meta(pod).get('namespace') or ''}/{meta(pod).get('name')}",
                                          self.world.clock())

    def _node_names(self) -> tuple[list[str], list[str]]:
        if self._names is None:
            nodes = list(self.world.store.list(NODES))
            self._names = ([meta(n)["name"] for n in nodes],
                           [meta(n)["name"] for n in nodes if node_ready(n) and not is_deleting(n)])
        return self._names

    def _view(self, pods: list[dict[str, Any]]) -> ClusterView:
        store = self.world.store
        every, _ = self._node_names()

        def nodes() -> list[dict[str, Any]]:
            return [n for n in (store.get(NODES, "", name) for name in every) if n is not None]

        def pods_on(name: str) -> list[dict[str, Any]]:
            assumed = self._assumed_on.get(name)
            bound = [p for p in store.pods_on_node(name) if not pod_terminal(p)]
            return [*bound, *assumed.values()] if assumed else bound

        def anti_pods() -> list[tuple[dict[str, Any], dict[str, Any]]]:
            found = ((self._assumed.get(k) or store.get(PODS, *k)) for k in list(self._anti))
            return [(p, n) for p in found if p is not None
                    for n in [store.get(NODES, "", p["spec"].get("nodeName") or "")] if n is not None]

        volumes = Volumes.of(store.list(BY_KIND["PersistentVolume"]), store.list(BY_KIND["PersistentVolumeClaim"]),
                             store.list(BY_KIND["StorageClass"])) if any(claim_names(p) for p in pods) else Volumes()
        return ClusterView(nodes, pods_on, lambda name: (self.usage.get(name, {}), self.pod_counts.get(name, 0)),
                           anti_pods, volumes, lambda ns: meta(store.get(NAMESPACES, "", ns) or {}).get("labels") or {},
                           self._alloc)

    def schedule(self, budget: float | None = None) -> None:
        """One scheduling pass over the pods the queue hands out now (docs: simulator/scheduler_queues.py).

        With `budget` (wall seconds) the pass stops once it has spent that long, and the pods it did not reach go
        back to the active queue, first in the next pass's order: a real kube-scheduler is its own process, and a
        pass over 2,000 pods against 1,000 nodes held the API server sharing its loop for seconds."""
        if not self.pending:
            return
        now = self.now()
        keys = self.queue.pop_active(now)
        if not keys:
            return
        store = self.world.store
        pods = [p for p in (store.get(PODS, *k) for k in keys if k in self.pending) if p is not None]
        # kube-scheduler's PrioritySort: higher priority first, then the time each pod was (last) added to the queue,
        # which is the order the queue hands them out (creationTimestamp has whole seconds: a drain's pods tie)
        pods.sort(key=lambda p: -int((p.get("spec") or {}).get("priority") or 0))
        view = self._view(pods)
        stop = None if budget is None else time.perf_counter() + budget
        for i, pod in enumerate(pods):
            if stop is not None and i and time.perf_counter() >= stop:
                for rest in pods[i:]:
                    self.queue.add(key_of(rest))
                return
            self._schedule_one(pod, view, now)

    def _schedule_one(self, pod: dict[str, Any], view: ClusterView, now: float) -> None:
        store = self.world.store
        key = key_of(pod)
        if (pod.get("spec") or {}).get("schedulingGates"):  # kube-scheduler's SchedulingGates PreEnqueue
            self.queue.gated(key)
            gated = deep_copy(pod)
            if _set_scheduled(gated, "False", "SchedulingGated", GATED):
                store.replace(PODS, gated)
            return
        filters = PodFilters(pod, view)
        best = self._best_node(pod, filters, view)
        if best is None:
            self.queue.failed(key, now)
            self._refuse(deep_copy(pod), filters, self._node_names()[0])
            return
        bind_claims(store, filters.volumes, pod, best)  # kube assumes the volumes in Reserve, before binding
        new = deep_copy(pod)
        new["spec"]["nodeName"] = meta(best)["name"]
        view.bind(new, best)
        if self.timing.bind_delay <= 0:
            _set_scheduled(new, "True", "", "")
            store.replace(PODS, new)
            return
        self._assume(key, new)
        self.queue.binding(key)
        uid = meta(pod).get("uid") or ""
        self.world.after(self.timing.bind_delay, lambda: self._bind(key, uid))

    def _best_node(self, pod: dict[str, Any], filters: PodFilters, view: ClusterView) -> dict[str, Any] | None:
        store = self.world.store
        _, ready = self._node_names()
        prefers = bool((pod.get("spec") or {}).get("affinity"))
        pod_pref = view.preferred.scorer(pod) if prefers else None
        best, best_score = None, None
        feasible, wanted = 0, feasible_nodes_to_find(len(ready))
        self._start = self._start % len(ready) if ready else 0
        for i in range(len(ready)):
            name = ready[(self._start + i) % len(ready)]
            node = store.get(NODES, "", name)
            if node is None:
                continue
            used, alloc = self.usage.get(name) or _NONE, view.allocatable(node)
            if not filters.fits_with(node, used, self.pod_counts.get(name, 0), alloc):
                continue
            node_pref, soft_taints = preference_score(pod, node) if prefers or node.get("spec") else (0, 0)
            score = (node_pref, -pod_pref(node) if pod_pref else 0, soft_taints,
                     _allocation(filters.request, alloc, used))
            if best_score is None or score < best_score:
                best, best_score = node, score
            feasible += 1
            if feasible >= wanted:
                self._start += i + 1
                break
        return best

    # ---- binding ---------------------------------------------------------------------------------------
    def _assume(self, key: Key, bound: dict[str, Any]) -> None:
        """Count a planned pod on its node while its bind is in flight, as kube-scheduler's cache does."""
        self._assumed[key] = bound
        self._assumed_on.setdefault(bound["spec"]["nodeName"], {})[key] = bound
        self._account(bound, +1)

    def _unassume(self, key: Key) -> dict[str, Any] | None:
        bound = self._assumed.pop(key, None)
        if bound is None:
            return None
        node = bound["spec"]["nodeName"]
        on = self._assumed_on.get(node)
        if on is not None:
            on.pop(key, None)
            if not on:
                del self._assumed_on[node]
        self._account(bound, -1)
        return bound

    def _bind(self, key: Key, uid: str) -> None:
        """The bind call lands: the pod gets its node, unless the pod or the node went meanwhile."""
        bound = self._unassume(key)
        if bound is None:
            return
        store = self.world.store
        pod = store.get(PODS, *key)
        if pod is None or meta(pod).get("uid") != uid or key not in self.pending:
            return
        node = store.get(NODES, "", bound["spec"]["nodeName"])
        if node is None or is_deleting(node):
            self.queue.failed(key, self.now())
            return
        new = deep_copy(pod)
        new["spec"]["nodeName"] = bound["spec"]["nodeName"]
        _set_scheduled(new, "True", "", "")
        store.replace(PODS, new)

    def _lost_node(self, name: str) -> None:
        """A node went while pods were being bound to it: their binds fail and they go back to the queue."""
        for key in list(self._assumed_on.get(name, {})):
            self._unassume(key)
            self.queue.failed(key, self.now())

    def _refuse(self, pod: dict[str, Any], filters: PodFilters, every: list[str]) -> None:
        """Write kube's FitError to PodScheduled (and an Event when it changed). The message costs a pass over every
        node, so a pod already marked Unschedulable gets a new one at most every MESSAGE_EVERY simulated seconds
        (kube-scheduler itself retries an unschedulable pod only after a backoff of up to 10 s)."""
        uid, now = meta(pod).get("uid") or "", self.world.clock()
        if _condition_reason(pod) == "Unschedulable" and now < self._refused.get(uid, 0.0):
            return
        self._refused[uid] = now + MESSAGE_EVERY * self.world.time_scale
        store = self.world.store
        reasons = {n: _why_not(filters, node) for n in every for node in [store.get(NODES, "", n)] if node is not None}
        message = fit_error(len(every), reasons, filters.prefilter)
        if _set_scheduled(pod, "False", "Unschedulable", message):
            store.replace(PODS, pod)
            failed_scheduling_event(store, pod, message)


def _condition_reason(pod: dict[str, Any]) -> str | None:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "PodScheduled":
            return c.get("reason")
    return None


def _why_not(filters: PodFilters, node: dict[str, Any]) -> list[str]:
    """A node's reasons for the FailedScheduling message. A NotReady node carries the not-ready taint in a real
    cluster; a deleting node the emulator never picks reads as cordoned (decisions §20)."""
    if not node_ready(node):
        return [NOT_READY]
    return filters.reasons(node) or [ERR_UNSCHEDULABLE]


def _allocation(request: Requests, alloc: Requests, used: Requests) -> float:
    """The larger of the cpu and memory fractions the node would have allocated: lower is emptier."""
    cpu, mem = alloc.get("cpu"), alloc.get("memory")
    return max((used.get("cpu", 0) + request.get("cpu", 0)) / cpu if cpu else 1.0,
               (used.get("memory", 0) + request.get("memory", 0)) / mem if mem else 1.0)


def feasible_nodes_to_find(total: int) -> int:
    """kube-scheduler's percentageOfNodesToScore default: stop after this many feasible nodes."""
    if total <= 100:
        return total
    percent = max(50 - total // 125, 5)
    return max(total * percent // 100, 100)


def _set_scheduled(pod: dict[str, Any], status: str, reason: str, message: str) -> bool:
    """Set PodScheduled; True when its status, reason or message changed (a new message is a new Event)."""
    conds = (pod.get("status") or {}).get("conditions") or []
    current = next((c for c in conds if c.get("type") == "PodScheduled"), None)
    if current is not None and current.get("status") == status and current.get("reason", "") == reason:
        if current.get("message", "") == message:
            return False
        current["message"] = message
        return True
    return set_condition(pod, "PodScheduled", status, reason, message)
