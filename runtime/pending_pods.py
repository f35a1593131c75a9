"""Pending-pod intake: batch the pods the scheduler marked Unschedulable and start one ProvisioningWorkflow per batch.

Batching is Karpenter's: a window opens with the first new pod and closes `idle_seconds` after the last new pod,
or `max_seconds` after it opened, so a ReplicaSet scaled up by 100 becomes one batch (and one simulation), not 100.
Candidates come from the worker's watch cache (runtime/pending_index.py keeps them from its events: no extra LIST
or watch, and no scan of every pod each tick); without the cache pods are LISTed each tick and scanned.
A window too large for one workflow's input (tens of thousands of pods) starts as several, each under Temporal's
payload warning size (contracts/provisioning.py `batch_parts`). A pod a running provisioning covers
(client/provisioning.py `CoveredPods`) or that this worker handed off within its cooldown is not batched again; the
workflow id derives from the batch's pod uids, so a restarted worker re-batching the same pods joins the running
workflow, and a different batch re-plans with the launching NodeClaims as nominated capacity.

Pods of a node being deleted are batched too (Karpenter's `deletingNodePods`): a node deleted by hand, expiring,
interrupted or drained behind a PDB gets its pods' new capacity while it drains (planning/provisioning/provisioner.py
`displaced_pods` leaves out the pods that cannot move).

A pod still pending after its batch ended (no NodePool serves it, its pool is at its limits, no capacity anywhere)
is batched again after `cooldown_seconds`, then after twice that, and so on up to `max_cooldown_seconds`: each
retry is a workflow that re-plans and re-explains, so a pod nothing can help costs a retry every few minutes, not
one a minute forever. A pod that is bound or gone is forgotten, so the next pod starts at the first cooldown.

A pod is batched again without the cooldown (`changed_seconds` after its hand-off), and starts the doubling over,
when the cluster it was planned on has changed: kube-scheduler refused it with a new message (it tried it again,
as when it bound other pods to the room the batch planned it onto; Karpenter's provisioner is triggered by the same
pod events), or a Node turned Ready (new room kube-scheduler is filling, with the pods it planned there or others).
kube-scheduler writes a new message only when its answer changes, and Nodes turn Ready only as capacity comes up,
so this follows the cluster's changes, never a loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from temporalio.client import Client

from client.provisioning import CoveredPods, start_provisioning
from contracts.provisioning import PodRef, ProvisioningSettings, batch_parts
from planning.cluster import going_nodes
from runtime.periodic import tick_until_stopped

log = logging.getLogger(__name__)
Obj = dict[str, Any]


@dataclass
class IntakeSettings:
    task_queue: str
    idle_seconds: float = 1.0  # Karpenter BATCH_IDLE_DURATION
    max_seconds: float = 10.0  # Karpenter BATCH_MAX_DURATION
    tick_seconds: float = 0.25
    cooldown_seconds: float = 10.0  # a pod handed off is not batched again before this (nor while covered)
    max_cooldown_seconds: float = 300.0  # ... and the cooldown doubles each time the pod is handed off again
    changed_seconds: float = 2.0  # ... but one whose cluster changed since (a new refusal, a Node Ready) after this
    workflow: ProvisioningSettings = field(default_factory=ProvisioningSettings)


def unschedulable(pod: Obj) -> PodRef | None:
    """The pod as a batch member when the scheduler marked it PodScheduled=False/Unschedulable and a new node can
    help it (unbound, not terminating or finished, not a DaemonSet pod)."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    if spec.get("nodeName") or meta.get("deletionTimestamp") or status.get("phase") in ("Succeeded", "Failed"):
        return None
    if any(o.get("kind") == "DaemonSet" for o in meta.get("ownerReferences") or ()):
        return None
    if (_not_scheduled(pod) or {}).get("reason") == "Unschedulable":
        return PodRef(key=f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}", uid=meta.get("uid", ""))
    return None


def _not_scheduled(pod: Obj) -> Obj | None:
    """The pod's PodScheduled condition when it is False (kube-scheduler tried and refused), else None."""
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "PodScheduled":
            return c if c.get("status") == "False" else None
    return None


def scheduling_note(pod: Obj) -> str:
    """kube-scheduler's message on the pod's PodScheduled=False condition ("" without one): a new message means it
    tried the pod again against a cluster that changed."""
    return str((_not_scheduled(pod) or {}).get("message") or "")


def displaced(pod: Obj, deleting: set[str]) -> PodRef | None:
    """The pod as a batch member when its node is being deleted and it will need a new place (active, not a
    DaemonSet or mirror pod): Karpenter's provisioner plans these `deletingNodePods` with the pending ones, so their
    capacity comes up while the node drains. Pods that cannot move are left out by the decision, which sees PDBs."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    if spec.get("nodeName") not in deleting or meta.get("deletionTimestamp") \
            or status.get("phase") in ("Succeeded", "Failed"):
        return None
    if any(o.get("kind") in ("DaemonSet", "Node") for o in meta.get("ownerReferences") or ()):
        return None
    return PodRef(key=f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}", uid=meta.get("uid", ""))


class Batcher:
    """The batch window (pure; the clock is given)."""

    def __init__(self, idle_seconds: float, max_seconds: float) -> None:
        self.idle, self.max = idle_seconds, max_seconds
        self.pods: dict[str, PodRef] = {}
        self.opened = self.last = 0.0

    def add(self, pod: PodRef, now: float) -> bool:
        if pod.uid in self.pods:
            return False
        if not self.pods:
            self.opened = now
        self.pods[pod.uid] = pod
        self.last = now
        return True

    def ready(self, now: float) -> bool:
        return bool(self.pods) and (now - self.last >= self.idle or now - self.opened >= self.max)

    def take(self) -> list[PodRef]:
        out = sorted(self.pods.values(), key=lambda p: p.key)
        self.pods = {}
        return out


def listed_pods(kube: Any) -> Callable[[], list[Obj] | None]:
    """Without the cache: LIST pods through the Kubernetes gateway's client."""
    def read() -> list[Obj] | None:
        items = kube.core.list_pod_for_all_namespaces().items
        return kube.api_client.sanitize_for_serialization(items)
    return read


def listed_deleting(kube: Any, every_seconds: float = 2.0,
                    clock: Callable[[], float] = time.monotonic) -> Callable[[], set[str] | None]:
    """Without the cache: LIST Nodes and NodeClaims through the Kubernetes gateway, at most once per `every_seconds`.

    The intake ticks every 0.25 s; a node's deletion lasts far longer than a few seconds, so listing both kinds on
    every tick would only triple the cache-less mode's API reads for the same answer.
    """
    last: list[tuple[float, set[str]]] = []

    def read() -> set[str] | None:
        now = clock()
        if not last or now - last[0][0] >= every_seconds:
            last[:] = [(now, going_nodes(kube.list_nodes(), kube.list_node_claims()))]
        return set(last[0][1])
    return read


@dataclass
class HandOff:
    """When this worker last handed a pod to a batch, and how many times it has."""

    at: float
    times: int = 1
    note: str = ""  # kube-scheduler's message on the pod then (scheduling_note)
    ready_nodes: int = 0  # how many Nodes had turned Ready then (runtime/pending_index.py)

    def changed(self, note: str, ready_nodes: int) -> bool:
        """The cluster changed since: kube-scheduler refused the pod anew, or a Node turned Ready."""
        return (bool(note) and note != self.note) or ready_nodes != self.ready_nodes

    def due(self, settings: IntakeSettings, now: float, note: str, ready_nodes: int) -> bool:
        """Whether the pod may be batched again: its cooldown passed, or its cluster changed."""
        waited = now - self.at
        if waited >= cooldown(settings, self.times):
            return True
        return waited >= settings.changed_seconds and self.changed(note, ready_nodes)


def cooldown(settings: IntakeSettings, times: int) -> float:
    """How long a pod handed off `times` times waits before it is batched again."""
    ceiling = max(settings.max_cooldown_seconds, settings.cooldown_seconds)
    return min(settings.cooldown_seconds * 2 ** min(max(times - 1, 0), 30), ceiling)


def scanned(pods: list[Obj], deleting: set[str], notes: dict[str, str] | None = None) -> list[PodRef]:
    """The batch candidates among every pod: unschedulable ones and those of `deleting` nodes; `notes` gets the
    unschedulable ones' scheduling notes by uid."""
    out = []
    for pod in pods:
        ref = unschedulable(pod)
        if ref is not None and notes is not None:
            notes[ref.uid] = scheduling_note(pod)
        if ref is None and deleting:
            ref = displaced(pod, deleting)
        if ref is not None:
            out.append(ref)
    return out


class PendingPodIntake:
    """Runs beside the deletion watcher in each worker (runtime/worker_loop.py).

    With `candidates` (runtime/pending_index.py on the watch cache) a tick reads the candidates the cache's events
    keep, and `notes` their scheduling notes by uid; without, it scans every pod `pods` returns against the nodes
    `deleting` returns."""

    def __init__(self, pods: Callable[[], list[Obj] | None], client: Client, settings: IntakeSettings,
                 clock: Callable[[], float] = time.monotonic,
                 deleting: Callable[[], set[str] | None] = lambda: set(),
                 candidates: Callable[[], list[PodRef] | None] | None = None,
                 notes: Callable[[], Mapping[str, str]] = dict,
                 ready_nodes: Callable[[], int] = int) -> None:
        self._pods = pods
        self._deleting = deleting
        self._candidates = candidates
        self._read_notes = notes
        self._notes: Mapping[str, str] = {}  # this tick's scheduling notes by uid
        self._read_ready = ready_nodes
        self._ready = 0  # this tick's count of Nodes turned Ready
        self._client = client
        self._s = settings
        self._clock = clock
        self._batch = Batcher(settings.idle_seconds, settings.max_seconds)
        self._handed: dict[str, HandOff] = {}  # uid -> when (and how often) this worker handed it to a batch
        self._covered = CoveredPods()
        self._stop = asyncio.Event()
        self.started: list[str] = []  # workflow ids, for tests and logs

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        await tick_until_stopped(self.tick, self._stop, self._s.tick_seconds, "pending-pod intake")

    async def _refs(self) -> list[PodRef] | None:
        if self._candidates is not None:
            refs = self._candidates()  # first: it rebuilds what is stale, notes included
            self._notes = self._read_notes()
            return refs
        pods = await asyncio.to_thread(self._pods)
        if pods is None:
            return None
        deleting = await asyncio.to_thread(self._deleting) if pods else set()
        notes: dict[str, str] = {}
        refs = scanned(pods, deleting or set(), notes)
        self._notes = notes
        return refs

    async def tick(self) -> None:
        refs = await self._refs()
        now, self._ready = self._clock(), self._read_ready()
        if refs is not None:  # None: the cache has not synced; keep what is known
            self._handed = {r.uid: self._handed[r.uid] for r in refs if r.uid in self._handed}  # bound or gone
            for ref in refs:
                handed = self._handed.get(ref.uid)
                if handed is None or handed.due(self._s, now, self._notes.get(ref.uid, ""), self._ready):
                    self._batch.add(ref, now)
        if self._batch.ready(now):
            await self._start(self._batch.take(), now)

    async def _start(self, batch: list[PodRef], now: float) -> None:
        covered = await self._covered.read(self._client)
        batch = [p for p in batch if p.uid not in covered]
        for p in batch:
            before, note = self._handed.get(p.uid), self._notes.get(p.uid, "")
            again = before is not None and not before.changed(note, self._ready)  # else the doubling starts over
            times = before.times + 1 if before is not None and again else 1
            self._handed[p.uid] = HandOff(at=now, times=times, note=note, ready_nodes=self._ready)
        parts = batch_parts(batch)
        for i, part in enumerate(parts, 1):  # one part but for windows of tens of thousands of pods
            handle = await start_provisioning(self._client, part, self._s.task_queue, self._s.workflow)
            self._covered.started(handle.id, part)
            self.started.append(handle.id)
            of = f" (part {i} of {len(parts)} of a window of {len(batch)})" if len(parts) > 1 else ""
            log.info("provisioning %s for %d pending pod(s)%s", handle.id, len(part), of)
