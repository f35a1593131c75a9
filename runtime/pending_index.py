"""The pending-pod intake's candidates, kept by the watch cache's events instead of a scan of every pod each tick.

The intake (runtime/pending_pods.py) ticks 4 times a second; scanning all of a cluster's pods for unschedulable
ones and for pods of deleting nodes was at 4,000 pods about 40% of the worker's event loop during a 1,000-node
deletion burst (docs/benchmarks.md). This index listens on the Pod, Node and NodeClaim informers
(`Informer.listeners`) and keeps the unschedulable pods, the movable pods by node and which nodes are going, each
updated for the one object an event names, so a tick costs what is a candidate, not what the cluster holds. A LIST
(the listener's `(kind, None, None)`) marks the kind for a rebuild from the informer's objects at the next read.
"""

from __future__ import annotations

import threading
from typing import Any

from contracts.provisioning import PodRef
from planning.cluster import going_nodes
from planning.lifecycle.initialization import node_ready
from runtime.informer import Informer, Key, Obj, key_of
from runtime.pending_pods import displaced, scheduling_note, unschedulable

KINDS = ("Pod", "Node", "NodeClaim")


def movable(pod: Obj) -> tuple[str, PodRef] | None:
    """The node a bound pod would have to leave, and the pod as a batch member, were its node going
    (runtime/pending_pods.py `displaced`); None when it would not need a new place."""
    node = (pod.get("spec") or {}).get("nodeName") or ""
    ref = displaced(pod, {node}) if node else None
    return (node, ref) if ref is not None else None


class PendingIndex:
    """Unschedulable pods, movable pods by node, and going nodes, from the informers' events (thread-safe)."""

    def __init__(self, informers: dict[str, Informer]) -> None:
        self._inf = informers
        self._lock = threading.Lock()
        self._stale = set(KINDS)  # kinds to rebuild from their informer at the next read
        self._pending: dict[Key, PodRef] = {}
        self._notes: dict[str, str] = {}  # unschedulable pods' scheduling notes by uid (pending_pods.scheduling_note)
        self._by_node: dict[str, dict[Key, PodRef]] = {}
        self._pod_node: dict[Key, str] = {}
        self._nodes: dict[str, Obj] = {}
        self._claims: dict[Key, Obj] = {}
        self._claim_node: dict[str, Key] = {}  # node name -> the claim naming it
        self._going: set[str] = set()
        self._ready_nodes = 0  # Nodes that turned Ready since the index began: new room kube-scheduler fills

    def attach(self) -> None:
        for kind in KINDS:
            inf = self._inf.get(kind)
            if inf is not None and self._on_change not in inf.listeners:
                inf.listeners.append(self._on_change)

    def detach(self) -> None:
        for kind in KINDS:
            inf = self._inf.get(kind)
            if inf is not None and self._on_change in inf.listeners:
                inf.listeners.remove(self._on_change)

    def _on_change(self, kind: str, old: Obj | None, new: Obj | None) -> None:
        with self._lock:
            if (old is None and new is None) or kind in self._stale:
                self._stale.add(kind)
                self._ready_nodes += kind == "Node"  # a relist may hide a Node that turned Ready: count one
            elif kind == "Pod":
                self._pod(key_of(new or old or {}), new)
            elif kind == "Node":
                self._ready_nodes += new is not None and node_ready(new) and (old is None or not node_ready(old))
                self._node(new or old or {}, new)
            elif kind == "NodeClaim":
                self._claim(key_of(new or old or {}), new)

    def _pod(self, key: Key, pod: Obj | None) -> None:
        if (was := self._pending.pop(key, None)) is not None:
            self._notes.pop(was.uid, None)
        if (node := self._pod_node.pop(key, "")) and (on := self._by_node.get(node)) is not None:
            on.pop(key, None)
            if not on:
                del self._by_node[node]
        if pod is None:
            return
        if (ref := unschedulable(pod)) is not None:
            self._pending[key] = ref
            self._notes[ref.uid] = scheduling_note(pod)
        elif (on_node := movable(pod)) is not None:
            self._pod_node[key] = on_node[0]
            self._by_node.setdefault(on_node[0], {})[key] = on_node[1]

    def _node(self, obj: Obj, node: Obj | None) -> None:
        name = (obj.get("metadata") or {}).get("name", "")
        if node is None:
            self._nodes.pop(name, None)
        else:
            self._nodes[name] = node
        self._regoing(name)

    def _claim(self, key: Key, claim: Obj | None) -> None:
        before = self._claims.pop(key, None)
        old_node = ((before or {}).get("status") or {}).get("nodeName") or ""
        if old_node and self._claim_node.get(old_node) == key:
            del self._claim_node[old_node]
        if claim is not None:
            self._claims[key] = claim
            if node := (claim.get("status") or {}).get("nodeName") or "":
                self._claim_node[node] = key
        for name in {old_node, ((claim or {}).get("status") or {}).get("nodeName") or ""} - {""}:
            self._regoing(name)

    def _regoing(self, name: str) -> None:
        node, key = self._nodes.get(name), self._claim_node.get(name)
        claim = self._claims.get(key) if key is not None else None
        if name in going_nodes([node] if node else [], [claim] if claim else []):
            self._going.add(name)
        else:
            self._going.discard(name)

    def _rebuild(self) -> bool:
        """Reload the stale kinds from their informers; False while one is missing or not synced."""
        # `is None`: an Informer is falsy while it holds no objects (its __len__), and a cluster may have no Nodes
        if any((inf := self._inf.get(k)) is None or not inf.synced for k in KINDS if k != "NodeClaim"):
            return False
        stale, self._stale = self._stale, set()
        claims = self._inf.get("NodeClaim")
        if "Pod" in stale:
            self._pending, self._notes, self._by_node, self._pod_node = {}, {}, {}, {}
            for pod in self._inf["Pod"].objects():
                self._pod(key_of(pod), pod)
        if "Node" in stale or "NodeClaim" in stale:
            self._nodes = {(n.get("metadata") or {}).get("name", ""): n for n in self._inf["Node"].objects()}
            self._claims, self._claim_node = {}, {}
            for claim in claims.objects() if claims is not None else ():
                self._claim(key_of(claim), claim)
            self._going = going_nodes(self._nodes.values(), self._claims.values())
        return True

    def candidates(self) -> list[PodRef] | None:
        """The intake's batch candidates: unschedulable pods and the movable pods of going nodes; None until the
        informers have synced."""
        with self._lock:
            if self._stale and not self._rebuild():
                return None
            out = list(self._pending.values())
            for name in self._going:
                if on := self._by_node.get(name):
                    out.extend(on.values())
            return out

    def ready_nodes(self) -> int:
        """How many Nodes turned Ready since the index began (a count that only grows)."""
        with self._lock:
            return self._ready_nodes

    def notes(self) -> dict[str, str]:
        """The unschedulable pods' scheduling notes by uid."""
        with self._lock:
            return dict(self._notes)

    def going(self) -> set[str]:
        with self._lock:
            return set(self._going)


def cache_index(view: Any) -> PendingIndex:
    """The index on a worker's watch cache (runtime/cluster_view.py), listening from now on."""
    index = PendingIndex(view.cache.informers)
    index.attach()
    return index
