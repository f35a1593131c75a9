"""Small builders of Kubernetes objects for planning tests (plain dicts, as a snapshot file holds them)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from api import labels as L
from api.catalog import load_default_catalog
from api.quantity import format_cpu
from api.snapshot import Snapshot

AT = datetime(2026, 11, 22, 20, 0, tzinfo=UTC)
OLD = AT - timedelta(hours=2)


def ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def nodepool(name: str = "default", *, consolidate_after: str = "0s", policy: str = "WhenEmptyOrUnderutilized",
             budgets: list[dict[str, Any]] | None = None, requirements: list[dict[str, Any]] | None = None,
             expire_after: str = "720h", labels: dict[str, str] | None = None,
             annotations: dict[str, str] | None = None, limits: dict[str, str] | None = None,
             taints: list[dict[str, Any]] | None = None, weight: int | None = None) -> dict[str, Any]:
    reqs = requirements if requirements is not None else [
        {"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]}]
    spec: dict[str, Any] = {
        "template": {"metadata": {"labels": labels or {}}, "spec": {
            "requirements": reqs, "expireAfter": expire_after,
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}},
        "disruption": {"consolidationPolicy": policy, "consolidateAfter": consolidate_after,
                       "budgets": budgets if budgets is not None else [{"nodes": "100%"}]},
    }
    if taints:
        spec["template"]["spec"]["taints"] = taints
    if limits:
        spec["limits"] = limits
    if weight is not None:
        spec["weight"] = weight
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
            "metadata": {"name": name, "annotations": annotations or {}}, "spec": spec}


def node_and_claim(name: str, itype: str = "m5.xlarge", *, pool: str = "default", zone: str = "us-east-1a",
                   capacity_type: str = "on-demand", created: datetime = OLD, ready: bool = True,
                   node_annotations: dict[str, str] | None = None, claim_annotations: dict[str, str] | None = None,
                   conditions: list[dict[str, Any]] | None = None, last_pod_event: datetime | None = None,
                   extra_labels: dict[str, str] | None = None, taints: list[dict[str, Any]] | None = None,
                   tgp: str | None = None, pool_obj: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    it = load_default_catalog().get(itype)
    assert it is not None, itype
    labels = {L.NODEPOOL_LABEL: pool, L.INSTANCE_TYPE_LABEL: itype, L.CAPACITY_TYPE_LABEL: capacity_type,
              L.ZONE_LABEL: zone, L.INITIALIZED_LABEL: "true", L.HOSTNAME_LABEL: name, L.ARCH_LABEL: it.arch,
              "karpenter.k8s.aws/instance-family": itype.split(".")[0], **(extra_labels or {})}
    alloc = {"cpu": format_cpu(it.cpu_cores), "memory": it.memory, "pods": str(it.pods)}
    pid = f"aws:///{zone}/i-{name}"
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels,
                         "annotations": node_annotations or {}, "creationTimestamp": ts(created)},
            "spec": {"providerID": pid, "taints": taints or []},
            "status": {"allocatable": alloc, "capacity": alloc,
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}
    annotations = dict(claim_annotations or {})
    if pool_obj is not None and L.TEMPLATE_HASH_ANNOTATION not in annotations:
        from api.nodepool import NodePool

        annotations[L.TEMPLATE_HASH_ANNOTATION] = NodePool.model_validate(pool_obj).template_hash()
    status: dict[str, Any] = {
        "nodeName": name, "providerID": pid,
        "conditions": conditions or [{"type": "Initialized", "status": "True", "lastTransitionTime": ts(created)}]}
    if last_pod_event is not None:
        status["lastPodEventTime"] = ts(last_pod_event)
    spec: dict[str, Any] = {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}
    if tgp:
        spec["terminationGracePeriod"] = tgp
    claim = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
             "metadata": {"name": name, "uid": f"uid-claim-{name}", "labels": dict(labels),
                          "annotations": annotations, "creationTimestamp": ts(created)},
             "spec": spec, "status": status}
    return [node, claim]


def pod(name: str, node: str | None, cpu: str = "500m", memory: str = "512Mi", *, ns: str = "default",
        labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None, owner: str = "ReplicaSet",
        node_selector: dict[str, str] | None = None, tolerations: list[dict[str, Any]] | None = None,
        affinity: dict[str, Any] | None = None, spread: list[dict[str, Any]] | None = None,
        priority: int | None = None, phase: str = "Running", start: datetime | None = OLD) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    if node:
        spec["nodeName"] = node
    for key, value in (("nodeSelector", node_selector), ("tolerations", tolerations), ("affinity", affinity),
                       ("topologySpreadConstraints", spread), ("priority", priority)):
        if value is not None:
            spec[key] = value
    owners = [{"apiVersion": "apps/v1", "kind": owner, "name": f"{owner.lower()}-{name.rsplit('-', 1)[0]}",
               "uid": f"owner-{owner}-{name.rsplit('-', 1)[0]}", "controller": True}] if owner else []
    status: dict[str, Any] = {"phase": phase, "conditions": [{"type": "Ready", "status": "True"}]}
    if start is not None:
        status["startTime"] = ts(start)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}", "labels": labels or {"app": name},
                         "annotations": annotations or {}, "ownerReferences": owners},
            "spec": spec, "status": status}


def pdb(name: str, match: dict[str, str], allowed: int, ns: str = "default",
        max_unavailable: int | str = 1) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": {"matchLabels": match}, "maxUnavailable": max_unavailable},
            "status": {"disruptionsAllowed": allowed}}


def snapshot(*objs: dict[str, Any] | list[dict[str, Any]]) -> Snapshot:
    flat: list[dict[str, Any]] = []
    for o in objs:
        flat.extend(o if isinstance(o, list) else [o])
    return Snapshot.from_objects(flat)
