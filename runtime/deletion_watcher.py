"""The deletion watcher: turns `kubectl delete node/nodeclaim/nodepool` into TerminationWorkflows.

Watch streams only mark the state dirty; a reconcile pass then reads Nodes, NodeClaims and NodePools and acts on
what it sees, and a periodic resync LISTs them and runs the same pass, so a missed or dropped watch event is never
fatal. A worker with a watch cache (runtime/cluster_cache.py) gives it here: its informers' events mark the state
dirty and a pass between resyncs reads the cache, so the watcher opens no watches of its own and does not LIST a
thousand Nodes and NodeClaims on every event of a deletion burst (docs/decisions.md §25). Every action is
idempotent: finalizers are added when missing, workflows start with USE_EXISTING on `terminate-<uid>`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from api import labels
from api.timestamps import parse_time
from client.termination import start_termination
from client.visibility import workflow_ids
from contracts.search_attributes import TASK_QUEUE
from contracts.termination import TerminationInput
from gateways.kube import KubeClient, Obj, Watch
from runtime.cache_controller import InformerWakeup, paced
from runtime.cluster_cache import ClusterCache
from workflows.termination import machine_key

log = logging.getLogger(__name__)
CLAIM_HANDOFF = timedelta(minutes=1)  # a deleting claim whose Node vanished is left to that Node's workflow this long
CACHED_KINDS = ("Node", "NodeClaim", "NodePool")  # what a pass reads, in that order
Lists = tuple[list[Obj], list[Obj], list[Obj]]
RUNNING_TERMINATIONS = "WorkflowType = 'TerminationWorkflow' AND ExecutionStatus = 'Running'"


@dataclass
class WatcherSettings:
    task_queue: str = TASK_QUEUE
    resync_seconds: float = 30.0
    debounce_seconds: float = 0.1
    pace: float = 4.0  # the pause after a pass is at least this many times its own work (at most a fifth of the time)
    start_concurrency: int = 32
    use_watch: bool = True


def _meta(obj: Obj) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _deleting(obj: Obj) -> bool:
    return bool(_meta(obj).get("deletionTimestamp"))


def _has_finalizer(obj: Obj) -> bool:
    return labels.TERMINATION_FINALIZER in (_meta(obj).get("finalizers") or [])


def _is_managed(node: Obj, pool_names: set[str], claim: Obj | None) -> bool:
    """Ours: a NodeClaim names the Node, or its `karpenter.sh/nodepool` label names a NodePool that exists, or it
    already carries our finalizer (so its deletion still ends). A label alone is not enough: a Node labelled for
    a pool this cluster does not have belongs to someone else, and our finalizer would hold its deletion until
    nodeflow ran a termination it never planned (docs/architecture.md §3)."""
    pool = (_meta(node).get("labels") or {}).get(labels.NODEPOOL_LABEL)
    return claim is not None or (pool is not None and pool in pool_names) or _has_finalizer(node)


def _signature(obj: Obj) -> tuple[Any, ...]:
    """What a pass reads of a Node, NodeClaim or NodePool: a change elsewhere (taints, conditions, other labels)
    changes nothing it does, nor does any change to an object already deleting (its going away still wakes).
    Time alone (a claim's CLAIM_HANDOFF running out) is the resync's to find."""
    meta, status = _meta(obj), obj.get("status") or {}
    if meta.get("deletionTimestamp"):  # deleting: its termination's marks and finalizer removal change nothing
        return ("deleting", meta.get("uid"))
    return (_has_finalizer(obj), meta.get("uid"),
            (meta.get("labels") or {}).get(labels.NODEPOOL_LABEL),
            (meta.get("annotations") or {}).get(labels.TERMINATION_WORKFLOW_ANNOTATION),
            status.get("nodeName"), status.get("providerID"), (obj.get("spec") or {}).get("providerID"))


def _wakes(old: Obj | None, new: Obj | None) -> bool:
    """Whether a watch event may change what a pass does: an object that appears, one that goes without having been
    seen deleting (a NodePool removed at once takes its claims along), or a change to what a pass reads. An object
    seen deleting that goes has had its termination started already: the burst's 2,000 such events wake nothing."""
    if old is None:
        return True
    if new is None:
        return not _deleting(old)
    return _signature(old) != _signature(new)


def _key_for(node: Obj | None, claim: Obj | None) -> str:
    """The termination's key: its Node's uid, or a NodeClaim's without a Node (never registered). The machine's
    termination may already run under another key (its Node's uid, seen before the Node went; or the claim's, before
    the Node registered): the claim's annotation names it, and that one is joined, never a second started."""
    claim_meta = _meta(claim) if claim else {}
    owner = machine_key((claim_meta.get("annotations") or {}).get(labels.TERMINATION_WORKFLOW_ANNOTATION) or "")
    return owner or (_meta(node)["uid"] if node is not None else claim_meta["uid"])


@dataclass
class _Plan:
    """One pass's decisions: NodeClaims a deleted NodePool takes along, finalizers to add, terminations to start."""

    victims: list[str] = field(default_factory=list)
    gone_pools: list[str] = field(default_factory=list)
    fixes: list[tuple[str, str]] = field(default_factory=list)  # (kind, name) missing our finalizer
    todo: list[TerminationInput] = field(default_factory=list)


class DeletionWatcher:
    def __init__(self, kube: KubeClient, client: Any, settings: WatcherSettings | None = None,
                 start: Callable[[TerminationInput], Any] | None = None, cache: ClusterCache | None = None) -> None:
        self.kube = kube
        self._cache = cache
        self.client = client
        self.settings = settings or WatcherSettings()
        self._start_fn = start
        self._dirty = asyncio.Event()
        self._stopping = threading.Event()
        self._started: set[str] = set()  # node/claim uids started since the last resync
        self._known_pools: set[str] = set()
        self._claim_node: dict[str, str] = {}  # claim uid -> uid of the Node it had when we last saw both
        self._watches: list[Watch] = []
        self._wakeup: InformerWakeup | None = None
        self.passes = 0
        self.cached_passes = 0  # passes that read the watch cache rather than LISTing
        self.last_pass_seconds = 0.0  # the last pass's own work: its decisions, no I/O

    def stop(self) -> None:
        self._stopping.set()
        for w in self._watches:
            w.stop()
        if self._wakeup is not None:
            self._wakeup.detach()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        if self._cache is not None and self.settings.use_watch:
            self._listen(loop)
        elif self.settings.use_watch:
            for kind in ("nodes", "nodeclaims", "nodepools"):
                threading.Thread(target=self._watch_loop, args=(kind, loop), daemon=True,
                                 name=f"watch-{kind}").start()
        last_resync = 0.0
        while not self._stopping.is_set():
            try:
                resync = time.monotonic() - last_resync >= self.settings.resync_seconds
                if resync:
                    self._started = await self._still_running(self._started)
                    last_resync = time.monotonic()
                await self.reconcile(relist=resync)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("watcher pass failed: %s", exc)
                await asyncio.sleep(1.0)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._dirty.wait(), timeout=self.settings.resync_seconds)
            self._dirty.clear()
            await asyncio.sleep(self._pause())

    def _pause(self) -> float:
        """The debounce, or `pace` times the last pass's own work, as the cache controllers pace theirs
        (runtime/cache_controller.py): in a burst of 1,000 deletions the watcher is woken all the time, and a pass
        over 2,000 objects every 0.1 s was a third of a core."""
        return paced(self.settings.debounce_seconds, self.settings.pace, self.last_pass_seconds)

    def _listen(self, loop: asyncio.AbstractEventLoop) -> None:
        """The cache's informers mark the state dirty (from their threads) for an event that may change what a pass
        does: most of a deletion burst's events are its own terminations' taints and status marks, which do not."""
        assert self._cache is not None
        self._wakeup = InformerWakeup(self._cache, CACHED_KINDS,
                                      lambda _kind, old, new: not self._stopping.is_set() and _wakes(old, new))
        self._wakeup.attach(loop, self._dirty)

    def _watch_loop(self, kind: str, loop: asyncio.AbstractEventLoop) -> None:
        while not self._stopping.is_set():
            w, stream = self.kube.watch(kind)
            self._watches.append(w)
            try:
                for _event in stream:
                    if self._stopping.is_set():
                        return
                    loop.call_soon_threadsafe(self._dirty.set)
            except Exception as exc:
                if self._stopping.is_set():
                    return
                log.debug("watch %s ended: %s", kind, exc)
                time.sleep(1.0)
            finally:
                self._watches.remove(w)

    async def _still_running(self, started: set[str]) -> set[str]:
        """The resync forgets the terminations it started unless Temporal lists them running: those are started again
        (idempotently) only if they ended or never began. One visibility query instead of a start per deleting node
        each resync (1,000 deleting nodes at a 2 s resync were 500 starts a second, half the worker's CPU). Without
        the list (an error, or a stand-in client), everything is started again as before."""
        if not started or self._start_fn is not None:
            return set()
        try:
            running = {machine_key(wid) for wid in await workflow_ids(self.client, RUNNING_TERMINATIONS)}
        except Exception as exc:
            log.warning("running terminations not listed, starting every deleting node's again: %s", exc)
            return set()
        return started & running

    # ---- one pass ------------------------------------------------------------------------------------

    async def reconcile(self, relist: bool = False) -> int:
        """One idempotent pass; returns how many terminations it (re)started. It reads the watch cache when it has a
        healthy one and `relist` is not asked for; else it LISTs."""
        nodes, claims, pools = await self._read(relist)
        began = time.perf_counter()
        plan = self._decide(nodes, claims, pools)
        self.last_pass_seconds = time.perf_counter() - began
        if plan.victims:
            log.info("nodepool deletion: deleting %d nodeclaims", len(plan.victims), extra={"pools": plan.gone_pools})
            await asyncio.gather(*(asyncio.to_thread(self.kube.delete_node_claim, name) for name in plan.victims),
                                 return_exceptions=True)
        fixes = [asyncio.to_thread(self.kube.add_finalizer, kind, name) for kind, name in plan.fixes]
        if fixes:
            await asyncio.gather(*fixes, return_exceptions=True)
        if plan.todo:
            await self._start_all(plan.todo)
        return len(plan.todo)

    def _decide(self, nodes: list[Obj], claims: list[Obj], pools: list[Obj]) -> _Plan:
        """What this pass does, from one reading: no I/O, so its time is the pass's own cost."""
        claim_by_node: dict[str, Obj] = {}
        claim_by_provider: dict[str, Obj] = {}
        for c in claims:
            status = c.get("status") or {}
            if status.get("nodeName"):
                claim_by_node[status["nodeName"]] = c
            if status.get("providerID"):
                claim_by_provider[status["providerID"]] = c

        def claim_of(node: Obj) -> Obj | None:
            return claim_by_node.get(_meta(node)["name"]) or claim_by_provider.get(
                (node.get("spec") or {}).get("providerID") or "")

        pool_names = {_meta(p)["name"] for p in pools}
        managed = [(n, claim_of(n)) for n in nodes]
        managed = [(n, c) for n, c in managed if _is_managed(n, pool_names, c)]
        plan = self._cascade_pools(pools, claims)
        plan.fixes = [("Node", _meta(n)["name"]) for n, _ in managed if not _deleting(n) and not _has_finalizer(n)]
        plan.fixes += [("NodeClaim", _meta(c)["name"]) for c in claims if not _deleting(c) and not _has_finalizer(c)]
        covered: set[str] = set()
        for n, claim in managed:
            if not (_deleting(n) or (claim is not None and _deleting(claim))):
                continue
            covered.add(_meta(claim)["uid"] if claim else "")
            if _key_for(n, claim) not in self._started:  # built only when it may start (1,000 per pass in a burst)
                plan.todo.append(self._input_for(n, claim))
        claim_uids = {_meta(c)["uid"] for c in claims}
        for n, claim in managed:
            if claim is not None:
                self._claim_node[_meta(claim)["uid"]] = _meta(n)["uid"]
        self._claim_node = {c: n for c, n in self._claim_node.items() if c in claim_uids}
        plan.todo += self._claims_alone(claims, covered)
        return plan

    def _claims_alone(self, claims: list[Obj], covered: set[str]) -> list[TerminationInput]:
        """Deleting NodeClaims no deleting Node covers: each gets its own termination, unless its Node's (seen
        earlier) is still within CLAIM_HANDOFF of the claim's deletion."""
        todo: list[TerminationInput] = []
        now = datetime.now(UTC)
        for c in claims:
            if not _deleting(c) or _meta(c)["uid"] in covered:
                continue
            deleted_at = parse_time(_meta(c).get("deletionTimestamp"))
            recent = deleted_at is not None and now - deleted_at < CLAIM_HANDOFF
            if _meta(c)["uid"] in self._claim_node and recent:
                continue  # its Node's termination (seen earlier) removes this claim's finalizer
            if _key_for(None, c) not in self._started:
                todo.append(self._input_for(None, c))
        return todo

    async def _read(self, relist: bool) -> Lists:
        """Nodes, NodeClaims and NodePools: from the cache when it is current and no LIST is asked for."""
        cached = None if relist else self._cached()
        if cached is not None:
            self.cached_passes += 1
        else:
            cached = await asyncio.gather(
                asyncio.to_thread(self._list, "nodes"), asyncio.to_thread(self._list, "nodeclaims"),
                asyncio.to_thread(self._list, "nodepools"))
        self.passes += 1
        return cached[0], cached[1], cached[2]

    def _cached(self) -> Lists | None:
        """Nodes, NodeClaims and NodePools from the cache, or None when it has none or one of them is not current
        (never synced, re-listing after a 410, its watch failing, stopped): the pass LISTs then."""
        if self._cache is None or not self._cache.healthy(CACHED_KINDS):
            return None
        nodes, claims, pools = (self._cache.informers[kind].objects() for kind in CACHED_KINDS)
        return nodes, claims, pools

    def _list(self, kind: str) -> list[Obj]:
        return self.kube.list_nodes() if kind == "nodes" else self.kube.list_karpenter(kind)

    @staticmethod
    def _input_for(node: Obj | None, claim: Obj | None) -> TerminationInput:
        claim_meta = _meta(claim) if claim else {}
        status = (claim or {}).get("status") or {}
        if node is not None:
            meta = _meta(node)
            name = meta["name"]
            pool = (meta.get("labels") or {}).get(labels.NODEPOOL_LABEL)
            provider = (node.get("spec") or {}).get("providerID") or status.get("providerID")
        else:  # a NodeClaim without a Node (never registered)
            name, pool, provider = "", None, status.get("providerID")
        pool = pool or (claim_meta.get("labels") or {}).get(labels.NODEPOOL_LABEL)
        return TerminationInput(node_name=name, node_uid=_key_for(node, claim), node_claim_name=claim_meta.get("name"),
                                node_pool=pool, provider_id=provider, reason="Deleted", requested_by="watcher")

    async def _start_all(self, todo: list[TerminationInput]) -> None:
        sem = asyncio.Semaphore(self.settings.start_concurrency)

        async def one(inp: TerminationInput) -> None:
            async with sem:
                try:
                    if self._start_fn is not None:
                        await self._start_fn(inp)
                    else:
                        await start_termination(self.client, inp, task_queue=self.settings.task_queue)
                    self._started.add(inp.node_uid)
                    log.info("termination started", extra={"node": inp.node_name, "uid": inp.node_uid})
                except Exception as exc:
                    log.warning("could not start termination of %s: %s", inp.node_name or inp.node_claim_name, exc)

        await asyncio.gather(*(one(t) for t in todo))

    def _cascade_pools(self, pools: list[Obj], claims: list[Obj]) -> _Plan:
        """A deleted (or deleting) NodePool takes its NodeClaims with it; each then gets a termination."""
        present = {_meta(p)["name"] for p in pools if not _deleting(p)}
        gone = {_meta(p)["name"] for p in pools if _deleting(p)} | (self._known_pools - present)
        self._known_pools = present
        victims = [_meta(c)["name"] for c in claims if not _deleting(c)
                   and (_meta(c).get("labels") or {}).get(labels.NODEPOOL_LABEL) in gone]
        return _Plan(victims=victims, gone_pools=sorted(gone) if victims else [])
