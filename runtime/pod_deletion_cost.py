"""The pod deletion-cost controller (feature gate PodDeletionCostManagement, Karpenter v1.15,
kubernetes-sigs/karpenter#2894): every `interval_seconds` the leader ranks the nodes by how soon a pass would disrupt
them (planning/disruption/deletion_cost.py) and patches `controller.kubernetes.io/pod-deletion-cost` onto their
ReplicaSet pods, so a scale-down empties the nodes nodeflow would take next (docs/semantics.md §3.6).

It reads the worker's watch cache (no LIST per tick) and writes only a pod whose cost changes, at most `max_writes` a
tick (the lowest costs first; the rest follow next tick): a tick with nothing changed writes nothing. A pod whose
cost someone else set is left alone. With the gate off, the leader runs it once in `cleanup` mode: it takes its own
costs off the pods (a gate turned off leaves no stale order behind) and ends when none is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from api.catalog import InstanceTypeCatalog
from gateways.kube import KubeClient
from planning.cluster import Cluster
from planning.disruption.deletion_cost import annotation_patches, deletion_costs, disruption_order
from planning.policies.view import PolicyView
from runtime.cluster_view import ClusterView
from telemetry.metrics import POD_DELETION_COST_RANKED_NODES, POD_DELETION_COST_WRITES

log = logging.getLogger(__name__)


@dataclass
class DeletionCostSettings:
    interval_seconds: float = 60.0  # Karpenter's controller reconciles every 60 s
    max_writes: int = 500  # pod patches per tick; what is left waits for the next tick
    cleanup: bool = False  # the gate is off: only take nodeflow's own costs off, then end


@dataclass(frozen=True)
class TickResult:
    ranked: int  # nodes ranked
    written: int  # pods patched
    left: int  # patches left for the next tick (over max_writes)
    foreign: int  # ranked pods left alone: someone else set their cost


class PodDeletionCostController:
    """One periodic loop on the worker's ClusterView; `tick` is synchronous (run in a thread) so tests drive it."""

    def __init__(self, kube: KubeClient, view: ClusterView, catalog: Callable[[], InstanceTypeCatalog | None],
                 settings: DeletionCostSettings | None = None,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.kube, self.view, self.catalog = kube, view, catalog
        self.settings = settings or DeletionCostSettings()
        self.clock = clock
        self._stop = asyncio.Event()

    def tick(self) -> TickResult | None:
        """Rank, then patch what changed; None while the cache is not healthy (nothing is decided on a stale view)."""
        if not self.view.healthy():
            return None
        _, snapshot, parsed = self.view.read()
        costs: dict[str, int] = {}
        ranked = 0
        if not self.settings.cleanup:
            at = self.clock()
            cluster = Cluster.from_parts(snapshot, parsed.pods, self.catalog(), parsed.claims)
            order = disruption_order(cluster, at, PolicyView.build(snapshot, at))
            costs, ranked = deletion_costs(cluster, order), len(order)
            POD_DELETION_COST_RANKED_NODES.set(ranked)
        patches, foreign = annotation_patches(parsed.pods, costs)
        now = patches[: self.settings.max_writes]
        for patch in now:
            self.kube.patch_pod(patch.namespace, patch.name, {"metadata": {"annotations": patch.annotations}})
            POD_DELETION_COST_WRITES.labels(action="remove" if patch.removes else "set").inc()
        return TickResult(ranked=ranked, written=len(now), left=len(patches) - len(now), foreign=foreign)

    async def run(self) -> None:
        """Tick every interval until stopped; in cleanup mode, until a tick finds nothing of nodeflow's left."""
        while not self._stop.is_set():
            result = None
            try:
                result = await asyncio.to_thread(self.tick)
                if result is not None and (result.written or result.left):
                    log.info("pod deletion costs patched", extra={"written": result.written, "left": result.left,
                                                                  "ranked": result.ranked})
                if self.settings.cleanup and result is not None and result.written == 0:
                    return
            except Exception as exc:  # a failed tick is retried next interval; never end the worker over it
                log.warning("pod deletion cost tick failed: %s", exc)
            wait = self.settings.interval_seconds if result is not None else min(self.settings.interval_seconds, 1.0)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), wait)

    def stop(self) -> None:
        self._stop.set()
