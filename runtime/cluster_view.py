"""The planner's view of the watch cache: the cached objects plus their pods already parsed.

Parsing 72k pods into `PodInfo` costs seconds per pass; between two passes only the pods that changed need
it. The informer replaces a stored object on every change and never modifies one (runtime/informer.py), so
object identity is the change signal: a pod whose dict is the one parsed last pass reuses its PodInfo, any
other is parsed. No listener is needed, and the order of the parsed pods is the cache's own order by
construction, so a pass over the view decides exactly what a pass over `cache.objects()` would.
PodInfo is not modified by planning (NodeInfo is, and is built fresh every pass by `Cluster.from_parts`).
"""

from __future__ import annotations

import asyncio
import threading
import time

from planning.cluster import PodInfo, parse_pod
from runtime.cluster_cache import KINDS, ClusterCache, Health
from runtime.informer import Obj


class ClusterView:
    """What `PlanningActivities` reads when the worker has a cache (activities/planning_runner.py ClusterSource)."""

    def __init__(self, cache: ClusterCache) -> None:
        self.cache = cache
        self._parsed: dict[int, PodInfo] = {}  # id(raw pod) -> its parse; the PodInfo holds raw, so ids stay unique
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

    def read(self) -> tuple[list[Obj], list[PodInfo]]:
        """Every cached object in `KubeClient.cluster_objects()` order, and the Pods among them parsed (same order)."""
        with self._lock:
            objs: list[Obj] = []
            pods: list[PodInfo] = []
            for kind in KINDS:
                inf = self.cache.informers.get(kind)
                if inf is None:
                    continue
                items = inf.objects()
                objs += items
                if kind == "Pod":
                    pods = self._parse(items)
            return objs, pods

    def _parse(self, raws: list[Obj]) -> list[PodInfo]:
        old, new = self._parsed, {}
        out, reparsed = [], 0
        for raw in raws:
            info = old.get(id(raw))
            if info is None:
                info, reparsed = parse_pod(raw), reparsed + 1
            new[id(raw)] = info
            out.append(info)
        self.reparsed, self._parsed = reparsed, new
        return out
