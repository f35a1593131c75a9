"""Simulated clusters for termination tests and benchmarks: a NodePool, NodeClaims + Nodes pointing at EC2
instances, controllers (ReplicaSets, DaemonSets) with their pods already bound, and PDBs, as plain dicts
for `Simulator.load_objects`. Nodes and NodeClaims carry the finalizer the deletion watcher would add."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from api import labels

POOL = "default"


@dataclass
class PodSpec:
    """`count` pods of ReplicaSet `name` on `node` (recreated elsewhere when evicted)."""

    name: str
    node: str
    count: int = 1
    grace: int = 30
    daemonset: bool = False
    controller: bool = True  # False: bare pods (not recreated after eviction; cheap for benchmarks)
    critical: bool = False
    annotations: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, Any]] = field(default_factory=list)


def _node_class_ref() -> dict[str, str]:
    """A fresh reference to the default EC2NodeClass (each object gets its own dict)."""
    return {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}


def _claim_and_node(name: str, iid: str, pool: str, node_grace: str | None,
                    registered: bool = False) -> list[dict[str, Any]]:
    """NodeClaim `{name}-claim` and Node `name` on EC2 instance `iid`, both holding the termination finalizer
    so that deleting them starts a termination rather than removing them at once. `registered`: as a running
    cluster's are, launched, registered and initialized (else the worker's NodeClaim lifecycle registers each
    claim when its Node's deletion first wakes it: a PATCH or three and an Event a node that no real burst has)."""
    provider = f"aws:///us-east-1a/{iid}"
    node_labels = {labels.NODEPOOL_LABEL: pool, labels.INSTANCE_TYPE_LABEL: "m5.large",
                   labels.CAPACITY_TYPE_LABEL: "on-demand", labels.ZONE_LABEL: "us-east-1a",
                   labels.INITIALIZED_LABEL: "true", labels.HOSTNAME_LABEL: name}
    claim_spec: dict[str, Any] = {"nodeClassRef": _node_class_ref(), "requirements": []}
    if node_grace:
        claim_spec["terminationGracePeriod"] = node_grace
    claim = {
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": f"{name}-claim", "uid": str(uuid.uuid4()), "labels": dict(node_labels),
                     "finalizers": [labels.TERMINATION_FINALIZER]},
        "spec": claim_spec,
        "status": {"nodeName": name, "providerID": provider},
    }
    if registered:
        node_labels[labels.REGISTERED_LABEL] = "true"
        claim["metadata"]["labels"][labels.REGISTERED_LABEL] = "true"
        claim["status"]["conditions"] = [{"type": kind, "status": "True", "reason": kind, "message": "",
                                          "lastTransitionTime": "2026-01-01T00:00:00Z"}
                                         for kind in ("Launched", "Registered", "Initialized", "Ready")]
    node = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": str(uuid.uuid4()), "labels": node_labels,
                     "finalizers": [labels.TERMINATION_FINALIZER]},
        "spec": {"providerID": provider},
        "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "29"},
                   "capacity": {"cpu": "2", "memory": "8Gi", "pods": "29"}},
    }
    return [claim, node]


def _pod_template_spec(spec: PodSpec) -> dict[str, Any]:
    """The pod spec shared by the controller's template and its pods (a DaemonSet's pinned to its node)."""
    template_spec: dict[str, Any] = {"terminationGracePeriodSeconds": spec.grace,
                                     "containers": [{"name": "main", "image": "pause",
                                                     "resources": {"requests": {"cpu": "100m"}}}],
                                     "tolerations": spec.tolerations}
    if spec.critical:
        template_spec["priorityClassName"] = "system-node-critical"
    if spec.daemonset:
        template_spec["nodeSelector"] = {labels.HOSTNAME_LABEL: spec.node}
    return template_spec


def _workload(spec: PodSpec) -> list[dict[str, Any]]:
    """The controller of `spec` (unless bare pods were asked for) and its pods already bound to `spec.node`:
    one pod for a DaemonSet, `count` for a ReplicaSet."""
    owner_uid = str(uuid.uuid4())
    kind = "DaemonSet" if spec.daemonset else "ReplicaSet"
    template_spec = _pod_template_spec(spec)
    objs: list[dict[str, Any]] = []
    if spec.controller:
        owner: dict[str, Any] = {
            "apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": spec.name, "namespace": "default", "uid": owner_uid},
            "spec": {"selector": {"matchLabels": {"app": spec.name}},
                     "template": {"metadata": {"labels": {"app": spec.name}, "annotations": spec.annotations},
                                  "spec": template_spec}},
        }
        if not spec.daemonset:
            owner["spec"]["replicas"] = spec.count
        objs.append(owner)
    for i in range(1 if spec.daemonset else spec.count):
        pod_meta: dict[str, Any] = {"name": f"{spec.name}-{i}", "namespace": "default", "uid": str(uuid.uuid4()),
                                    "labels": {"app": spec.name}, "annotations": dict(spec.annotations)}
        if spec.controller:
            pod_meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": kind, "name": spec.name,
                                            "uid": owner_uid, "controller": True}]
        objs.append({"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta,
                     "spec": {**template_spec, "nodeName": spec.node}})
    return objs


def cluster_objects(nodes: dict[str, str], pods: list[PodSpec], pdbs: dict[str, int] | None = None,
                    pool: str = POOL, node_grace: str | None = None,
                    registered: bool = False) -> list[dict[str, Any]]:
    """NodePool, one NodeClaim + Node per {node name: instance id}, controllers with their pods, PDBs
    (app -> minAvailable). Everything carries the finalizers the watcher would add."""
    objs: list[dict[str, Any]] = [{
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool",
        "metadata": {"name": pool, "uid": str(uuid.uuid4())},
        "spec": {"template": {"spec": {"nodeClassRef": _node_class_ref(), "requirements": []}}},
    }]
    for name, iid in nodes.items():
        objs += _claim_and_node(name, iid, pool, node_grace, registered)
    for spec in pods:
        objs += _workload(spec)
    for app, min_available in (pdbs or {}).items():
        objs.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                     "metadata": {"name": app, "namespace": "default"},
                     "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": app}}}})
    return objs
