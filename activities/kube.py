"""Kubernetes activities of the termination workflow: taint, tiered drain, deadline deletes, volumes, finalizers.

The drain is one long heartbeating activity: eviction retries (429/500, backoff 100 ms doubling to 10 s)
happen here and cost no workflow history; the workflow only hears when the node is drained, when its
`return_by` instant arrives (a deadline step), or (by signal) when the blocking pods or the count of pods left
change.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from kubernetes.client.rest import ApiException
from temporalio import activity

from activities.cached_copies import CacheReads, deleting_copy
from activities.events import recorder_for
from activities.termination_markers import TerminationMarkerActivities
from api import events, labels
from api.duration import parse_optional_duration
from api.events import EventReason
from api.timestamps import format_seconds
from contracts.disruption import EventSpec
from contracts.termination import (
    WAITING_FOR_COMPLETION,
    DeletePodsInput,
    DeletePodsResult,
    DrainedStatus,
    DrainInput,
    DrainResult,
    DrainSignal,
    FinalizeInput,
    FinalizeResult,
    PodState,
    PrepareInput,
    PrepareResult,
    TerminationMarkersInput,
    UntaintInput,
    VolumesInput,
    VolumesResult,
)
from gateways.kube import Conflict, Eviction, KubeClient, Obj, node_ready
from planning.lifecycle import drain as rules
from planning.lifecycle.disruption_conditions import volumes_detached
from planning.selectors import match_label_selector
from telemetry import karpenter_metrics as km
from telemetry import metrics

log = logging.getLogger(__name__)
T = TypeVar("T")


BACKOFF_START = 0.1
BACKOFF_MAX = 10.0
PROGRESS_EVERY = 5.0  # seconds: a changed count of pods left is signalled at most this often (history stays small)
# Seconds between a drain's heartbeats, whatever its rounds do: the SDK sends one at most every 2 s anyway (the worker's
# throttle), and each call costs the event loop a task and an encode of the details, thousands a second when a
# thousand nodes drain at once.
BEAT_EVERY = 1.0
STALL_SECONDS = 60.0  # a round waiting longer than this stops heartbeating: the heartbeat timeout ends the attempt
# The thread pool a task's blocking calls take: the drains' own (set in `drain`, inherited by its child tasks) or,
# unset, the activities' shared one.
_LANE: contextvars.ContextVar[ThreadPoolExecutor | None] = contextvars.ContextVar("kube_lane", default=None)


@dataclass
class _EvictState:
    next_at: float = 0.0
    backoff: float = 0.0
    attempts: int = 0
    status: str = "Waiting"
    pdb: str | None = None
    evicted: bool = False  # the Eviction API said yes for this uid: it terminates, whatever an older copy shows


@dataclass
class _DrainRun:
    """What one drain activity remembers between rounds."""

    states: dict[tuple[str, str], _EvictState] = field(default_factory=dict)
    pdb_cache: dict[str, list[Obj]] = field(default_factory=dict)
    reported: set[tuple[str, str]] = field(default_factory=set)
    last_blocking: frozenset[tuple[str, str | None]] = frozenset()
    last_left: int | None = None  # pods left at the last signal
    signalled_at: float = field(default_factory=time.monotonic)  # last signal (or the activity's start)
    evicted: int = 0
    deleted: set[tuple[str, str]] = field(default_factory=set)  # deleted at the deadline by this drain
    poll: float = 0.0
    evict_reason: str | None = None  # what Evicted says (the NodeClaim's DisruptionReason), read at the first eviction
    reason_read: asyncio.Lock = field(default_factory=asyncio.Lock)  # the tier's evictions run at once: read it once
    beat: dict[str, Any] = field(default_factory=dict)  # the last round's heartbeat details, repeated between rounds
    round_at: float = field(default_factory=time.monotonic)  # when the current round began
    beat_at: float = float("-inf")  # when the drain last heartbeat

    def heartbeat(self) -> None:
        """Heartbeat the latest details, unless the last heartbeat was under BEAT_EVERY ago (the next carries them)."""
        now = time.monotonic()
        if now - self.beat_at >= BEAT_EVERY:
            self.beat_at = now
            activity.heartbeat(self.beat)


class KubeActivities:
    """Activities over one KubeClient; blocking calls go to a private thread pool."""

    def __init__(self, kube: KubeClient, max_threads: int = 32, poll_min: float = 0.2, poll_max: float = 2.0,
                 volume_poll: float = 1.0, progress_every: float = PROGRESS_EVERY,
                 cancel_hold_seconds: float = 1800.0, min_drain_seconds: float | None = None,
                 cached: CacheReads | None = None, stall_seconds: float = STALL_SECONDS) -> None:
        self.kube = kube
        self.cached = cached  # prepare's Node, NodeClaim and pods, when the cache already shows the deletion
        self.min_drain_seconds = min_drain_seconds  # runtime/settings.py; None: the workflow's MIN_DRAIN_TIME
        self.progress_every = progress_every
        self.cancel_hold_seconds = cancel_hold_seconds  # runtime/settings.py; 0: a cancel holds nothing
        self._pool = ThreadPoolExecutor(max_workers=max_threads, thread_name_prefix="kube")
        self._drain_pool = ThreadPoolExecutor(max_workers=max_threads, thread_name_prefix="kube-drain")
        self.stall_seconds = stall_seconds
        self.poll_min = poll_min
        self.poll_max = poll_max
        self.volume_poll = volume_poll
        self.recorder = recorder_for(kube)  # Karpenter's dedupe windows, shared by the worker's activities
        self.markers = TerminationMarkerActivities(kube)  # prepare writes them when the workflow asks (mark_claim)

    def _publish(self, kind: str, name: str, reason: str, message: str, uid: str | None = None,
                 namespace: str | None = None) -> Awaitable[int]:
        """An Event through the worker's Recorder (its reason's type and window, api/events.py)."""
        return self._io(self.recorder.publish, EventSpec(kind=kind, name=name, uid=uid, namespace=namespace,
                                                         reason=reason, message=message))

    async def _io(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(_LANE.get() or self._pool, functools.partial(fn, *args, **kwargs))

    # ---- prepare -------------------------------------------------------------------------------------

    @activity.defn(name="termination.prepare")
    async def prepare(self, inp: PrepareInput) -> PrepareResult:
        """Find the NodeClaim, mirror a deletion onto its counterpart, taint the node, list its pods."""
        node, claim, from_cache = await self._read_machine(inp)
        answered = await self._own_machine(claim) if claim is not None else None
        node_del = rules.deletion_time(node) if node else None
        claim_del = rules.deletion_time(claim) if claim else None
        since = min([d for d in (node_del, claim_del) if d is not None], default=inp.started_at)
        # the claim's side and the node's side write different objects: at once, so a prepare waits for its
        # requests in two short chains instead of one long one (in a burst each waits behind every other node's)
        marked, (pods, attachments) = await asyncio.gather(
            self._prepare_claim(inp, node, answered or claim, node_del is not None and claim_del is None, since),
            self._prepare_node(inp, node, claim_del is not None and node_del is None, from_cache))
        claim_spec = (claim or {}).get("spec") or {}
        claim_ann = ((claim or {}).get("metadata") or {}).get("annotations") or {}
        deletions = [d for d in (node_del, claim_del) if d is not None]
        node_labels = ((node or {}).get("metadata") or {}).get("labels") or {}
        claim_labels = ((claim or {}).get("metadata") or {}).get("labels") or {}
        return PrepareResult(
            node_exists=node is not None,
            node_claim_name=claim["metadata"]["name"] if claim else inp.node_claim_name,
            node_claim_exists=claim is not None,
            provider_id=(((node or {}).get("spec") or {}).get("providerID")
                         or ((claim or {}).get("status") or {}).get("providerID") or inp.provider_id),
            node_pool=node_labels.get(labels.NODEPOOL_LABEL) or claim_labels.get(labels.NODEPOOL_LABEL),
            deleting_since=min(deletions) if deletions else None,
            grace_period=parse_optional_duration(claim_spec.get("terminationGracePeriod")),
            termination_timestamp=rules.parse_time(claim_ann.get(labels.TERMINATION_TIMESTAMP_ANNOTATION)),
            pods=pods,
            volume_attachments=attachments,
            node_ready=node_ready(node) if node is not None else None,
            min_drain_time=timedelta(seconds=self.min_drain_seconds) if self.min_drain_seconds is not None else None,
            claim_marked=marked,
        )

    async def _prepare_claim(self, inp: PrepareInput, node: Obj | None, claim: Obj | None, mirror: bool,
                             since: datetime | None) -> bool:
        """The cascade's NodeClaim deletion, then its markers (True: marked), each write from the claim as the API
        server last answered it (`claim`: ownership's PATCH; then the DELETE's answer) rather than a fresh read."""
        if claim is None:
            return False
        name = claim["metadata"]["name"]
        current: Obj | None = claim
        if inp.cascade and mirror:
            _, current = await self._io(self.kube.delete_node_claim_answer, name)  # None: read it afresh
        if not (inp.mark_claim and node is not None and node_ready(node) is not False):
            return False
        return await self._io(self.markers.mark_now, TerminationMarkersInput(
            node_claim_name=name, drained=DrainedStatus.DRAINING, since=since), current)

    async def _prepare_node(self, inp: PrepareInput, node: Obj | None, mirror: bool,
                            from_cache: bool) -> tuple[list[PodState], int | None]:
        """The cascade's Node deletion, the taint and its Event, then the pods waiting for eviction and the
        volume attachments."""
        if node is None:
            return [], 0
        if inp.cascade and mirror:
            await self._io(self.kube.delete_node, inp.node_name)
        await self._io(self.kube.taint, inp.node_name, exclude_from_lb=True, current=node)
        await self._io(self.kube.event, "Node", node, inp.node_name, EventReason.TERMINATING,
                       events.terminating(inp.reason, labels.DISRUPTED_TAINT_KEY))
        now = datetime.now(UTC)
        raw = self.cached.node_pods(inp.node_name) if from_cache and self.cached is not None else None
        if raw is None:
            raw = await self._io(self.kube.list_node_pods, inp.node_name)
        pods = [_pod_state(p) for p in raw if rules.is_waiting_eviction(p, now)]
        return pods, await self._io(self._node_attachments, inp.node_name)

    async def _read_machine(self, inp: PrepareInput) -> tuple[Obj | None, Obj | None, bool]:
        """The Node and its NodeClaim, and whether they came from the watch cache: they do when both are cached and
        one shows the deletion this termination is for (a burst's node deleted by one DELETE is read 2 GETs and its
        pods' LIST cheaper), else from the API server. The cache's copies are only read and used as the first
        attempt of writes guarded by resourceVersion (a stale one costs a 409 and a fresh read); the claim's
        markers are written from a fresh read (mark_now), and the drain lists the pods it evicts from the API
        server (the pods read here only open the workflow's status and deadline timers)."""
        if self.cached is not None and inp.node_claim_name:
            node, claim = self.cached.get("Node", inp.node_name), self.cached.get("NodeClaim", inp.node_claim_name)
            if node is not None and claim is not None and (rules.deletion_time(node) or rules.deletion_time(claim)):
                return node, claim, True
        node = await self._io(self.kube.get_node, inp.node_name)
        return node, await self._find_claim(inp, node), False

    async def _own_machine(self, claim: Obj) -> Obj | None:
        """Mark the NodeClaim with this workflow's id, so every later path to the same machine joins this
        termination (the deletion watcher reads it) instead of starting a second one. Returns the claim as now
        stored (None: gone), where the claim's next write starts."""
        mine = activity.info().workflow_id
        held, now = await self._io(self.kube.annotate_claim, claim["metadata"]["name"],
                                   labels.TERMINATION_WORKFLOW_ANNOTATION, mine, current=claim)
        if held is not None and held != mine:
            log.warning("nodeclaim %s is owned by termination %s, not %s", claim["metadata"]["name"], held, mine)
        return now

    async def _find_claim(self, inp: PrepareInput, node: Obj | None) -> Obj | None:
        if inp.node_claim_name:
            return await self._io(self.kube.get_node_claim, inp.node_claim_name)
        provider = ((node or {}).get("spec") or {}).get("providerID") or inp.provider_id
        for claim in await self._io(self.kube.list_node_claims):
            status = claim.get("status") or {}
            if status.get("nodeName") == inp.node_name or (provider and status.get("providerID") == provider):
                return claim
        return None

    # ---- drain ---------------------------------------------------------------------------------------

    @activity.defn(name="termination.drain")
    async def drain(self, inp: DrainInput) -> DrainResult:
        """Evict tier by tier until the node is drained or `return_by` passes; heartbeats each round. With
        `deadline_deletes` (Karpenter v1.15) each round first deletes the pods due at the deadline, from any tier.

        Its blocking calls take the drains' own threads (`_LANE`), so in a burst they do not wait behind every other
        node's `prepare`; and it heartbeats while a round waits for them, up to `stall_seconds` (a round stuck
        longer, e.g. a hung connection, lets the heartbeat time out and the drain run again)."""
        run = _DrainRun(poll=self.poll_min)
        _LANE.set(self._drain_pool)
        beating = asyncio.create_task(self._beat_while_waiting(run))
        try:
            return await self._drain_rounds(inp, run)
        finally:
            beating.cancel()

    async def _beat_while_waiting(self, run: _DrainRun) -> None:
        while True:
            await asyncio.sleep(BEAT_EVERY)
            if time.monotonic() - run.round_at < self.stall_seconds:
                run.heartbeat()

    async def _drain_rounds(self, inp: DrainInput, run: _DrainRun) -> DrainResult:
        while True:
            run.round_at = time.monotonic()
            run.heartbeat()
            now = datetime.now(UTC)
            early = inp.drained_not_before is not None and now < inp.drained_not_before  # drained only after a hold
            waiting = await self._waiting_pods(inp.node_name, now, confirm=not early)
            if not waiting and early:
                if inp.return_by is not None and now >= inp.return_by:  # the workflow's window ends first
                    return DrainResult(drained=False, evicted=run.evicted, deleted=len(run.deleted))
                await self._hold_to_minimum(inp, run)
                continue
            if not waiting:
                metrics.RUNNING_DRAINS.finished(inp.node_name)
                metrics.set_awaiting_completion(inp.node_name, 0)
                await self._io(_record_drained, self.kube, inp.node_name, inp.node_pool)
                if inp.started_at is not None:
                    metrics.DRAIN_DURATION.observe(max(0.0, (now - inp.started_at).total_seconds()))
                return DrainResult(drained=True, evicted=run.evicted, deleted=len(run.deleted))
            metrics.RUNNING_DRAINS.running(inp.node_name, inp.reason or "Unknown",
                                           inp.started_at.timestamp() if inp.started_at else None)
            changed = False
            if inp.deadline_deletes:
                step = rules.plan_round(waiting, inp.deadline, now)
            else:  # the workflow's timers delete at the deadline (termination.delete_pods)
                step = rules.DrainRound(evict=rules.first_tier(waiting))
            for pod in step.delete:
                changed |= await self._deadline_delete(inp, pod, run)
            tier = step.evict
            # the tier's evictions at once, as Karpenter's eviction queue sends them (the API server keeps PDBs)
            mono = time.monotonic()
            changed |= any(await asyncio.gather(*(self._evict_step(inp, pod, run, mono) for pod in tier)))
            run.heartbeat()  # a slow round under a burst is alive, not a heartbeat timeout
            run.pdb_cache.clear()
            pod_states = await self._report_round(inp, waiting, run)
            held = [p.key for p in pod_states if p.status == WAITING_FOR_COMPLETION]
            metrics.set_awaiting_completion(inp.node_name, len(held))
            if held and len(held) == len(tier):  # drain.jobs Wait (§15.8): only Job pods left to finish, by design
                await self._publish("Node", inp.node_name, EventReason.AWAITING_JOB_COMPLETION,
                                    events.awaiting_job_completion(held, inp.completion_until))
            else:
                # Karpenter's awaitDrain: a drain that leaves pods is a FailedDraining (the Recorder keeps one per
                # node per 2 min; a PDB's refusal in this round already took that slot with the pod and PDB it names)
                await self._publish("Node", inp.node_name, EventReason.FAILED_DRAINING,
                                    events.failed_draining_waiting(len(waiting)))
            now = datetime.now(UTC)
            if inp.return_by is not None and now >= inp.return_by:
                return DrainResult(drained=False, evicted=run.evicted, deleted=len(run.deleted), pods=pod_states)
            due = rules.next_deadline_delete(waiting, inp.deadline, now) if inp.deadline_deletes else None
            await asyncio.sleep(self._next_wait(inp, run, changed, now, due))

    async def _waiting_pods(self, node: str, now: datetime, confirm: bool = True) -> list[Obj]:
        """The node's pods waiting for eviction, as a round sees them: from the watch cache's pods by node, as
        Karpenter's terminator reads its informer, so a round costs no LIST; from a LIST when the cache has not synced,
        and (`confirm`) a LIST confirms a "none left" that would count the node drained (a pod bound a moment ago may
        not be cached yet). Evictions stay Eviction API calls, so the API server keeps every PDB whatever the copy
        shows; a copy behind by an eviction is not evicted twice within a second (`_evict_step`)."""
        cached = self.cached.node_pods(node) if self.cached is not None else None
        if cached is not None:
            waiting = [p for p in cached if rules.is_waiting_eviction(p, now)]
            if waiting or not confirm:
                return waiting
        return [p for p in await self._io(self.kube.list_node_pods, node) if rules.is_waiting_eviction(p, now)]

    @staticmethod
    async def _hold_to_minimum(inp: DrainInput, run: _DrainRun) -> None:
        """Drained before `drained_not_before` (Karpenter's MinDrainTime): wait until then (or `return_by`, when that
        comes first), heartbeating, before the node's pods are looked at again. What was a workflow timer and a
        second drain activity (11 history events) is a wait here."""
        assert inp.drained_not_before is not None
        until = min(inp.drained_not_before, inp.return_by or inp.drained_not_before)
        while (left := (until - datetime.now(UTC)).total_seconds()) > 0:
            run.heartbeat()
            await asyncio.sleep(min(left, 1.0))

    async def _evict_step(self, inp: DrainInput, pod: Obj, run: _DrainRun, mono: float) -> bool:
        """One pod's turn in a round: skip it (terminating, backing off, do-not-disrupt) or try to evict it.

        True when what the workflow sees changed (a pod evicted, gone or started terminating).
        """
        meta = pod["metadata"]
        key = (f"{meta['namespace']}/{meta['name']}", meta.get("uid", ""))
        st = run.states.setdefault(key, _EvictState())
        if meta.get("deletionTimestamp"):
            changed = st.status != "Terminating"
            st.status, st.pdb = "Terminating", None
            return changed
        if mono < st.next_at or st.evicted:
            return False
        if rules.completion_held(pod, inp.wait_for_completion):  # drain.jobs Wait: left to finish (§15.8)
            changed = st.status != WAITING_FOR_COMPLETION
            st.status, st.pdb = WAITING_FOR_COMPLETION, None
            return changed
        if rules.has_do_not_disrupt(pod, datetime.now(UTC)):
            st.status = "DoNotDisrupt"
            self._back_off(st, mono)
            return False
        answer = await self._io(self.kube.evict, pod)
        st.attempts += 1
        # Karpenter's terminator counts a success as code 200 (terminator/eviction.go)
        km.EVICTION_REQUESTS.labels(code="200" if answer.outcome is Eviction.EVICTED else str(answer.code)).inc()
        if answer.outcome is Eviction.EVICTED:
            km.PODS_DRAINED.labels(reason=km.snake(inp.reason)).inc()
            run.evicted += 1
            st.status, st.pdb, st.next_at, st.evicted = "Evicting", None, mono + 1.0, True
            async with run.reason_read:  # read once per drain, at its first eviction
                if run.evict_reason is None:
                    run.evict_reason = await self._io(self._eviction_reason, inp.node_name, inp.node_claim_name)
            await self._publish("Pod", meta["name"], EventReason.EVICTED, events.evicted(run.evict_reason),
                                uid=meta.get("uid"), namespace=meta["namespace"])
            return True
        if answer.outcome is Eviction.GONE:
            st.status = "Gone"
            return True
        if answer.outcome in (Eviction.PDB_BLOCKED, Eviction.MULTIPLE_PDBS):
            await self._blocked(inp, pod, key[0], st, answer.code, run, mono)
            return False
        raise RuntimeError(f"eviction of {key[0]} failed: HTTP {answer.code}: {answer.message}")

    async def _deadline_delete(self, inp: DrainInput, pod: Obj, run: _DrainRun) -> bool:
        """The grace-period deadline path inside the drain (kubernetes-sigs/karpenter#3063): delete with the grace
        left until the deadline, bypassing PDBs and do-not-disrupt. True: what the workflow sees changed."""
        meta = pod["metadata"]
        key = (f"{meta['namespace']}/{meta['name']}", meta.get("uid", ""))
        if inp.deadline is None or (key in run.deleted and not meta.get("deletionTimestamp")):
            return False  # deleted in an earlier round; the list does not show it yet
        grace = rules.deadline_grace(inp.deadline, datetime.now(UTC))
        st = run.states.setdefault(key, _EvictState())
        st.status, st.pdb = "Terminating", None
        if await self._delete_pod(pod, grace, inp.deadline, None):
            run.deleted.add(key)
            km.PODS_DRAINED.labels(reason=km.snake(inp.reason)).inc()  # v1.15's forceDelete counts it too
        return True

    async def _delete_pod(self, pod: Obj, grace: int, deadline: datetime | None, forced: str | None) -> bool:
        """Delete one pod with `grace` and say why on it (`Disrupted`); False: it was already gone."""
        meta = pod["metadata"]
        if not await self._io(self.kube.delete_pod, pod, grace):
            return False
        await self._publish("Pod", meta["name"], EventReason.DISRUPTED, events.disrupted(
            deadline, grace, rules.grace_seconds(pod), forced), uid=meta.get("uid"), namespace=meta["namespace"])
        return True

    async def _blocked(self, inp: DrainInput, pod: Obj, key: str, st: _EvictState, code: int, run: _DrainRun,
                       mono: float) -> None:
        """A PDB refused the eviction: back off, and say which PDB once per (pod, PDB) as a Warning event."""
        st.status = "Blocked"
        st.pdb = await self._blocking_pdb(pod, run.pdb_cache, code)
        self._back_off(st, mono)
        if (key, st.pdb or "") in run.reported:
            return
        run.reported.add((key, st.pdb or ""))
        await self._publish("Node", inp.node_name, EventReason.FAILED_DRAINING,
                            events.failed_draining(code == 429, key, st.pdb))

    async def _report_round(self, inp: DrainInput, waiting: list[Obj], run: _DrainRun) -> list[PodState]:
        """Heartbeat the round; signal the workflow when the blocked pods (and PDBs) changed, or when the number of
        pods left changed and `progress_every` passed since the last signal: `nodeflow status` is never stale for
        long, a drain done within it sends nothing, and a steady blocked drain sends nothing either."""
        pod_states = [self._pod_progress(p, run.states) for p in waiting]
        blocking = frozenset((p.key, p.blocking_pdb) for p in pod_states
                             if p.status in ("Blocked", "DoNotDisrupt", WAITING_FOR_COMPLETION))
        held = {p.key for p in pod_states if p.status == WAITING_FOR_COMPLETION}
        run.beat = {"pods_left": len(waiting), "evicted": run.evicted,
                    "blocking": sorted({b or "do-not-disrupt" for k, b in blocking if k not in held}),
                    "waiting_for_completion": len(held)}
        run.heartbeat()
        mono = time.monotonic()
        recount = len(pod_states) != run.last_left and mono - run.signalled_at >= self.progress_every
        if blocking != run.last_blocking or recount:
            run.last_blocking, run.last_left, run.signalled_at = blocking, len(pod_states), mono
            await self._signal_progress(inp, pod_states)
        return pod_states

    def _next_wait(self, inp: DrainInput, run: _DrainRun, changed: bool, now: datetime,
                   deadline_due: datetime | None = None) -> float:
        """Poll fast while pods move, slower while nothing does; wake for the next backoff, the next pod due at the
        deadline, or `return_by`."""
        run.poll = self.poll_min if changed else min(run.poll * 1.5, self.poll_max)
        due = [s.next_at - time.monotonic() for s in run.states.values() if s.status in ("Blocked", "DoNotDisrupt")]
        wait = min([run.poll, *[max(d, 0.0) for d in due]])
        for instant in (inp.return_by, deadline_due):
            if instant is not None:
                wait = min(wait, max((instant - now).total_seconds(), 0.0))
        return wait

    @staticmethod
    def _back_off(st: _EvictState, mono: float) -> None:
        st.backoff = BACKOFF_START if st.backoff == 0 else min(st.backoff * 2, BACKOFF_MAX)
        st.next_at = mono + st.backoff

    async def _blocking_pdb(self, pod: Obj, cache: dict[str, list[Obj]], code: int) -> str | None:
        ns = pod["metadata"]["namespace"]
        if ns not in cache:
            cache[ns] = await self._io(self.kube.list_pdbs, ns)
        pod_labels = pod["metadata"].get("labels") or {}
        names = [f"{ns}/{p['metadata']['name']}" for p in cache[ns]
                 if match_label_selector((p.get("spec") or {}).get("selector"), pod_labels)]
        return ",".join(sorted(names)) or None

    @staticmethod
    def _pod_progress(pod: Obj, states: dict[tuple[str, str], _EvictState]) -> PodState:
        ps = _pod_state(pod)
        st = states.get((ps.key, ps.uid))
        if pod["metadata"].get("deletionTimestamp"):
            ps.status = "Terminating"
        elif st is not None:
            ps.status, ps.blocking_pdb, ps.attempts = st.status, st.pdb, st.attempts
        return ps

    async def _signal_progress(self, inp: DrainInput, pods: list[PodState]) -> None:
        if not inp.workflow_id:
            return
        try:
            handle = activity.client().get_workflow_handle(inp.workflow_id)
            await handle.signal("drain_progress", DrainSignal(pods=pods))
        except Exception as exc:
            log.warning("drain progress for %s not signalled: %s", inp.node_name, exc)

    # ---- deadline / force deletes -------------------------------------------------------------------

    @activity.defn(name="termination.delete_pods")
    async def delete_pods(self, inp: DeletePodsInput) -> DeletePodsResult:
        """Delete pods bypassing PDBs and do-not-disrupt: all now (force) or those due at the deadline."""
        now = datetime.now(UTC)
        pods = await self._io(self.kube.list_node_pods, inp.node_name)
        deleted: list[str] = []
        for pod in pods:
            if not rules.is_waiting_eviction(pod, now):
                continue
            grace: int | None
            if inp.force:
                if pod["metadata"].get("deletionTimestamp"):
                    continue
                grace = rules.grace_seconds(pod)
                if inp.deadline is not None:
                    grace = min(grace, rules.deadline_grace(inp.deadline, inp.at))
            elif inp.deadline is not None and rules.needs_deadline_delete(pod, inp.deadline, inp.at):
                grace = rules.deadline_grace(inp.deadline, inp.at)
            else:
                continue
            if await self._delete_pod(pod, grace, inp.deadline, inp.reason if inp.force else None):
                deleted.append(f"{pod['metadata']['namespace']}/{pod['metadata']['name']} (grace {grace}s)")
        return DeletePodsResult(deleted=deleted)

    # ---- volumes -------------------------------------------------------------------------------------

    @activity.defn(name="termination.wait_volumes")
    async def wait_volumes(self, inp: VolumesInput) -> VolumesResult:
        """Wait until the node's VolumeAttachments are gone, but not past the deadline (docs/semantics.md §9.5);
        the NodeClaim's VolumesDetached says which (Unknown while waiting, True, or False past the deadline)."""
        waiting_marked = False
        while True:
            pending = await self._io(self._pending_attachments, inp.node_name)
            if not pending:
                await self._io(self._mark_volumes, inp.node_claim_name, True, False)
                return VolumesResult(detached=True)
            if inp.deadline is not None and datetime.now(UTC) > inp.deadline:
                await self._io(self._mark_volumes, inp.node_claim_name, False, True)
                return VolumesResult(detached=False, pending=pending)
            await self._publish("Node", inp.node_name, EventReason.AWAITING_VOLUME_DETACHMENT,
                                events.awaiting_volume_detachment(pending))
            if not waiting_marked:
                waiting_marked = await self._io(self._mark_volumes, inp.node_claim_name, False, False)
            activity.heartbeat({"pending": pending})
            await asyncio.sleep(self.volume_poll)

    def _mark_volumes(self, claim: str | None, detached: bool, deadline_passed: bool) -> bool:
        """VolumesDetached on the claim (a marker: a claim that is gone or refuses the write changes nothing)."""
        if not claim:
            return True
        try:
            self.kube.update("NodeClaim", claim, volumes_detached(detached, deadline_passed, datetime.now(UTC)),
                             status=True)
        except (ApiException, Conflict) as exc:
            log.warning("NodeClaim %s: VolumesDetached not written: %s", claim, exc)
        return True

    def _eviction_reason(self, node: str, claim_name: str | None = None) -> str:
        """The NodeClaim's DisruptionReason: read by name when the workflow knows it (from the watch cache when its
        copy already shows the claim deleting: a reason is written before the deletion, so that copy has it); else
        found in the LIST of every NodeClaim, which at 1,000 nodes draining at once was 1,000 LISTs of 1,000 claims."""
        if claim_name:
            cached = self.cached.get("NodeClaim", claim_name) if self.cached is not None else None
            if cached is not None and rules.deletion_time(cached):
                return events.eviction_reason(cached)
            return events.eviction_reason(self.kube.get_node_claim(claim_name))
        claim = next((c for c in self.kube.list_node_claims() if (c.get("status") or {}).get("nodeName") == node),
                     None)
        return events.eviction_reason(claim)

    def _node_attachments(self, node: str) -> int:
        return len(self._attachments_of(node))

    def _attachments_of(self, node: str) -> list[Obj]:
        return [va for va in self.kube.list_volume_attachments()
                if (va.get("spec") or {}).get("nodeName") == node
                and ((va.get("spec") or {}).get("source") or {}).get("persistentVolumeName")]

    def _pending_attachments(self, node: str) -> list[str]:
        attachments = self._attachments_of(node)
        if not attachments:
            return []
        now = datetime.now(UTC)
        excluded: set[str] = set()
        for pod in self.kube.list_node_pods(node):
            if rules.is_terminal(pod) or rules.is_waiting_eviction(pod, now):
                continue
            for vol in (pod.get("spec") or {}).get("volumes") or []:
                claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
                if claim:
                    pv = self.kube.get_pvc_volume(pod["metadata"]["namespace"], claim)
                    if pv:
                        excluded.add(pv)
        return [va["metadata"]["name"] for va in attachments
                if va["spec"]["source"]["persistentVolumeName"] not in excluded]

    # ---- finish --------------------------------------------------------------------------------------

    @activity.defn(name="termination.finalize")
    async def finalize(self, inp: FinalizeInput) -> FinalizeResult:
        """Delete the objects if no one did yet, then remove the Node finalizer, then the NodeClaim's. Each object is
        the watch cache's copy when it shows the deletion (a first attempt: a stale one costs a 409 and a read)."""
        node = (deleting_copy(self.cached, "Node", inp.node_name)
                or await self._io(self.kube.get_node, inp.node_name))
        read: Obj | None = node  # the finalizer's first attempt patches what was read (no second GET)
        if node is not None:
            await self._io(self.kube.event, "Node", node, inp.node_name, EventReason.TERMINATED,
                           f"Instance terminated; removing finalizer {labels.TERMINATION_FINALIZER}")
            if inp.delete_objects and not rules.deletion_time(node):
                await self._io(self.kube.delete_node, inp.node_name)
                read = None
        node_removed = await self._io(self.kube.remove_finalizer, "Node", inp.node_name, current=read)
        claim_removed, claim = False, None
        if inp.node_claim_name:
            claim = read = (deleting_copy(self.cached, "NodeClaim", inp.node_claim_name)
                            or await self._io(self.kube.get_node_claim, inp.node_claim_name))
            if claim is not None and inp.delete_objects and not rules.deletion_time(claim):
                await self._io(self.kube.delete_node_claim, inp.node_claim_name)
                read = None
            claim_removed = await self._io(self.kube.remove_finalizer, "NodeClaim", inp.node_claim_name,
                                           current=read)
        metrics.NODES_TERMINATED.labels(reason=inp.reason or "Unknown").inc()
        _record_terminated(node if node_removed else None, claim if claim_removed else None, inp.started_at)
        return FinalizeResult(node_finalizer_removed=node_removed, node_claim_finalizer_removed=claim_removed)

    @activity.defn(name="termination.untaint")
    async def untaint(self, inp: UntaintInput) -> None:
        """Undo `prepare`'s taint and label after a cancel, so the node takes pods again; hold it from re-planning
        for the cool-down (planning/disruption/candidates.py), as a cancelled disruption does."""
        await self._io(self.kube.untaint, inp.node_name, skip_deleting=False, drop_lb_label=True)
        if inp.cancelled_at is not None and self.cancel_hold_seconds > 0:
            until = inp.cancelled_at + timedelta(seconds=self.cancel_hold_seconds)
            await self._io(self.kube.patch_node, inp.node_name, {"metadata": {"annotations": {
                labels.DISRUPTION_CANCELLED_AT_ANNOTATION: format_seconds(inp.cancelled_at),
                labels.DISRUPTION_HELD_UNTIL_ANNOTATION: format_seconds(until)}}})
        node = await self._io(self.kube.get_node, inp.node_name)
        await self._io(self.kube.event, "Node", node, inp.node_name, EventReason.TERMINATION_CANCELLED,
                       f"Termination cancelled: {inp.reason or 'no reason given'}")

    def all(self) -> list[Callable[..., Any]]:
        return [self.prepare, self.drain, self.delete_pods, self.wait_volumes, self.finalize, self.untaint]


def _pod_state(pod: Obj) -> PodState:
    meta = pod["metadata"]
    return PodState(namespace=meta.get("namespace", ""), name=meta.get("name", ""), uid=meta.get("uid", ""),
                    tier=rules.tier_of(pod), grace_seconds=rules.grace_seconds(pod),
                    status="Terminating" if meta.get("deletionTimestamp") else "Waiting",
                    started_at=rules.pod_start(pod), runs_to_completion=rules.runs_to_completion(pod))


def _record_drained(kube: KubeClient, node_name: str, pool: str | None = None) -> None:
    """karpenter_nodes_drained_total, labelled with the node's pool (terminator: once per node drained); the Node is
    read only when the workflow did not say its pool."""
    if pool is None:
        node = kube.get_node(node_name)
        pool = (((node or {}).get("metadata") or {}).get("labels") or {}).get(labels.NODEPOOL_LABEL, "")
    km.NODES_DRAINED.labels(nodepool=pool).inc()


def _record_terminated(node: Obj | None, claim: Obj | None, started_at: datetime | None) -> None:
    """Karpenter's node and NodeClaim termination metrics at the removal of their finalizers
    (node/termination/controller.go, nodeclaim/lifecycle/termination.go): counts, the time since deletion was
    asked for (the termination's start when nodeflow asked for it), and the node's lifetime."""
    now = datetime.now(UTC)
    since = (now - started_at).total_seconds() if started_at is not None else None
    if node is not None:
        meta = node.get("metadata") or {}
        node_labels = meta.get("labels") or {}
        pool = node_labels.get(labels.NODEPOOL_LABEL, "")
        km.NODES_TERMINATED.labels(nodepool=pool, zone=node_labels.get(labels.ZONE_LABEL, "")).inc()
        if since is not None:
            km.NODE_TERMINATION_DURATION.observe(max(0.0, since), nodepool=pool)
        created = rules.parse_time(meta.get("creationTimestamp"))
        if created is not None:
            km.NODE_LIFETIME.labels(nodepool=pool).observe(max(0.0, (now - created).total_seconds()))
    if claim is not None:
        claim_labels = (claim.get("metadata") or {}).get("labels") or {}
        pool = claim_labels.get(labels.NODEPOOL_LABEL, "")
        km.NODECLAIMS_TERMINATED.labels(nodepool=pool, capacity_type=claim_labels.get(labels.CAPACITY_TYPE_LABEL, ""),
                                        zone=claim_labels.get(labels.ZONE_LABEL, "")).inc()
        if since is not None:
            km.NODECLAIM_TERMINATION_DURATION.labels(nodepool=pool).observe(max(0.0, since))
