"""A kube-scheduler for the simulator: binds pending pods to the least allocated Ready node that passes the
filters (cordon, taints, nodeSelector, required node affinity, cpu / memory / pod-count requests, hard topology
spread and required pod anti-affinity: simulator/topology.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from simulator.patch import deep_copy
from simulator.pods import (
    is_deleting,
    meta,
    node_allocatable,
    node_ready,
    pod_requests,
    pod_terminal,
)
from simulator.resources import BY_KIND, ResourceType
from simulator.scheduling import schedulable_on
from simulator.topology import TopologyRound, has_constraints

if TYPE_CHECKING:
    from simulator.world import World

PODS = BY_KIND["Pod"]
NODES = BY_KIND["Node"]
DEFAULT_SCHEDULER = "default-scheduler"


class Scheduler:
    """Tracks pending pods and per-node requested resources incrementally from store changes."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.pending: set[tuple[str, str]] = set()
        self.dirty = False
        self.usage: dict[str, list[float]] = {}  # node -> [cpu, memory, pods]
        self._requests: dict[str, tuple[float, float]] = {}
        self._nodes: list[tuple[str, tuple[float, float, int]]] | None = None  # Ready, not deleting: name, allocatable
        self._start = 0  # kube-scheduler resumes its node scan where the last one stopped

    def _requests_of(self, pod: dict[str, Any]) -> tuple[float, float]:
        uid = meta(pod).get("uid") or ""
        req = self._requests.get(uid)
        if req is None:
            req = self._requests[uid] = pod_requests(pod)
        return req

    def _account(self, pod: dict[str, Any] | None, sign: int) -> None:
        if pod is None or pod_terminal(pod):
            return
        node = (pod.get("spec") or {}).get("nodeName")
        if not node:
            return
        cpu, mem = self._requests_of(pod)
        used = self.usage.setdefault(node, [0.0, 0.0, 0.0])
        used[0] += sign * cpu
        used[1] += sign * mem
        used[2] += sign

    def on_change(self, rt: ResourceType, kind: str, old: dict | None, new: dict | None) -> None:
        if rt is PODS:
            self._account(old, -1)
            self._account(new, +1)
            pod = new or old or {}
            key = (meta(pod).get("namespace") or "", meta(pod).get("name") or "")
            spec = (new or {}).get("spec") or {}
            if new is not None and not spec.get("nodeName") and not is_deleting(new) and not pod_terminal(new) \
                    and spec.get("schedulerName", DEFAULT_SCHEDULER) == DEFAULT_SCHEDULER:
                if key not in self.pending:
                    self.pending.add(key)
                    self.dirty = True
            else:
                self.pending.discard(key)
            if new is None:
                self._requests.pop(meta(old or {}).get("uid") or "", None)
                self.dirty = True
            elif old is not None and pod_terminal(new) and not pod_terminal(old):
                self.dirty = True
        elif rt is NODES:
            self.dirty = True
            if new is None or old is None or node_ready(old) != node_ready(new) or is_deleting(old) != is_deleting(
                    new) or (old.get("status") or {}).get("allocatable") != (new.get("status") or {}).get(
                    "allocatable"):
                self._nodes = None
            if new is None:
                self.usage.pop(meta(old or {}).get("name") or "", None)

    def schedule(self) -> None:
        if not self.pending or not self.dirty:
            return
        self.dirty = False
        store = self.world.store
        if self._nodes is None:
            self._nodes = [(meta(n)["name"], node_allocatable(n)) for n in store.list(NODES)
                           if node_ready(n) and not is_deleting(n)]
        nodes = self._nodes
        pods = [p for p in (store.get(PODS, *k) for k in list(self.pending)) if p is not None]
        pods.sort(key=lambda p: (-int((p.get("spec") or {}).get("priority") or 0),
                                 meta(p).get("creationTimestamp") or ""))
        spread: TopologyRound | None = None
        for pod in pods:
            spec = pod.get("spec") or {}
            cpu, mem = self._requests_of(pod)
            best, best_score = None, None
            eligible: list[dict[str, Any]] | None = None
            if has_constraints(spec):
                spread = spread or TopologyRound(store.list(PODS), {n: store.get(NODES, "", n) for n, _ in nodes})
                eligible = [n for n in (store.get(NODES, "", name) for name, _ in nodes)
                            if n is not None and schedulable_on(spec, n)]
            feasible = 0
            wanted = feasible_nodes_to_find(len(nodes))
            self._start = self._start % len(nodes) if nodes else 0
            for i in range(len(nodes)):
                name, (a_cpu, a_mem, a_pods) = nodes[(self._start + i) % len(nodes)]
                used = self.usage.get(name, [0.0, 0.0, 0.0])
                if used[2] + 1 > a_pods or used[0] + cpu > a_cpu + 1e-9 or used[1] + mem > a_mem:
                    continue
                node = store.get(NODES, "", name)
                if node is None or not schedulable_on(spec, node):
                    continue
                if eligible is not None and spread is not None and not spread.allows(pod, node, eligible):
                    continue
                score = max((used[0] + cpu) / a_cpu if a_cpu else 1.0, (used[1] + mem) / a_mem if a_mem else 1.0)
                if best_score is None or score < best_score:
                    best, best_score = name, score
                feasible += 1
                if feasible >= wanted:
                    self._start += i + 1
                    break
            new = deep_copy(pod)
            if best is not None:
                new["spec"]["nodeName"] = best
                _set_scheduled(new, "True", "", "")
                store.replace(PODS, new)
                if spread is not None:
                    spread.bind(new, store.get(NODES, "", best) or {})
            elif _set_scheduled(new, "False", "Unschedulable",
                                f"0/{len(store.objects['nodes'])} nodes are available: no node fits the pod."):
                store.replace(PODS, new)


def feasible_nodes_to_find(total: int) -> int:
    """kube-scheduler's percentageOfNodesToScore default: stop after this many feasible nodes."""
    if total <= 100:
        return total
    percent = max(50 - total // 125, 5)
    return max(total * percent // 100, 100)


def _set_scheduled(pod: dict[str, Any], status: str, reason: str, message: str) -> bool:
    from simulator.world import set_condition

    return set_condition(pod, "PodScheduled", status, reason, message)
