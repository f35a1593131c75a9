"""Small builders of Kubernetes objects (plain dicts) for simulator-backed tests, and a polling helper."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def wait_for(fn: Callable[[], T], timeout: float = 5.0, interval: float = 0.02, what: str = "condition") -> T:
    """Poll `fn` until it returns something truthy; fail the test with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def node(name: str, cpu: str = "4", memory: str = "16Gi", pods: int = 110, labels: dict[str, str] | None = None,
         taints: list[dict[str, Any]] | None = None, ready: bool = True, finalizers: list[str] | None = None,
         **meta: Any) -> dict[str, Any]:
    res = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    obj: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}, **meta},
        "spec": {},
        "status": {"capacity": dict(res), "allocatable": dict(res),
                   "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }
    if taints:
        obj["spec"]["taints"] = taints
    if finalizers:
        obj["metadata"]["finalizers"] = finalizers
    return obj


def pod_spec(cpu: str = "100m", memory: str = "128Mi", grace: int = 30, **extra: Any) -> dict[str, Any]:
    return {"containers": [{"name": "app", "image": "app:1",
                            "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
            "terminationGracePeriodSeconds": grace, **extra}


def pod(name: str, node_name: str | None = None, namespace: str = "default", labels: dict[str, str] | None = None,
        owner: dict[str, Any] | None = None, **spec_extra: Any) -> dict[str, Any]:
    spec = pod_spec(**spec_extra)
    if node_name:
        spec["nodeName"] = node_name
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
                           "spec": spec}
    if owner:
        obj["metadata"]["ownerReferences"] = [owner]
    return obj


def replicaset(name: str, replicas: int, labels: dict[str, str], namespace: str = "default",
               **spec_extra: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": pod_spec(**spec_extra)}}}


def daemonset(name: str, labels: dict[str, str], namespace: str = "kube-system", **spec_extra: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": pod_spec(**spec_extra)}}}


def pdb(name: str, labels: dict[str, str], namespace: str = "default", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"matchLabels": labels}, **spec}}


def nodepool(name: str) -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
            "spec": {"template": {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                            "name": "default"}, "requirements": []}}}}


def nodeclaim(name: str, pool: str = "default", **labels: str) -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": pool, **labels},
                         "finalizers": ["karpenter.sh/termination"]},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                     "requirements": []}}
