"""Snapshot objects for consolidation benchmarks and tests: NodePools, NodeClaims, Nodes, Pods as plain dicts.

`random_cluster` builds the kind of cluster consolidation is for: nodes of several instance types, filled
by pods of varied sizes to a random utilization, as if an autoscaler had launched them for a bigger load
that has since shrunk. Deterministic for a seed.
"""

from __future__ import annotations

import random
from typing import Any

from api import labels as L
from api.catalog import InstanceTypeCatalog, load_default_catalog
from api.quantity import format_cpu, format_memory

CREATED = "2026-01-01T00:00:00Z"
POD_SIZES = (  # (cpu cores, memory GiB): small web pods to memory-heavy workers
    (0.1, 0.125), (0.25, 0.5), (0.25, 1.0), (0.5, 1.0), (0.5, 2.0), (1.0, 2.0), (1.0, 4.0), (1.5, 3.0),
    (2.0, 4.0), (2.0, 8.0), (0.75, 6.0), (3.0, 6.0),
)
NODE_TYPES = ("m5.large", "m5.xlarge", "m5.2xlarge", "c5.xlarge", "c5.2xlarge", "r5.large", "r5.xlarge",
              "t3.xlarge", "m5.4xlarge")
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")


def node_pool(name: str = "default", *, requirements: list[dict] | None = None, budgets: list[dict] | None = None,
              annotations: dict[str, str] | None = None, consolidate_after: str = "0s",
              taints: list[dict] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "template": {"spec": {"requirements": requirements if requirements is not None else [
            {"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]}],
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}},
        "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": consolidate_after},
    }
    if taints:
        spec["template"]["spec"]["taints"] = taints
    if budgets is not None:
        spec["disruption"]["budgets"] = budgets
    return {"apiVersion": L.API_VERSION, "kind": "NodePool",
            "metadata": {"name": name, "annotations": dict(annotations or {})}, "spec": spec}


def node_objects(name: str, instance_type: str, *, zone: str = "us-east-1a", capacity_type: str = "on-demand",
                 pool: str = "default", catalog: InstanceTypeCatalog | None = None,
                 annotations: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """A ready, initialized Node and its NodeClaim."""
    it = (catalog or load_default_catalog()).get(instance_type)
    if it is None:
        raise ValueError(f"instance type {instance_type!r} is not in the catalog")
    labels = {L.NODEPOOL_LABEL: pool, L.INSTANCE_TYPE_LABEL: instance_type, L.CAPACITY_TYPE_LABEL: capacity_type,
              L.ZONE_LABEL: zone, L.ARCH_LABEL: it.arch, L.OS_LABEL: "linux", L.HOSTNAME_LABEL: name,
              L.INITIALIZED_LABEL: "true", L.REGISTERED_LABEL: "true"}
    provider = f"aws:///{zone}/i-{abs(hash(name)) % 16**12:012x}"
    alloc = {"cpu": it.cpu, "memory": it.memory, "pods": str(it.pods)}
    claim = {
        "apiVersion": L.API_VERSION, "kind": "NodeClaim",
        "metadata": {"name": f"{name}-claim", "uid": f"uid-claim-{name}", "labels": dict(labels),
                     "creationTimestamp": CREATED, "annotations": dict(annotations or {}),
                     "ownerReferences": [{"apiVersion": L.API_VERSION, "kind": "NodePool", "name": pool,
                                          "uid": f"uid-pool-{pool}"}]},
        "spec": {"requirements": [], "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                      "name": "default"}},
        "status": {"nodeName": name, "providerID": provider, "capacity": alloc, "allocatable": alloc,
                   "conditions": [{"type": "Initialized", "status": "True", "lastTransitionTime": CREATED},
                                  {"type": "Ready", "status": "True", "lastTransitionTime": CREATED}]},
    }
    node = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-node-{name}", "labels": labels, "creationTimestamp": CREATED,
                     "annotations": dict(annotations or {})},
        "spec": {"providerID": provider},
        "status": {"capacity": alloc, "allocatable": alloc,
                   "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": CREATED}]},
    }
    return [claim, node]


def pod(name: str, node: str | None, cpu: float, memory_gib: float, *, namespace: str = "default",
        labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
        owner_kind: str = "ReplicaSet", owner: str | None = None,
        node_selector: dict[str, str] | None = None) -> dict[str, Any]:
    """A running pod with one container's requests, owned by a controller so it is reschedulable."""
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "app", "resources": {"requests": {
        "cpu": format_cpu(cpu), "memory": format_memory(int(memory_gib * 2**30))}}}]}
    if node:
        spec["nodeName"] = node
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-pod-{namespace}-{name}",
                     "labels": dict(labels or {"app": name.rsplit("-", 1)[0]}), "annotations": dict(annotations or {}),
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": owner_kind, "name": owner or f"{name}-owner",
                                          "uid": f"uid-owner-{owner or name}", "controller": True}]},
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending", "startTime": CREATED if node else None,
                   "conditions": [{"type": "Ready", "status": "True"}] if node else []},
    }


def pdb(name: str, match_labels: dict[str, str], disruptions_allowed: int, *, namespace: str = "default"
        ) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"maxUnavailable": max(disruptions_allowed, 0), "selector": {"matchLabels": match_labels}},
            "status": {"disruptionsAllowed": disruptions_allowed, "currentHealthy": 1, "desiredHealthy": 1,
                       "expectedPods": 1}}


def random_cluster(nodes: int, seed: int, *, min_util: float = 0.15, max_util: float = 0.75,
                   pool: dict[str, Any] | None = None, daemonset: tuple[float, float] = (0.1, 0.125),
                   catalog: InstanceTypeCatalog | None = None) -> list[dict[str, Any]]:
    """`nodes` on-demand nodes of several types across zones, each holding varied pods up to a random utilization."""
    rng = random.Random(seed)
    catalog = catalog or load_default_catalog()
    objs: list[dict[str, Any]] = [pool or node_pool()]
    for i in range(nodes):
        name = f"node-{seed}-{i:03d}"
        itype = catalog.get(rng.choice(NODE_TYPES))
        assert itype is not None
        objs += node_objects(name, itype.name, zone=rng.choice(ZONES), catalog=catalog)
        ds_cpu, ds_mem = daemonset
        objs.append(pod(f"agent-{name}", name, ds_cpu, ds_mem, namespace="kube-system", owner_kind="DaemonSet",
                        owner="agent", labels={"app": "agent"}))
        target = rng.uniform(min_util, max_util)
        cpu_left = itype.cpu_cores * target - ds_cpu
        mem_left = itype.memory_bytes / 2**30 * target - ds_mem
        j = misses = 0
        while j < itype.pods - 2 and misses < 20:
            c, m = rng.choice(POD_SIZES)
            if c > cpu_left or m > mem_left:
                misses += 1
                continue
            objs.append(pod(f"app{rng.randrange(12)}-{name}-{j}", name, c, m))
            cpu_left -= c
            mem_left -= m
            j += 1
    return objs
