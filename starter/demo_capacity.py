"""The demo's capacity moments, watched through the Kubernetes API for the live view and the report:

- a scale-up: `SCALE_UP_AFTER` seconds in, the `crawler` Deployment (its pods run only on spot capacity, where no
  node has room for another) is scaled up by `SCALE_UP_BY` through its scale subresource, as `kubectl scale` does;
  the worker's pending-pod intake batches the new pods and a ProvisioningWorkflow launches spot NodeClaims for them;
- an expiration re-homed on new capacity: the `batch` pool's nodes are three days old (expireAfter 24h), so the first
  planner pass expires all of them; their `reports` pods run only in that pool, which has no spare room, so they
  wait pending until the provisioner's new batch nodes are Ready.

Both are judged by where the pods run: a node that did not exist when the moment began is new capacity.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from api import labels as L

SCALE_UP_AFTER = 20.0  # seconds into the demo: after the first pass's expirations, before the spot interruption
SCALE_UP_APP = "crawler"
SCALE_UP_BY = 4
REHOMED_APP, REHOMED_POOL = "reports", "batch"
NAMESPACE = "default"


def _pods(core: Any, app: str) -> list[dict[str, Any]]:
    resp = core.list_namespaced_pod(NAMESPACE, label_selector=f"app={app}", _preload_content=False)
    items = json.loads(resp.data).get("items") or []
    return [p for p in items if not (p.get("metadata") or {}).get("deletionTimestamp")]


def _node_names(core: Any) -> set[str]:
    resp = core.list_node(_preload_content=False)
    return {(n.get("metadata") or {}).get("name", "") for n in json.loads(resp.data).get("items") or []}


def running_on(pods: list[dict[str, Any]]) -> dict[str, str]:
    """Pod name -> node, for the pods Running on a node."""
    return {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods
            if (p.get("status") or {}).get("phase") == "Running" and (p.get("spec") or {}).get("nodeName")}


def _replica_set(pods: list[dict[str, Any]]) -> str:
    """The ReplicaSet the app's pods belong to (its Deployment's current one)."""
    owners = {ref["name"] for p in pods for ref in p["metadata"].get("ownerReferences") or []
              if ref.get("kind") == "ReplicaSet"}
    return min(owners, default="")


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


@dataclass
class ScaleUp:
    """One Deployment scaled up; done when every pod it added runs (the nodes they run on that are new are frozen
    then, so a later interruption moving them does not change the count)."""

    app: str
    replicas: tuple[int, int]
    at_seconds: float
    pods_before: set[str]
    nodes_before: set[str]
    started: float = field(default_factory=time.monotonic)
    running_after: float | None = None
    added_running: int = 0
    new_nodes: set[str] = field(default_factory=set)
    replica_set: str = ""  # the Deployment's ReplicaSet that makes the pods

    @property
    def added(self) -> int:
        return self.replicas[1] - self.replicas[0]

    def observe(self, core: Any) -> list[str]:
        """Update from the cluster; returns the milestone reached now (the headless demo prints it)."""
        if self.running_after is not None:
            return []
        on = {pod: node for pod, node in running_on(_pods(core, self.app)).items() if pod not in self.pods_before}
        self.added_running = min(len(on), self.added)  # more: a pod replaced meanwhile (an interruption) runs too
        if self.added_running < self.added:
            return []
        self.running_after = time.monotonic() - self.started
        self.new_nodes = {node for node in on.values() if node not in self.nodes_before}
        return [f"scale-up: all {self.added} new {self.app} pods Running {self.running_after:.1f}s after it, "
                f"on {len(self.new_nodes)} new node(s)"]

    def note(self) -> str:
        done = (f"all Running +{self.running_after:.0f}s on {len(self.new_nodes)} new node(s)"
                if self.running_after is not None else f"{self.added_running}/{self.added} new pods Running")
        before, after = self.replicas
        return f"scaled Deployment {self.app} {before} -> {after} at {self.at_seconds:.0f}s: {done}"

    def report(self) -> dict[str, Any]:
        return {"deployment": f"{NAMESPACE}/{self.app}", "replicaSet": f"{NAMESPACE}/{self.replica_set}",
                "replicasBefore": self.replicas[0],
                "replicasAfter": self.replicas[1], "atSeconds": round(self.at_seconds, 1),
                "podsAddedRunning": self.added_running, "allRunningAfterSeconds": _round(self.running_after),
                "newNodes": len(self.new_nodes)}


def scale_up(core: Any, at_seconds: float, app: str = SCALE_UP_APP, by: int = SCALE_UP_BY) -> ScaleUp | None:
    """Scale the Deployment up through its scale subresource, as `kubectl scale` does (None: no such Deployment)."""
    from kubernetes import client as k8s

    apps = k8s.AppsV1Api(core.api_client)
    try:
        before = int(apps.read_namespaced_deployment_scale(app, NAMESPACE).spec.replicas or 0)
    except k8s.ApiException:
        return None
    pods = _pods(core, app)
    moment = ScaleUp(app=app, replicas=(before, before + by), at_seconds=at_seconds,
                     pods_before={p["metadata"]["name"] for p in pods}, nodes_before=_node_names(core),
                     replica_set=_replica_set(pods))
    apps.patch_namespaced_deployment_scale(app, NAMESPACE, {"spec": {"replicas": before + by}})
    return moment


@dataclass
class Rehoming:
    """The expiring pool's pods: done when its original nodes are gone and every pod of the app runs on a node
    launched since the demo began."""

    original_nodes: set[str]  # the pool's nodes at the start (all past expireAfter)
    initial_nodes: set[str]  # every node at the start
    replicas: int
    started: float = field(default_factory=time.monotonic)
    rehomed_after: float | None = None
    expired_gone: int = 0
    pods_on_new_nodes: int = 0
    new_nodes: set[str] = field(default_factory=set)
    replica_set: str = ""

    def observe(self, core: Any) -> list[str]:
        names = _node_names(core)
        self.expired_gone = len(self.original_nodes - names)
        on_new = [node for node in running_on(_pods(core, REHOMED_APP)).values() if node not in self.initial_nodes]
        self.new_nodes, self.pods_on_new_nodes = set(on_new), len(on_new)
        if self.rehomed_after is not None or self.expired_gone < len(self.original_nodes) \
                or self.pods_on_new_nodes < self.replicas:
            return []
        self.rehomed_after = time.monotonic() - self.started
        return [f"expiration: all {self.replicas} {REHOMED_APP} pods of the {len(self.original_nodes)} expired "
                f"{REHOMED_POOL} nodes Running on {len(self.new_nodes)} new node(s) {self.rehomed_after:.1f}s in"]

    def note(self) -> str:
        done = f"done +{self.rehomed_after:.0f}s" if self.rehomed_after is not None else "under way"
        return (f"expiration of {REHOMED_POOL}: {self.expired_gone}/{len(self.original_nodes)} expired nodes gone, "
                f"{self.pods_on_new_nodes}/{self.replicas} {REHOMED_APP} pods on new nodes ({done})")

    def report(self) -> dict[str, Any]:
        return {"nodePool": REHOMED_POOL, "deployment": f"{NAMESPACE}/{REHOMED_APP}",
                "replicaSet": f"{NAMESPACE}/{self.replica_set}",
                "expiredNodesGone": self.expired_gone, "expiredNodes": len(self.original_nodes),
                "pods": self.replicas, "podsOnNewNodes": self.pods_on_new_nodes, "newNodes": len(self.new_nodes),
                "rehomedAfterSeconds": _round(self.rehomed_after)}


def watch_rehoming(core: Any, nodes: list[dict[str, Any]]) -> Rehoming | None:
    """The bundled scenario's expiring pool, or None when the scenario (the user's own) has no such pool."""
    from kubernetes import client as k8s

    pool = {n["metadata"]["name"] for n in nodes
            if ((n.get("metadata") or {}).get("labels") or {}).get(L.NODEPOOL_LABEL) == REHOMED_POOL}
    if not pool:
        return None
    try:
        dep = k8s.AppsV1Api(core.api_client).read_namespaced_deployment(REHOMED_APP, NAMESPACE)
    except k8s.ApiException:
        return None
    return Rehoming(original_nodes=pool, initial_nodes={n["metadata"]["name"] for n in nodes},
                    replicas=int(dep.spec.replicas or 0), replica_set=_replica_set(_pods(core, REHOMED_APP)))
