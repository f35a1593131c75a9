"""What the termination's `prepare` may read from the worker's watch cache instead of the API server
(activities/kube.py `CacheReads`): a cluster-scoped object by kind and name, and the pods bound to a node.

The pods by node are an index the Pod informer's events keep (`Informer.listeners`), so a lookup costs the node's
pods, not a scan of the cluster's: a 1,000-node burst asks for each node's pods once. Both answer None until the
cache has synced, and the caller then reads the API server.
"""

from __future__ import annotations

import threading
from typing import Any

from runtime.informer import Informer, Key, Obj, key_of


class PodsByNode:
    """Pods by `spec.nodeName`, from the Pod informer's events; a LIST's notice rebuilds at the next lookup."""

    def __init__(self, informer: Informer) -> None:
        self._inf = informer
        self._lock = threading.Lock()
        self._stale = True
        self._by_node: dict[str, dict[Key, Obj]] = {}
        self._node_of: dict[Key, str] = {}
        informer.listeners.append(self._on_change)

    def _on_change(self, _kind: str, old: Obj | None, new: Obj | None) -> None:
        with self._lock:
            if old is None and new is None:
                self._stale = True
            elif not self._stale:
                self._put(key_of(new or old or {}), new)

    def _put(self, key: Key, pod: Obj | None) -> None:
        if (node := self._node_of.pop(key, "")) and (on := self._by_node.get(node)) is not None:
            on.pop(key, None)
            if not on:
                del self._by_node[node]
        if pod is not None and (node := (pod.get("spec") or {}).get("nodeName") or ""):
            self._node_of[key] = node
            self._by_node.setdefault(node, {})[key] = pod

    def pods(self, node: str) -> list[Obj] | None:
        """The node's pods (shared with the cache: read only); None before the informer has synced."""
        with self._lock:
            if self._stale:
                if not self._inf.synced:
                    return None
                self._stale, self._by_node, self._node_of = False, {}, {}
                for pod in self._inf.objects():
                    self._put(key_of(pod), pod)
            return list((self._by_node.get(node) or {}).values())


class CacheReads:
    """activities/kube.py `CacheReads` over a worker's ClusterView (runtime/cluster_view.py)."""

    def __init__(self, view: Any) -> None:
        self._view = view
        pods = view.cache.informers.get("Pod")
        self._pods = PodsByNode(pods) if pods is not None else None

    def get(self, kind: str, name: str) -> Obj | None:
        informer = self._view.cache.informers.get(kind)
        return informer.get(("", name)) if informer is not None and self._view.synced and name else None

    def node_pods(self, node: str) -> list[Obj] | None:
        return self._pods.pods(node) if self._pods is not None and self._view.synced and node else None
