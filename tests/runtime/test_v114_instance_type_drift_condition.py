"""The worker writes InstanceTypeNotFound on a NodeClaim's Drifted condition (docs/semantics.md §4.1, Karpenter's
nodeclaim/disruption/drift.go) and clears it when the catalog lists the type again; against the simulator."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from api import labels as L
from api.catalog import InstanceTypeCatalog, load_default_catalog
from gateways.kube import KubeClient
from runtime.cluster_cache import ClusterCache
from runtime.nodepool_status import KINDS, NodePoolStatusController
from tests.runtime.test_nodepool_status import World, _pass


def _drifted(world: World, name: str) -> str:
    claim = world.custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", name)
    return next((c["reason"] for c in claim.get("status", {}).get("conditions") or []
                 if c["type"] == "Drifted" and c["status"] == "True"), "")


async def test_a_claim_whose_type_left_the_catalog_is_drifted_and_cleared_when_it_returns(sim: Any) -> None:
    world = World(sim.api_client())
    world.setup()
    world.launched("c1")
    labels = {L.NODEPOOL_LABEL: "default", L.INSTANCE_TYPE_LABEL: "m5.xlarge", L.ZONE_LABEL: "us-east-1a",
              L.CAPACITY_TYPE_LABEL: "on-demand"}
    world.custom.patch_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "c1", {"metadata": {"labels": labels}})
    full = load_default_catalog()
    without = InstanceTypeCatalog(instance_types=[t for t in full.instance_types if t.name != "m5.xlarge"])
    current: dict[str, InstanceTypeCatalog] = {"catalog": without}
    later = datetime.now(UTC) + timedelta(hours=2)  # the claim is over an hour old
    cache = ClusterCache(world.api, kinds=KINDS)
    cache.start()
    assert cache.wait_synced(10)
    controller = NodePoolStatusController(KubeClient(world.api), cache, clock=lambda: later,
                                          catalog=lambda: current["catalog"])
    controller.attach()
    try:
        await _pass(controller)
        assert _drifted(world, "c1") == "InstanceTypeNotFound"
        current["catalog"] = full
        await asyncio.sleep(0.3)
        await _pass(controller)
        assert _drifted(world, "c1") == ""
    finally:
        cache.stop()


async def test_without_a_catalog_nothing_is_written(sim: Any) -> None:
    world = World(sim.api_client())
    world.setup()
    world.launched("c1")
    cache = ClusterCache(world.api, kinds=KINDS)
    cache.start()
    assert cache.wait_synced(10)
    controller = NodePoolStatusController(KubeClient(world.api), cache,
                                          clock=lambda: datetime.now(UTC) + timedelta(hours=2))
    controller.attach()
    try:
        await _pass(controller)
        assert _drifted(world, "c1") == ""  # no instance type label, but no catalog either: not judged
    finally:
        cache.stop()
