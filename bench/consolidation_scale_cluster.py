"""The cluster of bench/consolidation_scale.py: N nodes in steady state, the 30% scale-in, and the packing lower bound.

One NodePool shaped like Karpenter's suite pool (bench/karpenter_world.py: WhenEmptyOrUnderutilized, consolidateAfter
30s) but with Karpenter's default budget (10% of the nodes) and one instance type, m5.xlarge. With one type the
planner can only delete nodes (no replacement is cheaper), and the fewest nodes that can hold the pods is a count,
so "within 10% of the packing lower bound" is a statement about nodes; with several types the planner minimizes
cost, not count (bench/consolidation.py measures that against CP-SAT).

Every node is filled to about FILL of its CPU with pods of Deployments (one PDB each, maxUnavailable 25%) plus the
node-agent DaemonSet pod, built the demo's way (devstack/demo_scenario.py `ClusterBuilder`: Deployment, ReplicaSet
and bound pods, so the simulator adopts them and, with an EC2 endpoint, gives every Node a moto instance the worker
can terminate). The same seed gives the same cluster.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from api import labels as L
from api.quantity import parse_cpu, parse_memory
from bench.karpenter_world import POOL, SUITE_LABEL, node_pool
from bench.packing_problem import is_daemonset_pod, is_reschedulable, pod_requests
from devstack.demo_aws import node_class_object
from devstack.demo_scenario import ClusterBuilder
from simulator.replicaset_order import scale_down_order

INSTANCE_TYPE = "m5.xlarge"
FILL = 0.85  # of a node's CPU the steady state requests
SCALE_IN = 0.30  # of every Deployment's replicas
NEAR = 0.10  # "within 10% of the bound"
SIZES = (("100m", "256Mi"), ("250m", "512Mi"), ("250m", "1Gi"), ("500m", "1Gi"))
PODS_PER_DEPLOYMENT = 50  # about: deployments = pods / this


def scale_pool() -> dict[str, Any]:
    """The suite's pool, pinned to INSTANCE_TYPE, with Karpenter's default budget."""
    pool = node_pool()
    spec = pool["spec"]["template"]["spec"]
    spec["requirements"] = [r for r in spec["requirements"] if r["key"] != "karpenter.k8s.aws/instance-cpu"]
    spec["requirements"].append({"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": [INSTANCE_TYPE]})
    pool["spec"]["disruption"]["budgets"] = [{"nodes": "10%"}]
    return pool


def _placements(names: list[str], cpu_each: float, seed: int) -> dict[int, list[str]]:
    """Size index -> the nodes its pods go on (a node repeated once per pod), each node filled to FILL of its CPU
    (less the node agent's 50m) by random sizes."""
    rng = random.Random(seed)
    out: dict[int, list[str]] = defaultdict(list)
    for name in names:
        left = cpu_each * FILL - 0.05
        while True:
            size = rng.randrange(len(SIZES))
            cpu = parse_cpu(SIZES[size][0])
            if cpu > left:
                break
            out[size].append(name)
            left -= cpu
    return out


def steady_state(nodes: int, seed: int = 1, now: datetime | None = None) -> list[dict[str, Any]]:
    """The objects of the steady-state cluster: the EC2NodeClass, the pool, the nodes and the workloads."""
    b = ClusterBuilder(now or datetime.now(UTC))
    b.objects += [node_class_object("default"), scale_pool()]
    names = [b.node(POOL, INSTANCE_TYPE) for _ in range(nodes)]
    b.daemonset()
    cpu_each = b.catalog.get(INSTANCE_TYPE).cpu_cores  # type: ignore[union-attr]
    rng = random.Random(seed + 1)
    for size, spots in sorted(_placements(names, cpu_each, seed).items()):
        rng.shuffle(spots)
        cpu, memory = SIZES[size]
        count = max(1, round(len(spots) / PODS_PER_DEPLOYMENT))
        for d in range(count):
            b.app(f"app-{size}-{d}", spots[d::count], cpu, memory, pdb="25%", labels={SUITE_LABEL: "scale"})
    return b.objects


def deployments(objects: list[dict[str, Any]]) -> dict[str, int]:
    """Deployment name -> replicas."""
    return {o["metadata"]["name"]: o["spec"]["replicas"] for o in objects if o["kind"] == "Deployment"}


def scaled_in(replicas: dict[str, int], share: float = SCALE_IN) -> dict[str, int]:
    """Every Deployment's replicas less `share` of them (rounded to the nearest pod, at least one kept)."""
    return {name: max(1, r - round(r * share)) for name, r in replicas.items()}


def scale_in_snapshot(objects: list[dict[str, Any]], share: float = SCALE_IN) -> list[dict[str, Any]]:
    """The snapshot right after the scale-in, for the decision-only passes: each ReplicaSet's pods less the ones
    kube-controller-manager would delete first (simulator/replicaset_order.py), every pod Running and Ready."""
    keep = scaled_in(deployments(objects), share)
    by_rs: dict[str, list[dict[str, Any]]] = defaultdict(list)
    out: list[dict[str, Any]] = []
    for o in objects:
        if o["kind"] == "Pod":
            o = {**o, "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
            owner = (o["metadata"].get("ownerReferences") or [{}])[0]
            if owner.get("kind") == "ReplicaSet":
                by_rs[owner["name"]].append(o)
                continue
        out.append(o)
    for rs, pods in by_rs.items():
        deployment = rs.rsplit("-", 1)[0]
        out += scale_down_order(pods)[len(pods) - keep[deployment]:]
    return out


@dataclass(frozen=True)
class Bound:
    """The fewest nodes of the pool's type that can hold the pods, from their requests: per resource, the pods'
    sum over what a node has left after its DaemonSet pods, rounded up; the largest of the three."""

    nodes: int
    by_resource: dict[str, int]

    @property
    def near(self) -> int:
        """The node count that is within NEAR of the bound."""
        return math.floor(self.nodes * (1 + NEAR))


def lower_bound(pods: list[dict[str, Any]], node: dict[str, Any]) -> Bound:
    """The bound for `pods` (the reschedulable ones count; DaemonSet pods are per-node overhead) on nodes like
    `node` (its status.allocatable)."""
    alloc = node["status"]["allocatable"]
    daemon = [pod_requests(p) for p in pods if is_daemonset_pod(p) and p["spec"].get("nodeName") == node[
        "metadata"]["name"]]
    apps = [pod_requests(p) for p in pods if is_reschedulable(p) and not is_daemonset_pod(p)]
    room = {"cpu": math.floor(parse_cpu(alloc["cpu"]) * 1000) - sum(c for c, _ in daemon),
            "memory": parse_memory(alloc["memory"]) // 1024 - sum(m for _, m in daemon),
            "pods": int(alloc["pods"]) - len(daemon)}
    need = {"cpu": sum(c for c, _ in apps), "memory": sum(m for _, m in apps), "pods": len(apps)}
    by = {k: math.ceil(need[k] / room[k]) for k in room}
    return Bound(nodes=max(by.values()), by_resource=by)

