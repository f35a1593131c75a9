"""The spot pre-spin's size from the live cluster: the interrupted node's pods scheduled as the provisioner would
(planning/provisioning/spot_sizing.py). The cluster is read through the planner's reader (the worker's watch cache, or a
LIST when the cache is off); only the launches leave the activity."""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import activity

from activities.planning_runner import to_replacement
from activities.provisioning_planner import ClusterReader
from api.catalog import InstanceTypeCatalog, load_catalog
from api.snapshot import Snapshot
from contracts.interruption import SizedLaunch, SizedReplacements, SizeInput
from planning.pricing.unavailable_offerings import UnavailableOfferings, with_unavailable
from planning.provisioning.spot_sizing import size_interrupted


def to_sized(sizing: Any) -> SizedReplacements:
    """planning.provisioning.spot_sizing.SpotSizing -> the workflow's small payload."""
    launches = [SizedLaunch(
        node_pool=launch.node_pool, pods=len(launch.pods),
        replacement=to_replacement(launch.replacement))
        for launch in sizing.launches]
    return SizedReplacements(found=sizing.found, launches=launches, pods=sizing.pods, placed=len(sizing.placed),
                             unplaced=len(sizing.unplaced))


class SpotSizingActivities:
    """Clients come in: the planner's cluster reader and the catalog."""

    def __init__(self, reader: ClusterReader, catalog: InstanceTypeCatalog | None = None,
                 offerings: UnavailableOfferings | None = None) -> None:
        self._reader = reader
        self._catalog = catalog
        self._offerings = offerings  # the interrupted offering (and any EC2 refused lately) is not sized onto

    @activity.defn(name="interruption_size_replacement")
    async def size_replacement(self, inp: SizeInput) -> SizedReplacements:
        objs, snapshot, parsed = await self._reader.read_cluster()
        return await asyncio.to_thread(self._size, objs, snapshot, parsed, inp)

    def _size(self, objs: list[dict[str, Any]], snapshot: Any, parsed: Any, inp: SizeInput) -> SizedReplacements:

        catalog = with_unavailable(load_catalog(inp.catalog_path) if inp.catalog_path else self._catalog,
                                   self._offerings)
        snapshot = snapshot if snapshot is not None else Snapshot.from_objects(objs)
        return to_sized(size_interrupted(snapshot, inp.node_name, catalog, parsed=parsed))
