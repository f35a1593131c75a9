"""The NodePool status controller against the simulator (runtime/nodepool_status.py): NodeRegistrationHealthy from
the watch events of the pool's claims, a resync that changes nothing writes nothing, two replicas agree."""

from __future__ import annotations

import asyncio
from typing import Any

from kubernetes import client as k8s

from api import labels as L
from gateways.kube import KubeClient
from runtime.cluster_cache import ClusterCache
from runtime.nodepool_status import KINDS, NodePoolStatusController

LONG_AGO = "2026-01-01T00:00:00Z"
CLASS = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"},
         "spec": {"role": "KarpenterNodeRole", "amiSelectorTerms": [{"alias": "al2023@latest"}],
                  "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
                  "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}]}}
POOL = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
        "spec": {"template": {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                        "name": "default"}, "requirements": []}}}}


def _claim(name: str) -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": name, "labels": {L.NODEPOOL_LABEL: "default"}},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                     "requirements": []}}


class World:
    def __init__(self, api: Any) -> None:
        self.api, self.custom = api, k8s.CustomObjectsApi(api)

    def setup(self) -> None:
        self.custom.create_cluster_custom_object("karpenter.k8s.aws", "v1", "ec2nodeclasses", CLASS)
        self.custom.patch_cluster_custom_object_status("karpenter.k8s.aws", "v1", "ec2nodeclasses", "default", {
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "",
                                       "lastTransitionTime": LONG_AGO}]}})
        self.custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", POOL)

    def launched(self, name: str, registered: str = "Unknown") -> None:
        """A launched claim whose registration has been waiting since long ago (past the 15 min timeout)."""
        self.custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", _claim(name))
        conds = [{"type": "Launched", "status": "True", "reason": "Launched", "message": "",
                  "lastTransitionTime": LONG_AGO},
                 {"type": "Registered", "status": registered, "reason": "Registered" if registered == "True"
                  else "NodeNotFound", "message": "", "lastTransitionTime": LONG_AGO}]
        self.custom.patch_cluster_custom_object_status("karpenter.sh", "v1", "nodeclaims", name, {"status": {
            "providerID": f"aws:///us-east-1a/i-{name}", "conditions": conds}})

    def register(self, name: str) -> None:
        claim = self.custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", name)
        conds = [c for c in claim["status"]["conditions"] if c["type"] != "Registered"]
        conds.append({"type": "Registered", "status": "True", "reason": "Registered", "message": "",
                      "lastTransitionTime": LONG_AGO})
        self.custom.patch_cluster_custom_object_status("karpenter.sh", "v1", "nodeclaims", name,
                                                       {"status": {"conditions": conds}})

    def delete(self, name: str) -> None:
        self.custom.delete_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", name)

    def pool(self) -> dict[str, Any]:
        return self.custom.get_cluster_custom_object("karpenter.sh", "v1", "nodepools", "default")

    def registration(self) -> tuple[str, str]:
        c = next((c for c in self.pool().get("status", {}).get("conditions") or []
                  if c["type"] == "NodeRegistrationHealthy"), {})
        return c.get("status", ""), c.get("reason", "")


def _controller(api: Any) -> tuple[NodePoolStatusController, ClusterCache]:
    cache = ClusterCache(api, kinds=KINDS)
    cache.start()
    assert cache.wait_synced(10)
    controller = NodePoolStatusController(KubeClient(api), cache)
    controller.attach()  # run() does this; the tests drive the passes themselves
    return controller, cache


async def _pass(c: NodePoolStatusController) -> int:
    await asyncio.sleep(0.3)  # the cache sees the last writes and their watch events
    return await asyncio.to_thread(c.reconcile)


async def test_registration_health_follows_launch_outcomes(sim: Any) -> None:
    world = World(sim.api_client())
    world.setup()
    controller, cache = _controller(world.api)
    try:
        await _pass(controller)
        assert world.registration() == ("Unknown", "AwaitingReconciliation")
        for name in ("f1", "f2"):  # two claims that never registered, deleted past their timeout
            world.launched(name)
            await asyncio.sleep(0.3)
            world.delete(name)
        await _pass(controller)
        assert world.registration() == ("False", "RegistrationFailed")
        for name in ("s1", "s2", "s3"):
            world.launched(name)
            await asyncio.sleep(0.3)
            world.register(name)
            await _pass(controller)
            if name != "s3":  # [F, F, T] and [F, F, T, T]: half the last four still failed
                assert world.registration()[0] == "False"
        assert world.registration() == ("True", "NodeRegistrationHealthy")
        world.custom.patch_cluster_custom_object("karpenter.sh", "v1", "nodepools", "default", {"spec": {"weight": 5}})
        await _pass(controller)  # a changed pool starts over: Karpenter resets the buffer on a new generation
        assert world.registration() == ("Unknown", "AwaitingReconciliation")
    finally:
        cache.stop()


async def test_a_restarted_controller_keeps_the_verdict_and_a_resync_writes_nothing(sim: Any) -> None:
    world = World(sim.api_client())
    world.setup()
    first, cache = _controller(world.api)
    try:
        await _pass(first)
        for name in ("f1", "f2"):
            world.launched(name)
            await asyncio.sleep(0.3)
            world.delete(name)
        await _pass(first)
        assert world.registration()[0] == "False"
    finally:
        cache.stop()
    second, cache = _controller(world.api)  # a new process: its buffer is hydrated from the condition
    try:
        assert await _pass(second) == 0  # nothing changed: no write at all
        world.launched("s1")
        await asyncio.sleep(0.3)
        world.register("s1")
        await _pass(second)
        assert world.registration()[0] == "False"  # [F, F, T]: one success does not undo two failures
        status = world.pool()["status"]
        node_class = world.custom.get_cluster_custom_object("karpenter.k8s.aws", "v1", "ec2nodeclasses", "default")
        assert status["nodes"] == 0
        assert status["nodeClassObservedGeneration"] == node_class["metadata"]["generation"]
    finally:
        cache.stop()
