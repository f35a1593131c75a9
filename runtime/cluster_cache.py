"""The cluster as the planner reads it, kept current by watches instead of re-LISTed every pass.

At 5,000 nodes and 72k pods a LIST of everything takes 6.5-7.7 s; the cache LISTs each kind once and then
follows its WATCH (runtime/informer.py), so a pass reads memory. `objects()` has the shape of
`KubeClient.cluster_objects()` (NodePools, NodeClaims, EC2NodeClasses, Nodes, Pods, PDBs, apiVersion and kind
on each),
trimmed by default to the fields decisions read (runtime/cluster_trim.py).

    cache = ClusterCache(api_client); cache.start(); cache.wait_synced(60); objs = cache.objects(); cache.stop()

The objects are shared with the cache: read them, never modify them.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum

from kubernetes import client as k8s

from api import capacity_buffer, labels
from runtime.cluster_trim import trim
from runtime.informer import CacheSettings, Counters, Informer, KindSpec, Obj, State

# EC2NodeClass: drift reads the class a NodePool names (planning/disruption/drift.py)
NODE_CLASS_GROUP = "karpenter.k8s.aws"
POLICY_GROUP = "nodeflow.dev"  # DisruptionPolicy (api/disruption_policy.py): optional, like EC2NodeClass
KINDS = ("NodePool", "NodeClaim", "EC2NodeClass", "Node", "Pod", "PodDisruptionBudget",
         "DisruptionPolicy", "NodeOverlay",
         # volume topology (docs/semantics.md §3.5): where a pod's bound PV or its StorageClass lets it run
         "PersistentVolume", "PersistentVolumeClaim", "StorageClass",
         # attachment limits (§3.5): what each node's CSI drivers may attach
         "CSINode",
         # CapacityBuffers and the shapes they name (docs/semantics.md §20): PodTemplates, and the workloads of a
         # scalableRef (which default topology spread also reads their selectors from, §3.5)
         "CapacityBuffer", "PodTemplate", "Deployment", "StatefulSet", "ReplicaSet")  # cluster_objects() order


class Reason(StrEnum):
    """Why the cache is not healthy."""

    NOT_SYNCED = "NotSynced"  # some kind has not been listed, or its watch not opened, yet
    RELISTING = "Relisting"  # a watch expired (410): that kind is being listed again
    WATCH_BROKEN = "WatchBroken"  # a LIST or WATCH failed and is being retried with backoff
    STOPPED = "Stopped"


@dataclass(frozen=True)
class Health:
    """Truthy when healthy; else the reason, the first kind concerned and its last error."""

    reason: Reason | None = None
    kind: str = ""
    detail: str = ""

    def __bool__(self) -> bool:
        return self.reason is None


def kind_specs(api_client: k8s.ApiClient, kinds: Iterable[str] = KINDS) -> list[KindSpec]:
    """The list methods (raw JSON, for LIST and WATCH) of the kinds the planner reads."""
    core, custom, policy = k8s.CoreV1Api(api_client), k8s.CustomObjectsApi(api_client), k8s.PolicyV1Api(api_client)
    storage, apps = k8s.StorageV1Api(api_client), k8s.AppsV1Api(api_client)
    karpenter = functools.partial(custom.list_cluster_custom_object, labels.GROUP, "v1")
    table = {
        "NodePool": KindSpec("NodePool", labels.API_VERSION, functools.partial(karpenter, "nodepools")),
        "NodeClaim": KindSpec("NodeClaim", labels.API_VERSION, functools.partial(karpenter, "nodeclaims")),
        "EC2NodeClass": KindSpec("EC2NodeClass", f"{NODE_CLASS_GROUP}/v1", functools.partial(
            custom.list_cluster_custom_object, NODE_CLASS_GROUP, "v1", "ec2nodeclasses"), optional=True),
        "Node": KindSpec("Node", "v1", core.list_node),
        "Pod": KindSpec("Pod", "v1", core.list_pod_for_all_namespaces),
        "PodDisruptionBudget": KindSpec("PodDisruptionBudget", "policy/v1",
                                        policy.list_pod_disruption_budget_for_all_namespaces),
        "DisruptionPolicy": KindSpec("DisruptionPolicy", f"{POLICY_GROUP}/v1alpha1", functools.partial(
            custom.list_cluster_custom_object, POLICY_GROUP, "v1alpha1", "disruptionpolicies"), optional=True),
        # NodeOverlay (api/node_overlay.py): prices every decision reads; optional (Karpenter's CRD may be absent)
        "NodeOverlay": KindSpec("NodeOverlay", f"{labels.GROUP}/v1alpha1", functools.partial(
            custom.list_cluster_custom_object, labels.GROUP, "v1alpha1", "nodeoverlays"), optional=True),
        "PersistentVolume": KindSpec("PersistentVolume", "v1", core.list_persistent_volume, optional=True),
        "PersistentVolumeClaim": KindSpec("PersistentVolumeClaim", "v1",
                                          core.list_persistent_volume_claim_for_all_namespaces, optional=True),
        "StorageClass": KindSpec("StorageClass", "storage.k8s.io/v1", storage.list_storage_class, optional=True),
        "CSINode": KindSpec("CSINode", "storage.k8s.io/v1", storage.list_csi_node, optional=True),
        "CapacityBuffer": KindSpec("CapacityBuffer", capacity_buffer.API_VERSION, functools.partial(
            custom.list_cluster_custom_object, capacity_buffer.GROUP, capacity_buffer.VERSION,
            "capacitybuffers"), optional=True),
        "PodTemplate": KindSpec("PodTemplate", "v1", core.list_pod_template_for_all_namespaces, optional=True),
        "Deployment": KindSpec("Deployment", "apps/v1", apps.list_deployment_for_all_namespaces, optional=True),
        "StatefulSet": KindSpec("StatefulSet", "apps/v1", apps.list_stateful_set_for_all_namespaces, optional=True),
        "ReplicaSet": KindSpec("ReplicaSet", "apps/v1", apps.list_replica_set_for_all_namespaces, optional=True),
    }
    return [table[k] for k in kinds]


class ClusterCache:
    """One informer per kind, started and stopped together.

    The kubernetes client blocks, so every informer is a thread holding one long-lived connection of
    `api_client`'s pool (the default pool keeps cpu_count*5 connections; others are opened as needed).
    """

    def __init__(self, api_client: k8s.ApiClient, settings: CacheSettings | None = None,
                 kinds: Iterable[str] = KINDS, transform: Callable[[str, Obj], Obj] | None = trim) -> None:
        self.settings = settings or CacheSettings()
        self.informers = {s.kind: Informer(s, self.settings, transform) for s in kind_specs(api_client, kinds)}
        self._stopped = False

    def __enter__(self) -> ClusterCache:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        for inf in self.informers.values():
            inf.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop every informer; each has `timeout` seconds to end its thread."""
        self._stopped = True
        for inf in self.informers.values():
            inf.request_stop()  # all at once, so the joins below do not wait in turn
        for inf in self.informers.values():
            inf.join(timeout)

    @property
    def synced(self) -> bool:
        """Every kind has been listed at least once and its watch opened."""
        return all(inf.synced for inf in self.informers.values())

    def wait_synced(self, timeout: float, interval: float = 0.02) -> bool:
        """Block until synced (True) or `timeout` seconds have passed (False)."""
        deadline = time.monotonic() + timeout
        while not self.synced:
            if time.monotonic() >= deadline or self._stopped:
                return self.synced
            time.sleep(interval)
        return True

    def healthy(self, kinds: Iterable[str] | None = None) -> Health:
        """Whether `objects()` (or, given `kinds`, those kinds' objects) can be trusted now: synced, no re-list owed,
        no watch failing. A kind this cache does not hold is not synced."""
        if self._stopped:
            return Health(Reason.STOPPED)
        informers = list(self.informers.values())
        if kinds is not None:
            missing = [kind for kind in kinds if kind not in self.informers]
            if missing:
                return Health(Reason.NOT_SYNCED, missing[0], "not held by this cache")
            informers = [self.informers[kind] for kind in kinds]
        for inf in informers:
            if not inf.synced:
                return Health(Reason.NOT_SYNCED, inf.kind, inf.last_error)
        for inf in informers:
            if inf.state is State.RELISTING:
                return Health(Reason.RELISTING, inf.kind, inf.last_error)
            if inf.state is State.BROKEN:
                return Health(Reason.WATCH_BROKEN, inf.kind, inf.last_error)
        return Health()

    def objects(self) -> list[Obj]:
        """All cached objects in `KubeClient.cluster_objects()` order (each kind read under its own lock)."""
        out: list[Obj] = []
        for kind in KINDS:
            inf = self.informers.get(kind)
            if inf is not None:
                out += inf.objects()
        return out

    def counters(self) -> Counters:
        """LISTs, watch streams and events, re-lists, bookmarks and errors, summed over the kinds."""
        total = Counters()
        for inf in self.informers.values():
            total = total + inf.counters
        return total

    def resource_versions(self) -> dict[str, str]:
        return {kind: inf.resource_version for kind, inf in self.informers.items()}

