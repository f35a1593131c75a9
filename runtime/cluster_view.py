"""The planner's view of the watch cache: the cached objects, already loaded, and their pods already parsed.

Loading 80k objects (shape checks, NodeClaim models) and parsing 72k pods into `PodInfo` cost seconds per
pass; between two passes only what changed needs it. The informer replaces a stored object on every change and
never modifies one (runtime/informer.py), so object identity is the change signal: an object that is the one
seen last read reuses its load and PodInfo, any other is loaded and parsed. No listener is needed, and the
order is the cache's own by construction, so a pass over the view decides exactly what a pass over
`cache.objects()` would.
PodInfo is not modified by planning (NodeInfo is, and is built fresh every pass by `Cluster.from_parts`).
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from api.snapshot import SnapshotError, load_object
from planning.cluster import PodInfo, parse_pod
from runtime.cluster_cache import KINDS, ClusterCache, Health
from runtime.informer import Obj


class ClusterView:
    """What `PlanningActivities` reads when the worker has a cache (activities/planning_runner.py ClusterSource)."""

    def __init__(self, cache: ClusterCache) -> None:
        self.cache = cache
        # id(stored object) -> (that object, its load); holding the object keeps its id from being reused
        self._loaded: dict[int, tuple[Obj, Any]] = {}
        self._parsed: dict[int, PodInfo] = {}  # id(stored pod) -> its PodInfo (which holds the pod as `raw`)
        self._lock = threading.Lock()  # a pass and a validation may read at once
        self.reparsed = 0  # pods parsed by the last read (the rest were reused)

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

    def read(self) -> tuple[list[Obj], list[PodInfo], dict[int, Any]]:
        """Every cached object in `KubeClient.cluster_objects()` order; the Pods among them parsed (same order);
        and, by id(), each object as `api.snapshot.load_object` loaded it (for `Snapshot.from_loaded`)."""
        with self._lock:
            objs: list[Obj] = []
            for kind in KINDS:
                inf = self.cache.informers.get(kind)
                if inf is not None:
                    objs += inf.objects()
            loaded, pods = self._carry(objs)
            return objs, pods, loaded

    def _carry(self, objs: list[Obj]) -> tuple[dict[int, Any], list[PodInfo]]:
        """Reuse the load and PodInfo of every object seen last read; load and parse only the others."""
        old_loaded, old_pods = self._loaded, self._parsed
        kept: dict[int, tuple[Obj, Any]] = {}
        parsed: dict[int, PodInfo] = {}
        pods: list[PodInfo] = []
        reparsed = 0
        for obj in objs:
            key = id(obj)
            entry = old_loaded.get(key)
            if entry is None or entry[0] is not obj:
                try:
                    entry = (obj, load_object(obj))
                except SnapshotError:
                    continue  # left to the snapshot's loader, which fails the pass as a LIST pass would
            kept[key] = entry
            if obj.get("kind") == "Pod":
                info = old_pods.get(key)
                if info is None or info.raw is not obj:
                    info, reparsed = parse_pod(obj), reparsed + 1
                parsed[key] = info
                pods.append(info)
        self._loaded, self._parsed, self.reparsed = kept, parsed, reparsed
        return {k: v[1] for k, v in kept.items()}, pods
