"""The planner's view of the watch cache: the cached objects, already loaded, and their pods already parsed.

Loading 80k objects (shape checks, NodeClaim models) and parsing 72k pods into `PodInfo` (5,000 claims into
`ClaimInfo`) cost seconds per pass; between two passes only what changed needs it. The informer replaces a
stored object on every change and never modifies one (runtime/informer.py), so object identity is the change
signal: an object that is the one seen last read reuses its load and parse, any other is loaded and parsed.
No listener is needed, and the order is the cache's own by construction, so a pass over the view decides
exactly what a pass over `cache.objects()` would. Planning only reads PodInfo and ClaimInfo (NodeInfo, which
it changes, is built every pass by `Cluster.from_parts`).
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from itertools import compress, repeat
from operator import is_, itemgetter, not_
from typing import Any

from api.snapshot import Snapshot, load_object
from planning.cluster import Parsed, parse_claim, parse_pod
from planning.identity_memo import IdentityMemo
from planning.planner.plan import gc_paused
from runtime.cluster_cache import KINDS, ClusterCache, Health
from runtime.informer import Obj


class ClusterView:
    """What `PlanningActivities` reads when the worker has a cache (activities/planning_runner.py ClusterSource)."""

    def __init__(self, cache: ClusterCache) -> None:
        self.cache = cache
        # each kind's entries as the last read returned them, in the informer's order (entries hold their objects)
        self._kept: dict[str, list[Entry]] = {}
        self._lock = threading.Lock()  # a pass and a validation may read at once
        self.reparsed = 0  # pods parsed by the last read (the rest were reused)
        # what planning derives from the cached objects alone (parsed Node fields, node health), carried likewise
        self.memo = IdentityMemo()

    def start(self) -> None:
        self.cache.start()

    def stop(self) -> None:
        self.cache.stop()

    @property
    def synced(self) -> bool:
        return self.cache.synced

    def healthy(self) -> Health:
        return self.cache.healthy()

    async def wait_healthy(self, timeout: float, interval: float = 0.05) -> Health:
        """The cache's health once it is healthy, or as it is after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not (health := self.healthy()) and time.monotonic() < deadline:
            await asyncio.sleep(interval)
        return health

    def read(self) -> tuple[list[Obj], Snapshot, Parsed]:
        """Every cached object (`KubeClient.cluster_objects()` order), the Snapshot of them, and its Pods and
        NodeClaims parsed. What was seen last read is reused; the rest is loaded (api.snapshot.load_object, whose
        SnapshotError fails the pass as a LIST pass's loader would) and parsed. The cyclic collector waits until
        the read is done: it would walk the read's young lists of ~95k objects again at every collection."""
        with self._lock, gc_paused():
            kept: dict[str, list[Entry]] = {}
            objs: list[Obj] = []
            snap = Snapshot(source="<cluster cache>")
            lists = {"NodePool": snap.node_pools, "NodeClaim": snap.node_claims, "EC2NodeClass": snap.node_classes,
                     "Node": snap.nodes, "Pod": snap.pods, "PodDisruptionBudget": snap.pdbs,
                     "DisruptionPolicy": snap.disruption_policies, "NodeOverlay": snap.node_overlays}
            parsed: dict[str, list[Any]] = {"Pod": [], "NodeClaim": []}
            reparsed = 0
            for kind in KINDS:
                inf = self.cache.informers.get(kind)
                items = inf.objects() if inf is not None else []
                objs += items
                entries, loaded = _entries(kind, items, self._kept.get(kind, []))
                reparsed += loaded if kind == "Pod" else 0
                kept[kind] = entries
                lists.get(kind, snap.others).extend(map(_LOADED, entries))
                if kind in parsed:
                    parsed[kind] = list(map(_PARSED, entries))
            self._kept, self.reparsed = kept, reparsed
            self.memo.next_pass()
            if reparsed >= FREEZE_MIN_PODS and reparsed > len(parsed["Pod"]) // 2:
                _freeze_for_gc()
            return objs, snap, Parsed(parsed["Pod"], parsed["NodeClaim"], self.memo)


def _entries(kind: str, items: list[Obj], last: list[Entry]) -> tuple[list[Entry], int]:
    """The entries of one kind's objects, in order: the last read's where it held the very same object, else
    loaded and parsed now; and how many were loaded. An informer keeps its objects in a dict, so a replaced object
    keeps its place: the objects are compared with the last read's place by place, in C (a steady pass has ~95k),
    and Python visits only the places that changed. An object seen last time in another place (after a deletion)
    is found among the entries of the places that changed."""
    n, m = len(items), len(last)
    changed = list(compress(range(min(n, m)), map(not_, map(is_, map(_OBJ, last), items))))
    entries = last[:n] if n <= m else [*last, *repeat(_NONE, n - m)]
    moved = {id(last[j][0]): last[j] for j in (*changed, *range(n, m))}
    loaded = 0
    for i in (*changed, *range(m, n)):
        obj = items[i]
        entry = moved.get(id(obj))
        if entry is None or entry[0] is not obj:
            entry = _load(kind, obj)
            loaded += 1
        entries[i] = entry
    return entries, loaded


FREEZE_MIN_PODS = 1000  # a read that loads fewer leaves the collector alone (see _freeze_for_gc)


def _freeze_for_gc() -> None:
    """After a read that loaded most of the cluster (the first, or one after a re-list): move what is alive now
    into the collector's permanent generation. The cache's ~1M objects are long-lived, and each full collection
    walked them all: ~0.4 s of every steady pass at 5,000 nodes. Frozen objects are still freed when their last
    reference goes (the informer replaces, never mutates, so they hold no cycles); unfreezing first lets garbage
    frozen by an earlier call be collected now. Not below FREEZE_MIN_PODS pods loaded: a small cache costs a
    collection little, and there most reads load most pods (one of one changed), while each freeze is a full
    collection of the whole process (~0.2 s in a test process that runs the worker in-process)."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


Entry = tuple[Obj, Any, Any]  # (the stored object, as loaded, parsed: PodInfo / ClaimInfo / None)
_OBJ, _LOADED, _PARSED = itemgetter(0), itemgetter(1), itemgetter(2)
_NONE: Entry = (None, None, None)  # what the last read held for an object it did not see: never the object


def _load(kind: str, obj: Obj) -> Entry:
    loaded = load_object(obj)
    parsed = parse_pod(obj) if kind == "Pod" else parse_claim(loaded) if kind == "NodeClaim" else None
    return obj, loaded, parsed
